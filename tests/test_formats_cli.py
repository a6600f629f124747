"""--format / --json / --output on the report commands (dispatch in gpudoctor.cli.app.write_report)."""
from __future__ import annotations

import json
import os
import re
import stat
import sys

import pytest
from formats_helpers import H200_2GPU, TOKEN
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.reports.outputs import FORMATS, write_atomic

runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()


def run(*args, env=None):
    res = runner.invoke(app, [*map(str, args)], env=env)
    return res.exit_code, res.stdout, getattr(res, "stderr", "") or ""


@pytest.mark.parametrize("cmd", [["scan"], ["check"], ["cluster"], ["smoke"], ["bench", "allreduce"]])
def test_every_report_command_has_the_shared_options(cmd):
    code, out, _ = run(*cmd, "--help", env={"COLUMNS": "200"})
    assert code == 0
    assert re.search(r"--format\s+<?\[?text\|json\|junit\|github\|prometheus\|html", out), out
    assert "--output" in out and "--json" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_writes_each_format_to_stdout_and_to_a_file(tmp_path, fmt):
    code, out, err = run("check", H200_2GPU, "--format", fmt)
    assert code == 0, err
    target = tmp_path / f"report.{fmt}"
    code2, out2, err2 = run("check", H200_2GPU, "--format", fmt, "--output", target)
    assert code2 == 0 and out2 == "", err2
    text = target.read_text()
    if fmt == "text":
        assert "Summary:" in text and "\x1b[" not in text  # plain text, no colour codes in a file
    else:
        def norm(t):
            return re.sub(r"\d+\.\d+(e-?\d+)?", "N", t)  # check's own duration differs between the two runs

        assert norm(text) == norm(out)  # the same document either way
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left behind


def test_json_is_the_shorthand_and_conflicts_with_another_format():
    code, out, _ = run("check", H200_2GPU, "--json")
    code2, out2, _ = run("check", H200_2GPU, "--format", "json")
    a, b = json.loads(out), json.loads(out2)
    for d in (a, b):
        d["snapshot"].pop("duration_s")  # check's own wall time
        d["snapshot"].pop("probe_seconds", None)
    assert code == code2 == 0 and a == b
    code, out, err = run("check", H200_2GPU, "--json", "--format", "junit")
    assert code == 2 and out == "" and "--json and --format junit" in err


def test_exit_code_follows_fail_on_in_every_format():
    for fmt in ("junit", "prometheus", "github"):
        assert run("check", H200_2GPU, "--format", fmt, "--fail-on", "info")[0] == 1
        assert run("check", H200_2GPU, "--format", fmt, "--fail-on", "error")[0] == 0


def test_fail_on_reaches_the_formats():
    _, junit_info, _ = run("check", H200_2GPU, "--format", "junit", "--fail-on", "info")
    _, junit_error, _ = run("check", H200_2GPU, "--format", "junit", "--fail-on", "error")
    assert "<failure" in junit_info and "<failure" not in junit_error
    _, prom, _ = run("check", H200_2GPU, "--format", "prometheus", "--fail-on", "info")
    assert "gpudoctor_healthy 0" in prom


def test_unwritable_output_is_exit_2(tmp_path):
    code, out, err = run("check", H200_2GPU, "--format", "prometheus", "--output", tmp_path / "no/such/dir/x.prom")
    assert code == 2 and "cannot write" in err


def test_output_replaces_atomically_and_keeps_umask_mode(tmp_path):
    target = tmp_path / "gpudoctor.prom"
    target.write_text("old\n")
    old_inode = target.stat().st_ino
    mask = os.umask(0o022)
    try:
        write_atomic(str(target), "new\n")
    finally:
        os.umask(mask)
    assert target.read_text() == "new\n" and target.stat().st_ino != old_inode  # renamed over, not rewritten
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # readable by node_exporter, as `>` would make it


def test_output_failure_leaves_no_temporary_file(tmp_path, monkeypatch):
    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(str(tmp_path / "x.prom"), "data\n")
    assert list(tmp_path.iterdir()) == []


def test_secret_in_the_environment_never_reaches_any_format(tmp_path, monkeypatch):
    """A token quoted by an input (a pasted log) is scrubbed in every format, as in the terminal report."""
    log = tmp_path / "nccl.log"
    log.write_text("Traceback (most recent call last):\nRuntimeError: download failed for "
                   f"https://user:{TOKEN}@huggingface.co/x hf_token={TOKEN}\n")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    for fmt in FORMATS:
        code, out, err = run("check", log, "--format", fmt)
        assert "download failed" in out or fmt == "prometheus", fmt  # the line is quoted (no text in metrics) ...
        assert TOKEN not in out + err, fmt  # ... without its token


@pytest.mark.skipif(sys.platform != "linux", reason="GITHUB_STEP_SUMMARY path semantics tested on Linux")
def test_github_format_appends_the_step_summary(tmp_path):
    summary = tmp_path / "step_summary.md"
    code, out, _ = run("check", H200_2GPU, "--format", "github", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert code == 0 and out.splitlines()[-1].startswith("gpudoctor check of 1 input file(s)")
    assert summary.read_text().startswith("## ")


def test_sigterm_during_scan_writes_the_partial_textfile_with_the_real_bar(tmp_path):
    """timeout(1) in the DaemonSet / Slurm script sends SIGTERM to a hung scan: the textfile still appears,
    atomically, and says unhealthy (no driver here: an error), not 'healthy' because the scan was cut short."""
    import signal
    import subprocess
    import time

    import psutil

    hang = tmp_path / "slowpython"
    hang.write_text(f"#!{sys.executable}\nimport time; time.sleep(60)\n")
    hang.chmod(0o755)
    prom = tmp_path / "gpudoctor.prom"
    root = str(H200_2GPU.parents[3])
    p = subprocess.Popen([sys.executable, "-m", "gpudoctor", "scan", "--no-confirm", "--python", str(hang),
                          "--format", "prometheus", "--output", str(prom)],
                         env=dict(os.environ, PYTHONPATH=root), cwd=root, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while time.time() < deadline:  # wait until the (hanging) torch probe child runs
        kids = psutil.Process(p.pid).children(recursive=True) if p.poll() is None else []
        if any("slowpython" in " ".join(k.cmdline()) for k in kids if k.is_running()):
            break
        time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130 and out == "", err
    text = prom.read_text()
    assert 'gpudoctor_probe_error{probe="torch",kind="interrupted"} 1' in text
    assert "gpudoctor_healthy 0" in text
    assert sorted(x.name for x in tmp_path.iterdir()) == ["gpudoctor.prom", "slowpython"]


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "store" / "report.json"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(str(link), "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


def test_output_to_a_fifo_writes_into_it_instead_of_replacing_it(tmp_path):
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_atomic(str(fifo), "report\n")
    reader.join(10)
    assert got == ["report\n"] and stat.S_ISFIFO(fifo.stat().st_mode)
