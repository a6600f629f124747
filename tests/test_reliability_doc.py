"""docs/reliability.md cannot drift: every test it names exists, and every fault test is named in it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reliability.md"
CITED = re.compile(r"(tests/[\w/]+\.py)::(\w+)")


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name.startswith("test_")}


def cited() -> set[tuple[str, str]]:
    return set(CITED.findall(DOC.read_text()))


def test_every_cited_test_exists():
    refs = cited()
    assert len(refs) >= 60
    missing = [f"{f}::{t}" for f, t in sorted(refs) if not (ROOT / f).is_file() or t not in _tests_in(ROOT / f)]
    assert missing == [], f"docs/reliability.md names tests that do not exist: {missing}"


def test_every_fault_test_is_in_the_table():
    refs = cited()
    files = sorted((ROOT / "tests").glob("test_faults*.py"))
    assert len(files) >= 4
    absent = [f"{p.relative_to(ROOT)}::{t}" for p in files for t in sorted(_tests_in(p))
              if (str(p.relative_to(ROOT)), t) not in refs]
    assert absent == [], f"fault tests missing from docs/reliability.md: {absent}"


def test_every_table_row_has_three_cells():
    for line in DOC.read_text().splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            assert line.count("|") == 4, line
