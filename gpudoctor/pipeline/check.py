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
    hints: list[str] = field(default_factory=list)  #: one-line advice about the run itself (not findings)
    unusable: Report | None = None  #: when report is None: a report of the inputs alone, each with why (--json)


def _preload() -> None:
    """Import what the report needs once the inputs are read (the rules, the report writers) while worker processes
    parse a large input and this one would only wait (about 0.1 s off a large check's wall time)."""
    import gpudoctor.reports.jsonout  # noqa: F401
    import gpudoctor.reports.outputs  # noqa: F401
    import gpudoctor.reports.redact  # noqa: F401
    import gpudoctor.rules  # noqa: F401


def run_check(paths: list[str], jobs: int | None = None) -> CheckResult:
    """Recognise each path by content, build one snapshot, evaluate every rule.

    ``jobs``: worker processes for large inputs (None: one per usable CPU; 1: none)."""
    from gpudoctor.parsers.offline import SKIPPED, build_snapshot, empty_snapshot

    stopped: list[str] = []
    snap, errors = build_snapshot(paths, jobs, stopped, idle=_preload)
    from gpudoctor.rules import evaluate

    skipped = [e[len(SKIPPED):] for e in errors if e.startswith(SKIPPED)]
    unusable = evaluate(empty_snapshot(errors)) if snap is None else None
    errors = [e for e in errors if not e.startswith(SKIPPED)]
    return CheckResult(evaluate(snap) if snap is not None else None, errors, skipped, stopped[0] if stopped else None,
                       _hints(snap), unusable)


def _hints(snap) -> list[str]:
    """Advice on how the inputs were read: a large input matched without google-re2 (the optional [fast] extra;
    docs/benchmarks.md: 8-10 MB/s instead of 35-110 MB/s on 2 cores)."""
    import os

    from gpudoctor.parsers import stream
    from gpudoctor.parsers.signatures import engine_name

    if snap is None:
        return []
    big = [i.path for i in snap.inputs
           if i.status == "read" and os.path.isfile(i.path) and os.path.getsize(i.path) > stream.WHOLE_BYTES]
    if big and engine_name() != "re2-set":
        return [f"google-re2 is not installed, so {big[0]} was matched several times slower than it could be: "
                "pip install 'gpudoctor[fast]'"]
    return []
