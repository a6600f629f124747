"""The CLI end to end on this (GPU-less) machine: report, JSON validity, exit codes, start-up imports."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import H200, h200_report_json

from gpudoctor.facts.findings import Report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gd(*args, env=None, timeout=120):
    e = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=ROOT)


@pytest.fixture(scope="module")
def scan_json():
    r = gd("scan", "--json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_scan_json_is_the_only_stdout_and_validates(scan_json):
    doc = json.loads(scan_json)                      # nothing but JSON on stdout
    rep = Report.model_validate(doc)
    assert rep.snapshot.host and rep.snapshot.cpu and rep.snapshot.memory and rep.snapshot.torch
    import jsonschema

    jsonschema.validate(doc, json.loads(gd("schema").stdout))


def test_scan_terminal_report_on_a_host_without_driver():
    r = gd("scan")
    if "DRV001" not in r.stdout:
        pytest.fail("this test expects a machine without an NVIDIA driver (CI, dev box)")
    assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout
    # a host with no NVIDIA device on its PCI bus is told so (CI's VMs); one with a GPU but no driver, the driver
    assert "No usable NVIDIA driver" in r.stdout or "No NVIDIA GPU on this host" in r.stdout
    assert "Summary:" in r.stdout
    assert "\x1b[" not in r.stdout                  # no colour when not a TTY


def test_fail_on_levels_and_save(tmp_path):
    out = tmp_path / "r.json"
    assert gd("scan", "--fail-on", "never", "--save", str(out)).returncode == 0
    assert Report.model_validate_json(out.read_text()).summary.errors >= 1
    r = gd("check", str(out), "--json", "--fail-on", "error")
    assert r.returncode == 1 and json.loads(r.stdout)["findings"]


def test_check_saved_h200_report_is_healthy():
    r = gd("check", str(H200 / "scan.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "NVIDIA H200" in r.stdout and "0 errors" in r.stdout


@pytest.mark.parametrize("setup,needle", [
    (lambda p: p.write_text("not json"), "unknown format"),
    (lambda p: p.write_text("{\"schema_version\": "), "not valid JSON"),
    (lambda p: p.write_bytes(b"\x00\x01\x02"), "binary file"),
    (lambda p: p.write_text(json.dumps({"kind": "gpudoctor-report",
                                        "snapshot": {**h200_report_json()["snapshot"], "schema_version": "9.0"}})),
     "newer than this gpudoctor"),
    (lambda p: p.write_text("[]"), "unknown format"),
])
def test_check_bad_input_is_one_line_and_exit_2(tmp_path, setup, needle):
    p = tmp_path / "in.json"
    setup(p)
    r = gd("check", str(p))
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [["scan", "--data-path", "/nonexistent"], ["scan", "--fail-on", "bogus"],
                                  ["explain", "NOPE1"], ["check", "/nonexistent.json"], ["frobnicate"]])
def test_usage_errors_exit_2(args):
    r = gd(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "error:" in r.stderr


def test_save_to_unwritable_dir_is_exit_2(tmp_path):
    r = gd("scan", "--save", str(tmp_path / "missing-dir" / "r.json"))
    assert r.returncode == 2 and "cannot write" in r.stderr


def test_help_and_schema_import_neither_torch_nor_nvml():
    code = ("import sys; from gpudoctor.cli import app as a; sys.argv=['gpudoctor', '{cmd}']\n"
            "try:\n    a.app()\nexcept SystemExit:\n    pass\n"
            "bad=[m for m in ('torch','pynvml','transformers') if m in sys.modules]\n"
            "sys.stderr.write('LOADED=' + ','.join(bad))")
    for cmd in ("--help", "schema"):
        r = subprocess.run([sys.executable, "-c", code.replace("{cmd}", cmd)], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
        assert "LOADED=" in r.stderr and r.stderr.strip().endswith("LOADED="), r.stderr


def test_explain_and_rules_list():
    r = gd("explain", "gpu002")
    assert r.returncode == 0 and "# GPU002" in r.stdout and "Sources" in r.stdout
    r = gd("rules")
    assert r.returncode == 0 and len(r.stdout.splitlines()) >= 27


def test_explain_renders_markdown_on_a_terminal():
    """On a terminal `explain` renders the Markdown (no raw '# ' heading or '**'); piped it stays Markdown."""
    import pty

    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([sys.executable, "-m", "gpudoctor", "explain", "GPU002"], stdout=slave,
                             stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=ROOT, COLUMNS="100"))
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert p.wait(timeout=60) == 0
    finally:
        os.close(master)
    out = b"".join(chunks).decode("utf-8", "replace")
    assert "GPU002" in out and "Sources" in out
    assert "# GPU002" not in out and "**" not in out


def test_rule_docs_are_generated_from_metadata():
    import gpudoctor.rules  # noqa: F401
    from gpudoctor.reports.ruledocs import families, family_page

    for fam in families():
        path = os.path.join(ROOT, "docs", "rules", f"{fam.lower()}.md")
        assert open(path).read() == family_page(fam), f"regenerate: python -m gpudoctor.reports.ruledocs ({path})"


def test_every_rule_cites_a_source_and_has_docs():
    from gpudoctor.rules import REGISTRY

    for spec in REGISTRY.values():
        assert spec.sources and spec.what and spec.why and spec.fix, spec.id


def test_sigint_during_scan_keeps_partial_report_and_leaves_no_child(tmp_path):
    import signal
    import time

    import psutil

    hang = tmp_path / "slowpython"
    hang.write_text(f"#!{sys.executable}\nimport time; time.sleep(60)\n")
    hang.chmod(0o755)
    out = tmp_path / "partial.json"
    p = subprocess.Popen([sys.executable, "-m", "gpudoctor", "scan", "--python", str(hang), "--save", str(out)],
                         env=dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1"), cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline:   # wait until the (hanging) torch probe child runs
        kids = psutil.Process(p.pid).children(recursive=True) if p.poll() is None else []
        if any("slowpython" in " ".join(k.cmdline()) for k in kids if k.is_running()):
            break
        time.sleep(0.1)
    kid_pids = [k.pid for k in psutil.Process(p.pid).children(recursive=True)]
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=20)
    assert p.returncode == 130 and "Traceback" not in stderr
    rep = Report.model_validate_json(out.read_text())
    assert any(e.kind == "interrupted" and e.probe == "torch" for e in rep.snapshot.probe_errors)
    assert rep.snapshot.host is not None              # the finished probes are kept
    time.sleep(0.5)
    alive = [pid for pid in kid_pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    assert alive == []


def test_python_typo_is_a_usage_error():
    r = gd("scan", "--python", "/nonexistent/python3.99")
    assert r.returncode == 2 and "no such interpreter" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_check_refuses_a_cluster_report(tmp_path):
    p = tmp_path / "cluster.json"
    p.write_text(json.dumps({"kind": "gpudoctor-cluster-report", "schema_version": "1.0", "nodes": []}))
    r = gd("check", str(p))
    assert r.returncode == 2 and "a cluster report" in r.stderr


def test_torch_probe_crash_is_not_reported_as_torch_missing(tmp_path):
    py = tmp_path / "crashpy"
    py.write_text(f"#!{sys.executable}\nimport os; os.kill(os.getpid(), 11)\n")
    py.chmod(0o755)
    r = gd("scan", "--no-confirm", "--json", "--fail-on", "never", "--python", str(py))
    doc = json.loads(r.stdout)
    assert "TRC001" not in {f["rule_id"] for f in doc["findings"]}
    assert {o["rule_id"]: o["status"] for o in doc["outcomes"]}["TRC001"] == "not_assessed"
    assert any(e["probe"] == "torch" and e["kind"] == "crash" for e in doc["snapshot"]["probe_errors"])


def test_folder_skips_files_of_no_known_format_but_named_files_must_parse(tmp_path):
    (tmp_path / "notes.txt").write_text("just some notes\n")
    (tmp_path / "err.txt").write_text(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    r = gd("check", str(tmp_path))
    assert r.returncode == 1 and "skipped 1 file(s)" in r.stderr and "SIG001" in r.stdout
    r = gd("check", str(tmp_path / "notes.txt"), str(tmp_path / "err.txt"))
    assert r.returncode == 2 and "unknown format" in r.stderr and "SIG001" in r.stdout


def test_version():
    r = gd("--version")
    assert r.returncode == 0 and r.stdout.startswith("gpudoctor ")


def test_entry_starts_the_torch_probe_early_only_for_scan(monkeypatch):
    from gpudoctor.cli import entry
    from gpudoctor.probes import subproc, torch_start

    calls = []
    monkeypatch.setattr(torch_start, "start", lambda python, timeout: calls.append((python, timeout)))
    monkeypatch.setattr("atexit.register", lambda fn: fn)
    monkeypatch.setattr(subproc, "kill_all", lambda: 0)
    monkeypatch.setattr("gpudoctor.probes.interrupt.install", lambda: None)
    assert entry.early_torch_probe(["scan"]) and calls[-1] == (None, 90.0)
    assert entry.early_torch_probe(["scan", "--json", "--python", "/opt/py", "--torch-timeout=30"])
    assert calls[-1] == ("/opt/py", 30.0)
    for argv in (
        ["scan", "--help"],
        ["check", "x"],
        [],
        ["scan", "--torch-timeout", "soon"],
        ["smoke"],
        ["scan", "--torch-timeout", "0"],
        ["scan", "--torch-timeout", "nan"],
        ["scan", "--torch-timeout=1e300"],
    ):
        n = len(calls)
        assert not entry.early_torch_probe(argv) and len(calls) == n, argv


def test_entry_default_torch_timeout_matches_the_scan_option():
    import inspect

    from gpudoctor.cli import app, entry

    default = inspect.signature(app.scan).parameters["torch_timeout"].default.default
    assert entry.TORCH_TIMEOUT_DEFAULT == default and entry.MAX_TIMEOUT_S == app.MAX_TIMEOUT_S


@pytest.mark.parametrize(
    "args",
    [
        ["smoke", "--cpu", "--timeout", "inf"],
        ["bench", "allreduce", "--cpu", "--timeout", "1e300"],
        ["scan", "--torch-timeout", "inf"],
        ["scan", "--confirm-timeout", "nan"],
    ],
)
def test_absurd_timeouts_are_usage_errors(args):
    r = gd(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_console_script_points_at_the_entry():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    assert 'gpudoctor = "gpudoctor.cli.entry:main"' in text


@pytest.mark.parametrize("python, says", [("/etc/passwd", "not an executable file"),
                                          ("/tmp", "a folder without bin/python3"),
                                          ("/bin/true", "not a Python 3 interpreter")])
def test_smoke_python_that_is_not_an_interpreter_is_a_usage_error(python, says):
    r = gd("smoke", "--cpu", "--python", python)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("args", [["-h"], ["scan", "-h"], ["bench", "allreduce", "-h"]])
def test_dash_h_is_help(args):
    r = gd(*args)
    assert r.returncode == 0 and "Usage:" in r.stdout
