"""Lint output: ruff-like text, JSON, GitHub workflow annotations, SARIF 2.1.0; and applying the fixes.

SARIF: https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html (the subset GitHub code scanning
reads: https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning).
GitHub annotations: https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions
"""
from __future__ import annotations

import difflib
import json
from collections.abc import Iterable

from gpudoctor.lint.model import Edit, LintFinding
from gpudoctor.lint.registry import load

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
GH_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def text(findings: list[LintFinding], errors: list[str], files: int) -> str:
    lines = []
    for f in findings:
        fix = " [*]" if f.fixable else ""
        lines.append(f"{f.path}:{f.line}:{f.col + 1}: {f.rule_id}{fix} {f.message}")
        lines.append(f"  fix: {f.remedy}")
    lines += [f"error: {e}" for e in errors]
    n = len(findings)
    fixable = sum(f.fixable for f in findings)
    tail = f" ({fixable} fixable with --fix)" if fixable else ""
    if n:
        lines.append(f"Found {n} problem{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}{tail}.")
    elif errors:  # a file that could not be read or parsed was not checked: never "all checks passed"
        lines.append(f"No problem found in the files read; {len(errors)} input{'s' if len(errors) != 1 else ''} "
                     "could not be checked (above).")
    else:
        lines.append(f"All checks passed ({files} file{'s' if files != 1 else ''}).")
    return "\n".join(lines)


def as_json(findings: list[LintFinding], errors: list[str], files: int) -> str:
    return json.dumps({"kind": "gpudoctor-lint", "files": files, "findings": [f.as_dict() for f in findings],
                       "errors": errors}, indent=2)


def _gh_escape(s: str, prop: bool = False) -> str:
    from gpudoctor.compat.ghactions import escape_data, escape_property

    return escape_property(s) if prop else escape_data(s)


def github(findings: list[LintFinding], errors: list[str], files: int) -> str:
    out = [f"::{GH_LEVEL[f.severity]} file={_gh_escape(f.path, True)},line={f.line},col={f.col + 1},"
           f"title={_gh_escape(f.rule_id, True)}::{_gh_escape(f'{f.message}. Fix: {f.remedy}')}" for f in findings]
    out += [f"::error::{_gh_escape(e)}" for e in errors]
    return "\n".join(out)


def sarif(findings: list[LintFinding], errors: list[str], files: int) -> dict[str, object]:
    """A SARIF 2.1.0 log: one run, the LNT rules as the tool's rules, one result per finding."""
    from gpudoctor import __version__

    specs = list(load().values())
    index = {s.id: i for i, s in enumerate(specs)}
    rules = [{"id": s.id, "name": s.title, "shortDescription": {"text": s.title},
              "fullDescription": {"text": s.what}, "help": {"text": f"{s.why} Fix: {s.fix}"},
              "helpUri": s.doc_url, "defaultConfiguration": {"level": SARIF_LEVEL[s.severity]},
              "properties": {"checklist": s.checklist}} for s in specs]
    results = [{"ruleId": f.rule_id, "ruleIndex": index[f.rule_id], "level": SARIF_LEVEL[f.severity],
                "message": {"text": f"{f.message}. Fix: {f.remedy}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.path.lstrip("./") or f.path},
                                                    "region": {"startLine": f.line, "startColumn": f.col + 1}}}]}
               for f in findings]
    notes = [{"level": "error", "message": {"text": e}, "descriptor": {"id": "parse-error"}} for e in errors]
    run: dict[str, object] = {"tool": {"driver": {"name": "gpudoctor", "version": __version__,
                                                  "informationUri": "https://github.com/", "rules": rules}},
                              "results": results}
    if notes:
        run["invocations"] = [{"executionSuccessful": True, "toolExecutionNotifications": notes}]
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """``source`` with the edits applied (from the end; an edit overlapping one already applied is skipped)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln.encode("utf-8")))
    data = source.encode("utf-8")

    def off(line: int, col: int) -> int:
        return starts[line - 1] + col

    done_from = len(data) + 1
    for e in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        a, b = off(e.line, e.col), off(e.end_line, e.end_col)
        if b > done_from:
            continue
        data = data[:a] + e.text.encode("utf-8") + data[b:]
        done_from = a
    return data.decode("utf-8")


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{path.lstrip('/')}", tofile=f"b/{path.lstrip('/')}"))
