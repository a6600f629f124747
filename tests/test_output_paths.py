"""An --output / --save path that cannot be written is refused before the scan or check runs (exit 2, one line);
one that fails at the end (disk full, a race) still leaves the report on the terminal."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.cli.output import unwritable

runner = CliRunner()
LOG = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


def test_unwritable_names_the_reason(tmp_path):
    assert unwritable(str(tmp_path)) == "is a directory"
    assert unwritable(str(tmp_path / "no" / "r.json")).startswith("no such directory")
    assert unwritable(str(tmp_path / "r.json")) is None


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_folder_that_takes_no_new_file_is_found_before_the_work():
    # root may write /proc by os.access; creating a file there fails: found by trying (the write is a temp + rename)
    assert unwritable("/proc/gpudoctor-report.json") is not None


@pytest.mark.parametrize("flag", ["--save", "--output"])
def test_check_refuses_a_bad_path_before_reading_any_input(tmp_path, flag, monkeypatch):
    import gpudoctor.pipeline.check as C

    def boom(*a, **k):
        raise AssertionError("the inputs were read before the output path was checked")

    monkeypatch.setattr(C, "run_check", boom)
    log = tmp_path / "job.log"
    log.write_text(LOG)
    res = runner.invoke(app, ["check", str(log), flag, str(tmp_path / "missing" / "r.json")])
    assert res.exit_code == 2 and "no such directory" in res.output


def test_scan_refuses_a_bad_save_path_before_probing(tmp_path, monkeypatch):
    import gpudoctor.pipeline.scan as P

    monkeypatch.setattr(P, "run_scan", lambda *a, **k: (_ for _ in ()).throw(AssertionError("probed")))
    res = runner.invoke(app, ["scan", "--save", str(tmp_path)])
    assert res.exit_code == 2 and "is a directory" in res.output


def _disk_full(*a, **k):
    raise OSError(28, "No space left on device")


def _check_with(tmp_path: Path, monkeypatch, module, name: str, extra: list[str]):
    """`check` of a one-line log with ``module.name`` (the writer) failing as on a full disk."""
    monkeypatch.setattr(module, name, _disk_full)
    log = tmp_path / "job.log"
    log.write_text(LOG)
    return runner.invoke(app, ["check", str(log), *extra])


def test_a_save_that_fails_at_the_end_still_prints_the_report(tmp_path, monkeypatch):
    from gpudoctor.reports import jsonout

    res = _check_with(tmp_path, monkeypatch, jsonout, "save", ["--save", str(tmp_path / "r.json")])
    assert res.exit_code == 2
    assert "SIG023" in res.output and "No space left on device" in res.output


def test_an_output_file_that_fails_at_the_end_goes_to_stdout(tmp_path, monkeypatch):
    from gpudoctor.reports import outputs

    res = _check_with(tmp_path, monkeypatch, outputs, "write_atomic",
                      ["--format", "junit", "-o", str(tmp_path / "r.xml")])
    assert res.exit_code == 2 and "<testsuites" in res.output and not Path(tmp_path / "r.xml").exists()


def test_a_device_or_pipe_target_is_written_directly_not_replaced(tmp_path):
    import os

    from gpudoctor.reports.outputs import write_atomic

    assert unwritable(os.devnull) is None  # no temporary file is made beside it (/dev may not take one)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "stdout"  # like /dev/stdout -> /proc/self/fd/1 -> pipe:[...]
    link.symlink_to(fifo)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomic(str(link), "{}\n")
        assert os.read(r, 100) == b"{}\n" and link.is_symlink()
    finally:
        os.close(r)


@pytest.mark.parametrize("value", ["abc", "0", "-3"])
def test_a_bad_gpudoctor_jobs_is_a_usage_error(tmp_path, value):
    log = tmp_path / "job.log"
    log.write_text(LOG)
    res = runner.invoke(app, ["check", str(log)], env={"GPUDOCTOR_JOBS": value})
    assert res.exit_code == 2 and "GPUDOCTOR_JOBS" in res.output


def test_an_unwritable_github_step_summary_is_a_warning(tmp_path):
    log = tmp_path / "job.log"
    log.write_text(LOG)
    res = runner.invoke(app, ["check", str(log), "--format", "github"],
                        env={"GITHUB_STEP_SUMMARY": str(tmp_path / "missing" / "summary.md")})
    assert res.exit_code == 1 and "::error" in res.output and "cannot append the summary" in res.output
