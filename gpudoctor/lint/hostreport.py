"""The "Training script" area of the host report (``gpudoctor scan --script train.py``): lint findings as
report findings and one outcome per lint rule, so one report answers "is this host and this script ready".
"""
from __future__ import annotations

from typing import Literal

from gpudoctor.facts.findings import Finding, Report, RuleOutcome
from gpudoctor.lint.engine import lint_paths
from gpudoctor.lint.registry import AREA, load


def add_script_area(report: Report, scripts: list[str]) -> list[str]:
    """Lint ``scripts`` and add their findings and per-rule outcomes to ``report`` (summary recomputed);
    return the files that could not be read or parsed (one line each)."""
    from gpudoctor.rules.engine import summarize

    res = lint_paths(scripts)
    for f in res.findings:
        spec = load()[f.rule_id]
        report.findings.append(Finding(rule_id=f.rule_id, severity=f.severity, area=AREA, title=spec.title,
                                       subject=f"{f.path}:{f.line}:{f.col + 1}", evidence=[f.message],
                                       remedy=f.remedy, sources=f.sources,
                                       data={"path": f.path, "line": f.line, "col": f.col + 1}))
    fired = {f.rule_id for f in res.findings}
    for spec in load().values():
        status: Literal["fail", "not_assessed", "pass"] = (
            "fail" if spec.id in fired else "not_assessed" if res.errors else "pass")
        report.outcomes.append(RuleOutcome(rule_id=spec.id, area=AREA, title=spec.title, check=f"no {spec.title}",
                                           status=status, reason="; ".join(res.errors) or None))
    report.summary = summarize(report.snapshot, report.findings, report.outcomes)
    return res.errors
