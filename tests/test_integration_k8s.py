"""examples/k8s: the manifests against the Kubernetes API models, node-problem-detector's plugin config and
exit-code protocol with real gpudoctor textfiles, and the Dockerfile's promise not to touch torch."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML (test extra) reads the manifests")

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "examples/k8s"
NPD_SCRIPT = K8S / "gpudoctor-npd.sh"
HEALTHY = ROOT / "tests/fixtures/h200x2/scan.json"
FAILING = ROOT / "tests/fixtures/h200-errors/duplicate-gpu.txt"
MODELS = {"DaemonSet": "V1DaemonSet", "Namespace": "V1Namespace", "ConfigMap": "V1ConfigMap"}


def docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


@pytest.mark.parametrize("name", ["gpudoctor-daemonset.yaml", "node-problem-detector.yaml"])
def test_manifests_match_the_kubernetes_api_models(name):
    """Each object survives a round trip through the official client's models: a misspelt or misplaced
    field is dropped by the model and the comparison fails (required fields are checked on the way in)."""
    client = pytest.importorskip("kubernetes.client", reason="the kubernetes client (test extra) holds the models")
    api = client.ApiClient()
    for doc in docs(name):
        assert doc["apiVersion"] in ("v1", "apps/v1")
        obj = api.deserialize(json.dumps(doc), MODELS[doc["kind"]], "application/json")
        assert api.sanitize_for_serialization(obj) == doc, f"{name}: {doc['kind']} has fields the API does not know"


def test_round_trip_check_can_fail():
    client = pytest.importorskip("kubernetes.client")
    api = client.ApiClient()
    ds = next(d for d in docs("gpudoctor-daemonset.yaml") if d["kind"] == "DaemonSet")
    ds["spec"]["template"]["spec"]["containers"][0]["volumeMount"] = []  # typo of volumeMounts
    obj = api.deserialize(json.dumps(ds), "V1DaemonSet", "application/json")
    assert api.sanitize_for_serialization(obj) != ds


def _daemonsets() -> dict[str, dict]:
    return {d["metadata"]["name"]: d for f in ("gpudoctor-daemonset.yaml", "node-problem-detector.yaml")
            for d in docs(f) if d["kind"] == "DaemonSet"}


@pytest.mark.parametrize("name", ["gpudoctor", "node-problem-detector"])
def test_daemonset_structure(name):
    ds = _daemonsets()[name]
    spec = ds["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    pod = spec["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    for c in pod["containers"]:
        for m in c["volumeMounts"]:
            assert m["name"] in volumes  # every mount has its volume
        assert "limits" in c["resources"] and "requests" in c["resources"]
        for r in c.get("resources", {}).get("requests", {}), c.get("resources", {}).get("limits", {}):
            assert "nvidia.com/gpu" not in r  # a monitor must not take a GPU away from jobs
    assert volumes["textfile"]["hostPath"]["path"] == "/var/lib/node_exporter/textfile_collector"


def test_gpudoctor_daemonset_runs_the_static_scan_into_the_textfile():
    pod = _daemonsets()["gpudoctor"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    script = " ".join(c["command"] + c["args"])
    assert "gpudoctor scan --no-confirm" in script and "--format prometheus" in script
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    out = re.search(r"--output (\S+)", script).group(1)
    assert out.startswith(mounts["textfile"] + "/") and out.endswith(".prom")  # the collector reads *.prom
    assert "timeout" in script and "sleep" in script  # bounded, periodic
    subprocess.run(["sh", "-n", "-c", c["args"][0]], check=True)  # the loop is valid shell
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and pod["runtimeClassName"] == "nvidia"


def test_npd_plugin_config():
    """node-problem-detector's custom plugin monitor fields (pkg/custompluginmonitor/types/config.go)."""
    cfg = json.loads((K8S / "gpudoctor-plugin.json").read_text())
    assert cfg["plugin"] == "custom" and cfg["source"]
    pc = cfg["pluginConfig"]
    assert set(pc) <= {"invoke_interval", "timeout", "max_output_length", "concurrency",
                       "enable_message_change_based_condition_update", "skip_initial_status"}
    dur = re.compile(r"^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$")  # Go time.ParseDuration
    assert dur.match(pc["invoke_interval"]) and dur.match(pc["timeout"])
    conditions = {c["type"] for c in cfg["conditions"]}
    for c in cfg["conditions"]:
        assert set(c) == {"type", "reason", "message"}
    for r in cfg["rules"]:
        assert r["type"] in ("temporary", "permanent") and r["reason"]
        assert r["type"] == "temporary" or r["condition"] in conditions
        assert dur.match(r.get("timeout", "1s"))
        # the script is where the NPD DaemonSet mounts the ConfigMap
        npd = _daemonsets()["node-problem-detector"]["spec"]["template"]["spec"]
        mounts = {m["name"]: m["mountPath"] for m in npd["containers"][0]["volumeMounts"]}
        assert r["path"] == mounts["gpudoctor-plugin"] + "/" + NPD_SCRIPT.name
    args = " ".join(_daemonsets()["node-problem-detector"]["spec"]["template"]["spec"]["containers"][0]["command"])
    assert f"--config.custom-plugin-monitor={mounts['gpudoctor-plugin']}/gpudoctor-plugin.json" in args


def _textfile(tmp_path: Path, source: Path) -> Path:
    out = tmp_path / "gpudoctor.prom"
    subprocess.run([sys.executable, "-m", "gpudoctor", "check", str(source), "--format", "prometheus", "--output",
                    str(out)], env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, timeout=120)
    assert out.exists()
    return out


def npd(textfile: Path, **env: str) -> tuple[int, str]:
    res = subprocess.run(["sh", str(NPD_SCRIPT)], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, GPUDOCTOR_TEXTFILE=str(textfile), **env))
    return res.returncode, res.stdout


def test_npd_protocol_ok_nonok_unknown(tmp_path):
    code, out = npd(_textfile(tmp_path, HEALTHY), GPUDOCTOR_MAX_AGE="999999999")  # a saved report: its own date
    assert (code, out) == (0, "gpudoctor: healthy\n")
    code, out = npd(_textfile(tmp_path, FAILING))
    assert code == 1
    assert re.match(r"gpudoctor: SIG010 Two ranks on the same GPU .*\(\+\d+ more\)\n$", out)
    assert len(out) <= json.loads((K8S / "gpudoctor-plugin.json").read_text())["pluginConfig"]["max_output_length"]
    assert npd(tmp_path / "missing.prom")[0] == 2


def test_npd_unknown_when_the_report_is_stale(tmp_path):
    prom = _textfile(tmp_path, FAILING)
    text = re.sub(r"^gpudoctor_scan_timestamp_seconds .*$", f"gpudoctor_scan_timestamp_seconds {time.time() - 9000}",
                  prom.read_text(), flags=re.M)
    prom.write_text(text)
    code, out = npd(prom)
    assert code == 2 and "old" in out


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_npd_script_shellcheck():
    res = subprocess.run(["shellcheck", str(NPD_SCRIPT)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout


def test_dockerfile_keeps_the_images_torch():
    text = (K8S / "Dockerfile").read_text()
    lines = [x for x in text.splitlines() if not x.lstrip().startswith("#")]
    body = "\n".join(lines)
    assert re.search(r"^ARG BASE=\S+", body, re.M) and re.search(r"^FROM \$\{BASE\}", body, re.M)
    installs = re.findall(r"pip install ([^;\\]*)", body)
    assert installs and all("--constraint" in i or "-c " in i for i in installs)
    assert not any(re.search(r"\btorch\b", i) for i in installs)  # never installs torch itself
    assert "cmp /tmp/torch-before.txt /tmp/torch-after.txt" in body  # and fails the build if it moved
    copied = re.findall(r"^COPY (.+) \S+$", body, re.M)
    for part in " ".join(copied).split():
        assert (ROOT / part).exists(), part  # the build context is the repository root
    cmd = json.loads(re.search(r"^CMD (.*)$", body, re.M).group(1))
    assert cmd[:2] == ["scan", "--no-confirm"]
    assert shlex.split("gpudoctor " + " ".join(cmd))  # sanity
