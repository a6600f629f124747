"""Issue 15 item 3: a fact missing from an input (an excerpt, a cut paste) is unknown, not absent: rules say
*not assessed*, the header says '?', and quoted evidence is cut at word boundaries around what matters."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers._text import clip
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.parsers.signatures import match_signatures
from gpudoctor.rules import evaluate

FIX = Path(__file__).resolve().parent / "fixtures"
CE = (FIX / "h200-text" / "collect_env.txt").read_text()
runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()


def outcomes(tmp_path: Path, text: str, name: str = "in.txt") -> dict[str, str]:
    f = tmp_path / name
    f.write_text(text)
    snap, errors = build_snapshot([str(f)])
    assert snap is not None, errors
    return {o.rule_id: o.status for o in evaluate(snap).outcomes}


def test_collect_env_excerpt_before_the_nvcc_line_leaves_cmp002_not_assessed(tmp_path: Path) -> None:
    excerpt = CE.split("CUDA runtime version")[0]
    assert outcomes(tmp_path, excerpt)["CMP002"] == "not_assessed"
    # the whole dump decides it; "Could not collect" stays unknown (collect_env did not find out)
    assert outcomes(tmp_path, CE)["CMP002"] in ("pass", "fail")
    no_nvcc = CE.replace("CUDA runtime version: 13.0.88", "CUDA runtime version: Could not collect")
    assert outcomes(tmp_path, no_nvcc)["CMP002"] == "not_assessed"


def test_collect_env_excerpt_before_the_package_list_leaves_cmp001_not_assessed(tmp_path: Path) -> None:
    excerpt = CE.split("[pip3]")[0]
    assert outcomes(tmp_path, excerpt)["CMP001"] == "not_assessed"


NVSMI_HEAD = ("+-----------------------------------------------------------------------------------------+\n"
              "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |\n"
              "|-----------------------------------------+------------------------+----------------------+\n")


def test_nvidia_smi_paste_cut_after_the_header_is_not_no_driver(tmp_path: Path) -> None:
    f = tmp_path / "smi.txt"
    f.write_text(NVSMI_HEAD)
    res = runner.invoke(app, ["check", "--json", str(f)])
    rep = json.loads(res.stdout)
    assert not [x for x in rep["findings"] if x["rule_id"] == "DRV001"]
    assert {o["rule_id"]: o["status"] for o in rep["outcomes"]}["DRV001"] == "not_assessed"
    text = runner.invoke(app, ["check", str(f)]).stdout
    assert "GPUs none" not in text and "GPUs ? " in text


def test_a_full_table_with_no_gpu_rows_is_known_empty(tmp_path: Path) -> None:
    rule = "+" + "-" * 89 + "+\n"
    body = NVSMI_HEAD + rule + "| Processes:" + " " * 78 + "|\n" + "|  No running processes found" + " " * 61 + "|\n"
    assert outcomes(tmp_path, body)["DRV001"] == "fail"


def test_evidence_is_cut_at_word_boundaries_around_the_match() -> None:
    line = "prefix " + "lorem ipsum dolor " * 40 + "RuntimeError: CUDA error: system not yet initialized" + " tail" * 50
    hit = next(h for h in match_signatures(line) if h.id == "SIG003")
    ev = hit.lines[0]
    assert "system not yet initialized" in ev and ev.startswith("… ") and ev.endswith(" …")
    words = set(line.split())
    assert all(w in words or w == "…" for w in ev.split())
    assert clip("short", 10) == "short"


def test_a_section_with_not_assessed_checks_has_no_green_tick(tmp_path: Path) -> None:
    """Issue 15 item 4: '[✓] Area (3/5 checks passed)' while 2 are not assessed read as all clear."""
    f = tmp_path / "ce.txt"
    f.write_text(CE.split("[pip3]")[0])  # CMP001 not assessed, other Compatibility checks pass
    out = runner.invoke(app, ["check", str(f)]).stdout
    line = next(x for x in out.splitlines() if "Compatibility" in x)
    assert "not assessed" in line and not line.startswith("[✓]"), line
