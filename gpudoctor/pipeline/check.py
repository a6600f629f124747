"""`gpudoctor check`: saved outputs -> facts -> rules, offline."""
from __future__ import annotations

from dataclasses import dataclass, field

from gpudoctor.facts.findings import Report


@dataclass
class CheckResult:
    """The report (None when no input was usable), the inputs that were bad (exit 2), and those skipped."""

    report: Report | None
    errors: list[str] = field(default_factory=list)   #: one line per bad input
    skipped: list[str] = field(default_factory=list)  #: files in a folder that were not recognised
    interrupted: str | None = None  #: Ctrl-C stopped the reading: where; the report covers what was read before


def run_check(paths: list[str], jobs: int | None = None) -> CheckResult:
    """Recognise each path by content, build one snapshot, evaluate every rule.

    ``jobs``: worker processes for large inputs (None: one per usable CPU; 1: none)."""
    from gpudoctor.parsers.offline import SKIPPED, build_snapshot
    from gpudoctor.rules import evaluate

    stopped: list[str] = []
    snap, errors = build_snapshot(paths, jobs, stopped)
    skipped = [e[len(SKIPPED):] for e in errors if e.startswith(SKIPPED)]
    errors = [e for e in errors if not e.startswith(SKIPPED)]
    return CheckResult(evaluate(snap) if snap is not None else None, errors, skipped, stopped[0] if stopped else None)
