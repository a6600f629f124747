"""One flat view of any gpudoctor report for the machine formats (JUnit, GitHub, Prometheus, HTML).

A report is any pydantic document with ``findings`` and ``outcomes`` (``Report`` of scan / check / smoke /
bench, and whatever later commands add with the same two lists), or a ``ClusterReport`` (cross-node
outcomes plus every node's own report). :func:`cases` turns it into one :class:`Case` per rule outcome,
with the findings of that rule attached, so every format counts and names the same things.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from gpudoctor.facts.findings import SEVERITY_ORDER, Finding, RuleOutcome


@dataclass
class Case:
    """One rule outcome (on one node, for a cluster report) with the findings it produced."""

    rule_id: str
    area: str
    title: str
    status: str  # pass, fail, not_assessed, not_applicable
    node: str | None = None  # node label in a cluster report; None on a single host
    check: str | None = None
    reason: str | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def severity(self) -> str | None:
        """The worst severity of its findings (None without findings)."""
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: SEVERITY_ORDER[s])

    def fails(self, fail_on: str) -> bool:
        """True when a finding is at or above ``fail_on`` (error, warning, info; never: False)."""
        return fails(self.findings, fail_on)


def fails(findings: list[Finding], fail_on: str) -> bool:
    if fail_on == "never":
        return False
    bar = SEVERITY_ORDER[fail_on]
    return any(SEVERITY_ORDER[f.severity] >= bar for f in findings)


def is_cluster(report: Any) -> bool:
    return getattr(report, "kind", "") == "gpudoctor-cluster-report"


def _cases(outcomes: list[RuleOutcome], findings: list[Finding], node: str | None) -> list[Case]:
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule_id, []).append(f)
    out = [Case(o.rule_id, o.area, o.title, o.status, node, o.check, o.reason, by_rule.pop(o.rule_id, []))
           for o in outcomes]
    for rid, fs in by_rule.items():  # a finding without an outcome (older saved reports): still a case
        out.append(Case(rid, fs[0].area, fs[0].title, "fail", node, findings=fs))
    return out


def cases(report: Any) -> list[Case]:
    """Every rule outcome of ``report`` (and of each node's report in a cluster report), in report order."""
    out = _cases(list(getattr(report, "outcomes", [])), list(getattr(report, "findings", [])), None)
    for n in getattr(report, "nodes", []) or []:
        if n.report is not None:
            out += _cases(n.report.outcomes, n.report.findings, n.label)
    return out


def all_findings(report: Any) -> list[tuple[str | None, Finding]]:
    """(node label or None, finding) for every finding, cross-node ones first."""
    out: list[tuple[str | None, Finding]] = [(None, f) for f in getattr(report, "findings", [])]
    for n in getattr(report, "nodes", []) or []:
        if n.report is not None:
            out += [(n.label, f) for f in n.report.findings]
    return out


def failing(report: Any, fail_on: str) -> bool:
    """True when the command's exit code is 1: a finding (cross-node or on any node) at or above ``fail_on``."""
    return fails([f for _, f in all_findings(report)], fail_on)


def title(report: Any) -> str:
    """'gpudoctor scan of gpu-a', 'gpudoctor check of 3 input file(s)', 'gpudoctor cluster of 4 node(s)'."""
    if is_cluster(report):
        return f"gpudoctor cluster report, {len(report.nodes)} node(s)"
    snap = getattr(report, "snapshot", None)
    if snap is None:
        return "gpudoctor report"
    if snap.inputs:
        return f"gpudoctor check of {len(snap.inputs)} input file(s)"
    host = snap.host.hostname if snap.host and snap.host.hostname else None
    return "gpudoctor report" + (f" of {host}" if host else "")


def hostname(report: Any) -> str | None:
    snap = getattr(report, "snapshot", None)
    return snap.host.hostname if snap is not None and snap.host is not None else None


def created_at(report: Any) -> str | None:
    snap = getattr(report, "snapshot", None)
    return getattr(report, "created_at", None) or (snap.created_at if snap is not None else None)


def timestamp(report: Any) -> float | None:
    """created_at as Unix seconds; None when absent or unreadable."""
    text = created_at(report)
    if not text:
        return None
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.timestamp()


def duration(report: Any) -> float | None:
    """Wall time of the whole job, s: the cluster's, or the scan's probes plus confirmation runs."""
    if is_cluster(report):
        return report.duration_s
    snap = getattr(report, "snapshot", None)
    if snap is None:
        return None
    total = snap.duration_s
    c = snap.confirmation
    if c is not None and c.seconds and total is not None and total != c.seconds:
        total += c.seconds
    return total


def counts(report: Any) -> dict[str, int]:
    """errors / warnings / infos over every finding; passed / not_assessed / not_applicable over every case."""
    out = {"errors": 0, "warnings": 0, "infos": 0, "passed": 0, "not_assessed": 0, "not_applicable": 0}
    for _, f in all_findings(report):
        out[{"error": "errors", "warning": "warnings", "info": "infos"}[f.severity]] += 1
    for c in cases(report):
        if c.status == "pass":
            out["passed"] += 1
        elif c.status in ("not_assessed", "not_applicable"):
            out[c.status] += 1
    return out


def verdict(report: Any, fail_on: str) -> str:
    """'FAIL' (exit code 1), 'WARN' (warnings or errors below the bar), 'OK' (nothing, or infos only)."""
    if failing(report, fail_on):
        return "FAIL"
    return "WARN" if any(f.severity != "info" for _, f in all_findings(report)) else "OK"


def probe_errors(report: Any) -> list[tuple[str | None, Any]]:
    """(node label or None, ProbeError) of the host's scan, or of every node's scan in a cluster report."""
    snap = getattr(report, "snapshot", None)
    out: list[tuple[str | None, Any]] = [(None, e) for e in (snap.probe_errors if snap is not None else [])]
    for n in getattr(report, "nodes", []) or []:
        if n.report is not None:
            out += [(n.label, e) for e in n.report.snapshot.probe_errors]
    return out


def case_name(c: Case) -> str:
    """'GPU002 GPU temperature high' (prefixed 'node1@gpu-b: ' in a cluster report)."""
    return (f"{c.node}: " if c.node else "") + f"{c.rule_id} {c.title}"
