"""`gpudoctor lint` end to end: output formats (text, JSON, GitHub annotations, SARIF 2.1.0 structure),
exit codes and --fail-on, pyproject ignores, stdin, --fix / --diff, explain / rules, the scan's
"Training script" area, and docs/rules/lnt.md kept in sync with the rules' metadata."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.lint.output import apply_edits

ROOT = Path(__file__).resolve().parents[1]

BAD = """\
import torch
import torch.nn as nn

model = nn.DataParallel(nn.Linear(2, 2))
scaler = torch.cuda.amp.GradScaler(1024.0)
with torch.cuda.amp.autocast(True, torch.float16):
    y = model(torch.ones(2))
"""


def gd(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd, input=stdin)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(BAD)
    (tmp_path / "ok.py").write_text("import torch\nx = torch.ones(1)\n")
    return tmp_path


def test_text_output_and_exit_codes(proj: Path) -> None:
    r = gd("lint", "train.py", "ok.py", cwd=proj)
    assert r.returncode == 1, r.stderr
    assert "train.py:4:9: LNT001 nn.DataParallel" in r.stdout
    assert "  fix: " in r.stdout and "in 2 files (2 fixable with --fix)" in r.stdout
    assert gd("lint", "ok.py", cwd=proj).returncode == 0
    assert gd("lint", "train.py", "--fail-on", "error", cwd=proj).returncode == 0  # only warnings
    assert gd("lint", "train.py", "--fail-on", "never", cwd=proj).returncode == 0
    missing = gd("lint", "train.py", "nope.py", cwd=proj)
    assert missing.returncode == 2 and "nope.py: no such file" in missing.stdout + missing.stderr
    (proj / "broken.py").write_text("import torch\ndef f(:\n")
    assert gd("lint", "broken.py", cwd=proj).returncode == 2
    sub = proj / "vendored"
    sub.mkdir()
    (sub / "other.py").write_text("def f(:\n")  # never names torch: in a folder, skipped unparsed (the fast path)
    assert gd("lint", "vendored", cwd=proj).returncode == 0
    named = gd("lint", "vendored/other.py", cwd=proj)  # named by the user: parsed, and its error said (never a pass)
    assert named.returncode == 2 and "cannot parse" in named.stdout + named.stderr
    assert gd("lint", "train.py", "--select", "LNT999", cwd=proj).returncode == 2


def test_json_fields(proj: Path) -> None:
    r = gd("lint", "--json", "train.py", cwd=proj)
    doc = json.loads(r.stdout)
    f = doc["findings"][0]
    assert set(f) >= {"rule_id", "severity", "path", "line", "col", "message", "remedy", "sources"}
    assert f["rule_id"] == "LNT001" and f["line"] == 4 and f["col"] == 9
    assert any(s.startswith("https://pytorch.org/") for s in f["sources"]) and any("L1" in s for s in f["sources"])


def test_github_annotations(proj: Path) -> None:
    r = gd("lint", "--format", "github", "train.py", cwd=proj)
    first = r.stdout.splitlines()[0]
    assert first.startswith("::warning file=train.py,line=4,col=9,title=LNT001::")


def test_sarif_structure(proj: Path) -> None:
    """The SARIF 2.1.0 fields code scanning requires (the full schema is not available offline): version,
    runs[].tool.driver.name/rules[].id, results[].ruleId/message.text/locations[].physicalLocation
    (artifactLocation.uri, region.startLine >= 1), level in the SARIF enumeration, ruleIndex consistent."""
    doc = json.loads(gd("lint", "--format", "sarif", "train.py", cwd=proj).stdout)
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    (run,) = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "gpudoctor" and all(r["id"] and r["helpUri"] for r in rules)
    assert run["results"], "findings expected"
    for res in run["results"]:
        assert res["level"] in ("none", "note", "warning", "error")
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"] and res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "train.py" and loc["region"]["startLine"] >= 1
        assert loc["region"]["startColumn"] >= 1


def test_pyproject_ignore_found_upward(proj: Path) -> None:
    (proj / "pyproject.toml").write_text('[tool.gpudoctor.lint]\nignore = ["LNT001"]\n')
    (proj / "sub").mkdir()
    (proj / "sub" / "t.py").write_text(BAD)
    out = gd("lint", "sub", cwd=proj).stdout
    assert "LNT001" not in out and "LNT017" in out
    assert "LNT001" not in gd("lint", "--ignore", "LNT017", "sub", cwd=proj).stdout


def test_stdin(proj: Path) -> None:
    r = gd("lint", "-", stdin=BAD, cwd=proj)
    assert r.returncode == 1 and "-:4:9: LNT001" in r.stdout
    r = gd("lint", "--fix", "-", stdin=BAD, cwd=proj)  # the fixed source on stdout, the report on stderr
    assert 'torch.amp.GradScaler("cuda", 1024.0)' in r.stdout and "LNT001" in r.stderr
    ast.parse(r.stdout)


def test_diff_changes_nothing_and_fix_rewrites(proj: Path) -> None:
    before = (proj / "train.py").read_text()
    r = gd("lint", "--diff", "train.py", cwd=proj)
    assert r.returncode == 1 and "+scaler = torch.amp.GradScaler(\"cuda\", 1024.0)" in r.stdout
    assert (proj / "train.py").read_text() == before
    r = gd("lint", "--fix", "train.py", cwd=proj)
    after = (proj / "train.py").read_text()
    assert 'torch.autocast("cuda", enabled=True, dtype=torch.float16)' in after
    assert "torch.cuda.amp" not in after and "LNT017" not in r.stdout and "LNT001" in r.stdout
    ast.parse(after)
    assert gd("lint", "--diff", "train.py", cwd=proj).returncode == 0  # nothing left to fix


def test_no_fix_when_it_could_change_behaviour(proj: Path) -> None:
    src = ("from torch.cuda.amp import autocast\nimport torch\nwith autocast():\n    pass\n"
           "s = torch.cuda.amp.GradScaler(**kw)\n")
    (proj / "t.py").write_text(src)
    r = gd("lint", "--json", "t.py", cwd=proj)
    assert [f["fixable"] for f in json.loads(r.stdout)["findings"]] == [False, False]
    (proj / "t2.py").write_text("import torch\ntorch.set_autocast_dtype('cuda', torch.bfloat16)\n"
                                "with torch.cuda.amp.autocast():\n    pass\n")
    assert not json.loads(gd("lint", "--json", "t2.py", cwd=proj).stdout)["findings"][0]["fixable"]


def test_apply_edits_keeps_unicode_columns() -> None:
    from gpudoctor.lint.engine import lint_source

    src = 'import torch\nx = "é"; s = torch.cuda.amp.GradScaler()\n'
    out = apply_edits(src, [e for f in lint_source(src, "t.py") for e in f.edits])
    assert out == 'import torch\nx = "é"; s = torch.amp.GradScaler("cuda")\n'


def test_explain_and_rules() -> None:
    r = gd("explain", "lnt005")
    assert r.returncode == 0 and "map_location" in r.stdout and "L4" in r.stdout
    assert "https://pytorch.org/docs/stable/generated/torch.load.html" in r.stdout
    assert "LNT019" in gd("rules").stdout


def test_scan_script_area(tmp_path: Path) -> None:
    from conftest import h200_report_json

    from gpudoctor.facts.findings import Report
    from gpudoctor.lint.hostreport import add_script_area

    report = Report.model_validate(h200_report_json())
    before = report.summary.warnings
    (tmp_path / "train.py").write_text(BAD)
    assert add_script_area(report, [str(tmp_path / "train.py")]) == []
    lnt = [f for f in report.findings if f.rule_id.startswith("LNT")]
    assert {f.area for f in lnt} == {"Training script"} and len(lnt) == 3
    assert report.summary.warnings == before + 3
    assert any(o.rule_id == "LNT002" and o.status == "pass" for o in report.outcomes)


def test_rule_docs_page_in_sync() -> None:
    from gpudoctor.lint.registry import family_page

    assert (ROOT / "docs" / "rules" / "lnt.md").read_text() == family_page(), \
        "regenerate: python -m gpudoctor.lint.registry"


def test_scan_script_missing_is_a_usage_error(tmp_path: Path) -> None:
    r = gd("scan", "--script", str(tmp_path / "nope.py"), "--no-confirm")
    assert r.returncode == 2 and "--script" in r.stderr and "Traceback" not in r.stderr


def test_a_file_that_cannot_be_parsed_is_never_all_checks_passed():
    from gpudoctor.lint.output import text

    out = text([], ["train.py: cannot parse: invalid syntax (train.py, line 2)"], 1)
    assert "All checks passed" not in out and "could not be checked" in out
