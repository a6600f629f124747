"""One rule's documentation page (ruff-style: what it checks, why it matters, how to fix, sources), for the host
rules (:mod:`gpudoctor.reports.ruledocs`) and the lint rules (:mod:`gpudoctor.lint.registry`) alike."""
from __future__ import annotations

from typing import Any


def rule_page(spec: Any, level: int = 1, *, meta: str = "", example: str = "", fixed: str = "") -> str:
    """The page of ``spec`` (a RuleSpec or a LintSpec: id, title, severity, area, what, why, fix, sources) with
    headings at ``level``; ``meta`` follows the severity and area line, ``example`` (flagged code) the 'why'
    paragraph and ``fixed`` (the corrected code) the 'how to fix' one."""
    h = "#" * level
    src = "\n".join(f"- {s}" for s in spec.sources)
    return (f"{h} {spec.id}: {spec.title}\n\n"
            f"Severity: **{spec.severity}** · Area: {spec.area}{meta}\n\n"
            f"**What it checks.** {spec.what}\n\n**Why it matters.** {spec.why}\n\n{example}"
            f"**How to fix.** {spec.fix}\n\n{fixed}**Sources.**\n{src}\n")
