"""Findings, per-rule outcomes and the report document (snapshot + findings)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gpudoctor.facts.model import SCHEMA_VERSION, Snapshot

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"info": 1, "warning": 2, "error": 3}


class Finding(BaseModel):
    """One problem (or note) a rule found, with the facts that show it and the fix."""

    rule_id: str
    severity: Severity
    area: str
    title: str
    subject: str | None = Field(None, description="what it is about, e.g. 'GPU 0' or 'NCCL_ALGO'")
    evidence: list[str] = Field(description="the facts, with units, that make the rule fire")
    remedy: str
    sources: list[str] = Field(description="vendor documentation URL(s) and checklist ids the rule rests on")
    data: dict[str, Any] = Field(default_factory=dict, description="the evidence as machine-readable values")


class RuleOutcome(BaseModel):
    """How one rule ended: pass, fail (with findings), not assessed (facts missing) or not applicable."""

    rule_id: str
    area: str
    title: str
    check: str | None = Field(None, description="the healthy state the rule checks for, e.g. 'MIG disabled'")
    status: Literal["pass", "fail", "not_assessed", "not_applicable"]
    reason: str | None = None


class Summary(BaseModel):
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    passed: int = 0
    not_assessed: int = 0
    not_applicable: int = 0
    probe_errors: int = 0


class Report(BaseModel):
    """The document `gpudoctor scan --json` prints and `--save` writes."""

    schema_version: str = SCHEMA_VERSION
    kind: Literal["gpudoctor-report"] = "gpudoctor-report"
    snapshot: Snapshot
    findings: list[Finding] = Field(default_factory=list)
    outcomes: list[RuleOutcome] = Field(default_factory=list)
    summary: Summary = Field(default_factory=Summary)
