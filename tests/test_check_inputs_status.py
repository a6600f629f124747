"""Issue 15 item 7: `check` lists every input with its status (read / skipped / rejected, with a reason) in the JSON
and the terminal report; an unreadable input keeps exit 2 (documented) but the report is still printed and saved."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers.offline import build_snapshot

FIX = Path(__file__).resolve().parent / "fixtures" / "h200-text"
runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()


def folder(tmp_path: Path) -> Path:
    d = tmp_path / "dumps"
    d.mkdir()
    for name in ("nvidia-smi.txt", "collect_env.txt"):
        (d / name).write_text((FIX / name).read_text())
    (d / "notes.md").write_text("what I ran\n")
    (d / "core.bin").write_bytes(b"abc\x00\x01\x02" * 10)
    os.symlink(tmp_path / "gone.txt", d / "dangling.txt")  # listed in the folder, cannot be opened
    return d


def test_every_input_has_a_status_in_the_json(tmp_path: Path) -> None:
    d = folder(tmp_path)
    save = tmp_path / "r.json"
    res = runner.invoke(app, ["check", "--json", "--fail-on", "never", "--save", str(save), str(d)])
    assert res.exit_code == 2  # the unreadable file: documented in docs/triage.md
    inputs = {Path(i["path"]).name: i for i in json.loads(res.stdout)["snapshot"]["inputs"]}
    assert {k: v["status"] for k, v in inputs.items()} == {
        "nvidia-smi.txt": "read", "collect_env.txt": "read", "notes.md": "skipped", "core.bin": "skipped",
        "dangling.txt": "rejected"}
    assert "No such file" in inputs["dangling.txt"]["reason"] and "binary" in inputs["core.bin"]["reason"]
    assert json.loads(save.read_text())["snapshot"]["inputs"] == json.loads(res.stdout)["snapshot"]["inputs"]


def test_the_terminal_report_names_the_rejected_input(tmp_path: Path) -> None:
    res = runner.invoke(app, ["check", "--fail-on", "never", str(folder(tmp_path))])
    assert res.exit_code == 2
    assert "Inputs 2 file(s)" in res.stdout and "2 skipped, 1 rejected" in res.stdout
    assert "rejected:" in res.stdout and "dangling.txt" in res.stdout


def test_skipped_files_alone_do_not_change_the_exit_code(tmp_path: Path) -> None:
    d = folder(tmp_path)
    (d / "dangling.txt").unlink()
    assert runner.invoke(app, ["check", "--fail-on", "never", str(d)]).exit_code == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_named_pipe_in_a_folder_is_skipped_not_opened(tmp_path):
    """Opening a FIFO without a writer blocks forever: one found in a folder is listed as skipped, never opened."""
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "job.log").write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    snap, errors = build_snapshot([str(tmp_path)])
    assert snap is not None and any("pipe: not a regular file" in e for e in errors)
    assert {i.status for i in snap.inputs if i.path.endswith("pipe")} == {"skipped"}


def test_json_is_a_report_even_when_no_input_is_usable(tmp_path: Path) -> None:
    """A script reading `check --json` gets a report listing each input with why, not an empty stdout; exit 2."""
    bad = tmp_path / "core.bin"
    bad.write_bytes(b"abc\x00\x01\x02" * 10)
    d = tmp_path / "notes"
    d.mkdir()
    (d / "todo.md").write_text("what I ran\n")
    res = runner.invoke(app, ["check", "--json", str(bad), str(d)])
    assert res.exit_code == 2
    doc = json.loads(res.stdout)
    assert {Path(i["path"]).name: i["status"] for i in doc["snapshot"]["inputs"]} == {
        "core.bin": "rejected", "todo.md": "skipped"}
    assert [(f["rule_id"], f["severity"]) for f in doc["findings"]] == [("LOG000", "error")]  # nothing diagnosed
    assert doc["summary"]["passed"] == 0 and doc["summary"]["errors"] == 1
    html = runner.invoke(app, ["check", "--format", "html", str(bad)])
    assert html.exit_code == 2 and "No input could be read" in html.stdout
    junit = runner.invoke(app, ["check", "--format", "junit", str(bad)])
    assert 'failures="0"' not in junit.stdout.split("\n", 3)[1] + junit.stdout[:400]
    save = tmp_path / "r.json"
    assert runner.invoke(app, ["check", "--save", str(save), str(bad)]).exit_code == 2 and save.exists()
    assert "core.bin" in res.stderr
    text = runner.invoke(app, ["check", str(bad)])
    assert text.exit_code == 2 and text.stdout == ""  # the terminal keeps the one-line error on stderr
