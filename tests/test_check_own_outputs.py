"""Issue 15 item 2: gpudoctor's own outputs (text reports, cluster / cuda-version-check JSON, probe streams, other JSON)
are recognised by content and explained; signatures are never matched inside them; the README's example folders
check clean (0 errors, exit 0)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers import detect as D

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "docs" / "examples"
runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()


def run(*args: object) -> tuple[int, str, str]:
    res = runner.invoke(app, ["check", *map(str, args)])
    return res.exit_code, res.stdout, getattr(res, "stderr", "") or ""


@pytest.mark.parametrize("folder", ["h200-1gpu-2026-11-29", "h200-2gpu-2026-11-29", "h200-merged-2026-12-01"])
def test_the_readme_example_folders_check_clean(folder: str) -> None:
    code, out, err = run("--json", EX / folder)
    rep = json.loads(out)
    assert code == 0 and rep["summary"]["errors"] == 0, (err, [f["rule_id"] for f in rep["findings"]])
    assert "gpudoctor: error" not in err and "second saved report" not in err
    assert not any(f["rule_id"].startswith("SIG") and f["severity"] != "info" for f in rep["findings"])


@pytest.mark.parametrize("name", ["scan.txt", "scan-v-no-confirm.txt", "confirm-scan-check-v.txt", "cluster-cpu.txt"])
def test_a_text_report_named_on_the_command_line_is_explained_not_matched(name: str) -> None:
    code, out, err = run(EX / "h200-1gpu-2026-11-29" / name)
    assert code == 2 and out == "" and "SIG0" not in err
    assert len(err.strip().splitlines()) == 1 and "--save" in err and "text report" in err


@pytest.mark.parametrize(("name", "kind"), [
    ("topology-nvml-fabric.jsonl", D.GD_STREAM), ("startup-timeline.json", D.OTHER_JSON),
    ("cluster-cpu.json", D.GD_CLUSTER), ("cuda-version-check-local.json", D.GD_VERSIONCHECK),
    ("cuda-version-check-fleet.txt", D.GD_VERSIONCHECK), ("scan.txt", D.GD_TEXT), ("scan.json", D.JSON),
    ("topology-topo-m.txt", D.TOPO)])
def test_own_outputs_are_detected_by_content(name: str, kind: str) -> None:
    assert D.detect((EX / "h200-1gpu-2026-11-29" / name).read_text()) == [kind]


def test_a_captured_text_report_with_a_command_line_first(tmp_path: Path) -> None:
    text = (EX / "h200-1gpu-2026-11-29" / "scan-v-no-confirm.txt").read_text()
    f = tmp_path / "my.txt"
    f.write_text("$ gpudoctor scan -v\n" + text)
    assert D.detect(f.read_text()) == [D.GD_TEXT]
    code, out, err = run(f)
    assert code == 2 and "SIG" not in out + err


@pytest.mark.parametrize("argv", [["explain", "SIG001"], ["explain", "NCL011"], ["rules"]])
def test_the_rule_documentation_is_not_read_as_an_error_log(tmp_path: Path, argv: list[str]) -> None:
    doc = tmp_path / "doc.txt"
    doc.write_text(runner.invoke(app, argv).stdout)  # it quotes the messages the signatures look for
    code, out, err = run(doc)
    assert code == 2 and out == "" and "rule documentation" in err


def test_a_rule_page_of_the_docs_is_not_read_as_an_error_log() -> None:
    code, out, err = run(ROOT / "docs" / "rules" / "sig.md")
    assert code == 2 and "rule documentation" in err


def test_a_saved_report_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    src = (EX / "h200-1gpu-2026-11-29" / "scan.json").read_text()
    bom = tmp_path / "r.json"
    bom.write_text("\ufeff" + src, encoding="utf-8")  # what Windows PowerShell's `>` writes
    code, out, err = run("--json", bom)
    assert code == 0 and "not valid JSON" not in err


def test_html_reports_of_check_scan_and_cluster_are_own_outputs(tmp_path: Path) -> None:
    """Their <title> names the command ('gpudoctor check of 1 input file(s): FAIL'); the page quotes evidence, so
    reading it back must not turn the quoted error lines into findings."""
    log = tmp_path / "job.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    html = tmp_path / "r.html"
    res = runner.invoke(app, ["check", str(log), "--format", "html", "-o", str(html)])
    assert res.exit_code == 1 and "<title>gpudoctor check of" in html.read_text()
    assert D.detect(html.read_text()) == [D.GD_FORMAT]
    for title in ("gpudoctor cluster report, 4 node(s)", "gpudoctor report of gpu-a"):
        assert D.detect(f"<!DOCTYPE html><html><head><title>{title}: FAIL</title></head></html>") == [D.GD_FORMAT]
    again = runner.invoke(app, ["check", str(html)])
    assert again.exit_code == 2 and "--format junit/prometheus/html" in again.output


def test_an_excerpt_of_a_report_without_its_header_is_still_ours(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n"
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    report = runner.invoke(app, ["check", str(log)]).stdout
    part = report[report.index("[✗] Logs & errors"):]  # the section a user copies into a ticket
    p = tmp_path / "excerpt.txt"
    p.write_text(part)
    res = runner.invoke(app, ["check", str(p)])
    assert res.exit_code == 2 and "gpudoctor text report" in res.output
