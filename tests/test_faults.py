"""Fault injection for the foundation: NVML failing in every way, unreadable /proc and /sys, bad output paths,
planted secrets, and no shell anywhere. (docs/reliability.md lists each fault with its test.)"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.probes import nvml as nvml_probe
from gpudoctor.probes.runner import ProbeOptions
from gpudoctor.rules import evaluate

ROOT = Path(__file__).resolve().parents[1]

FAKE_PYNVML = '''
import os
MODE = os.environ["FAKE_NVML_MODE"]
CODES = {"lost": 15, "not_supported": 3, "no_permission": 4, "unknown": 999}
NVML_ERROR_NOT_SUPPORTED = 3
class NVMLError(Exception):
    def __init__(self, value):
        self.value = value
        super().__init__("fake NVML error %s" % value)
def nvmlInit():
    pass
def nvmlShutdown():
    pass
def nvmlSystemGetDriverVersion():
    return "580.159.04"
def nvmlDeviceGetCount():
    return 2
def nvmlDeviceGetHandleByIndex(i):
    return i
def __getattr__(name):
    if name.startswith("NVML_"):
        return 0
    if name.startswith("nvml"):
        def fail(*a, **k):
            if MODE == "raise_python":
                raise RuntimeError("binding bug")
            raise NVMLError(CODES[MODE])
        fail.__name__ = name
        return fail
    raise AttributeError(name)
'''


@pytest.mark.parametrize("mode", ["lost", "not_supported", "no_permission", "unknown", "raise_python"])
def test_every_nvml_call_failing(tmp_path, monkeypatch, mode):
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("FAKE_NVML_MODE", mode)
    facts = nvml_probe.probe_nvml(ProbeOptions(nvml_timeout_s=20))
    assert facts.available and facts.driver_version == "580.159.04" and len(facts.gpus) == 2
    g = facts.gpus[0]
    if mode == "not_supported":
        assert "temperature_c" in g.unsupported and not g.errors
    else:
        assert "temperature_c" in g.errors and g.temperature_c is None


def test_every_nvml_call_failing_still_gives_a_report(tmp_path, monkeypatch, h200_snap):
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("FAKE_NVML_MODE", "lost")
    h200_snap.nvml = nvml_probe.probe_nvml(ProbeOptions(nvml_timeout_s=20))
    rep = evaluate(h200_snap)       # rules skip unknown values; nothing raises
    assert not any((o.reason or "").startswith("rule error") for o in rep.outcomes)


def test_nvml_worker_hang_is_a_timeout(tmp_path, monkeypatch):
    (tmp_path / "pynvml.py").write_text(
        "import time\ndef nvmlInit():\n    time.sleep(60)\nclass NVMLError(Exception): pass\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    from gpudoctor.probes.runner import ProbeFailed

    with pytest.raises(ProbeFailed) as exc:
        nvml_probe.probe_nvml(ProbeOptions(nvml_timeout_s=1.5))
    assert exc.value.kind == "timeout" and "nvmlInit" in str(exc.value)


def test_unreadable_proc_and_sys_give_none_not_errors(tmp_path):
    from gpudoctor.probes.cpu import cgroup_cpu_quota, count_sockets
    from gpudoctor.probes.memory import cgroup_memory_limit

    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").mkdir()            # a directory where a file should be
    (tmp_path / "sys" / "fs" / "cgroup").mkdir(parents=True)
    assert cgroup_cpu_quota(str(tmp_path)) is None
    assert cgroup_memory_limit(str(tmp_path)) is None
    assert count_sockets(str(tmp_path)) is None


def gd(*args, env=None):
    e = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, env=e,
                          timeout=120, cwd=str(ROOT))


def test_save_to_full_or_unwritable_target(tmp_path):
    # /proc is never writable, even for root; a path under a file is ENOTDIR
    for target in ("/proc/gpudoctor-report.json", str(tmp_path / "file") + "/r.json"):
        (tmp_path / "file").write_text("x")
        r = gd("scan", "--save", target)
        assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr


SECRETS = {"HF_TOKEN": "hf_" + "S3CRETs3cret" * 3, "NCCL_IB_HCA_TOKEN": "tok-PLANTED-1",
           "TORCH_API_KEY": "PLANTED-KEY-2", "CUDA_PASSWORD": "PLANTED-PW-3",
           "NCCL_SOCKET_IFNAME": "https://bob:PLANTED-PW-4@proxy.example", "AWS_SECRET_ACCESS_KEY": "PLANTED-5"}


def test_planted_secrets_never_reach_report_json_or_saved_file(tmp_path):
    out = tmp_path / "r.json"
    r1 = gd("scan", "-v", "--save", str(out), env=SECRETS)
    r2 = gd("scan", "--json", env=SECRETS)
    blob = r1.stdout + r1.stderr + r2.stdout + r2.stderr + out.read_text()
    for value in SECRETS.values():
        assert value not in blob
    assert "PLANTED" not in blob and "S3CRET" not in blob
    assert json.loads(r2.stdout)["snapshot"]["env"]["variables"]["TORCH_API_KEY"] == "<redacted>"


def test_no_subprocess_uses_a_shell():
    bad = re.compile(r"shell\s*=\s*True|os\.system\(|os\.popen\(|subprocess\.getoutput|commands\.getoutput")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "gpudoctor").rglob("*.py") if bad.search(p.read_text())]
    assert offenders == []


def test_every_subprocess_call_has_a_timeout():
    """Direct subprocess.run/check_output calls outside subproc.py must pass timeout=."""
    offenders = []
    for p in (ROOT / "gpudoctor").rglob("*.py"):
        text = p.read_text()
        for m in re.finditer(r"subprocess\.(run|check_output|check_call|call)\(", text):
            call = text[m.start(): text.find("\n\n", m.start())]
            if "timeout" not in call[:600]:
                offenders.append(f"{p.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}")
    assert offenders == []


def test_stdout_on_a_full_disk_is_one_line_and_exit_2():
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "gpudoctor", "rules"], stdout=full, stderr=subprocess.PIPE,
                           text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60, cwd=str(ROOT))
    assert r.returncode == 2 and "cannot write the output" in r.stderr and "Traceback" not in r.stderr
