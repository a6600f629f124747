"""The rule engine: rules register with their metadata (rules/rule_meta.toml); ``evaluate`` runs them over a snapshot.

A rule is a function ``f(ctx) -> Iterable[Finding] | None``. It yields findings built
with ``ctx.finding(...)``; it raises :class:`NotAssessed` when the facts it needs are
missing (never a silent pass) and :class:`NotApplicable` when the check does not
apply to this host (e.g. PCIe rules without GPUs). No findings and no exception = pass.
"""
from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from gpudoctor.compat import data
from gpudoctor.facts.findings import Finding, Report, RuleOutcome, Severity, Summary
from gpudoctor.facts.known import state_of
from gpudoctor.facts.model import Snapshot
from gpudoctor.rules.families import AREAS, BY_PREFIX  # noqa: F401 (AREAS re-exported: the report's section order)
from gpudoctor.rules.order import cause_first
from gpudoctor.rules.restated import fold_restated


class NotAssessed(Exception):
    """The facts this rule needs are missing; the report says so (never a pass)."""


class NotApplicable(Exception):
    """The rule does not apply to this host."""


@dataclass(frozen=True)
class RuleSpec:
    """A rule's metadata; the docs page and ``gpudoctor explain`` are generated from it."""

    id: str
    area: str
    severity: Severity
    title: str
    what: str
    why: str
    fix: str
    sources: tuple[str, ...]
    ok: str
    func: Callable[[Ctx], Iterable[Finding] | None] = field(compare=False, repr=False)
    scope: str = "node"  # "node": run by evaluate() on one snapshot; "cluster": by gpudoctor.cluster over many
    follows: tuple[str, ...] = ()  # fact rules whose finding this one restates (rules/restated.py)


    @property
    def family(self) -> str:
        return "".join(c for c in self.id if c.isalpha())


REGISTRY: dict[str, RuleSpec] = {}
META = "rule_meta"  # rules/rule_meta.toml
Status = Literal["pass", "fail", "not_assessed", "not_applicable"]  # RuleOutcome.status


def define(id: str, area: str, severity: Severity, title: str, why: str, fix: str, sources: Iterable[str],
           ok: str | None = None, scope: str = "node", follows: Iterable[str] = ()):
    """Register a rule whose metadata comes from elsewhere (the SIG rules: rules/signatures.toml). Its docstring
    is the 'what it does' paragraph; ``title`` names the problem, ``ok`` the healthy state shown when it passes.

    Raises ValueError on a duplicate id or unknown area (caught at import, in tests).
    """
    if area not in AREAS:
        raise ValueError(f"unknown area {area!r}")

    def deco(func):
        if id in REGISTRY:
            raise ValueError(f"duplicate rule id {id}")
        REGISTRY[id] = RuleSpec(id=id, area=area, severity=severity, title=title,
                                what=" ".join((func.__doc__ or "").split()), why=why, fix=fix,
                                sources=tuple(sources), ok=ok or title, func=func, scope=scope,
                                follows=tuple(follows))
        return func

    return deco


def meta() -> dict[str, dict[str, Any]]:
    """The rule metadata rows of rules/rule_meta.toml, by rule id."""
    return data.load(META)


def rule(id: str):
    """Register the decorated function as rule ``id``; its metadata is the row ``[id]`` of rules/rule_meta.toml
    and its area that of the id's family (:mod:`gpudoctor.rules.families`).

    Raises ValueError for an id without a row or family, TypeError for a row with a key :func:`define` does not take.
    """
    row = meta().get(id)
    family = BY_PREFIX.get("".join(c for c in id if c.isalpha()))
    if row is None or family is None:
        raise ValueError(f"rule {id} has no row in rules/{META}.toml or no family in gpudoctor.rules.families")
    return define(id, family.area, **row)


def check_meta() -> None:
    """ValueError when a row of rules/rule_meta.toml has no registered function (call once every module is imported)."""
    orphans = sorted(set(meta()) - set(REGISTRY))
    if orphans:
        raise ValueError(f"rows of rules/{META}.toml with no @rule function: {orphans}")


class Ctx:
    """What a rule sees: the snapshot, and a helper to build findings with its metadata."""

    def __init__(self, snap: Snapshot, spec: RuleSpec):
        self.snap = snap
        self.spec = spec
        self.partial: str | None = None  # set when the rule read facts known only in part

    def known(self, section: str, field: str) -> bool:
        """True unless ``section`` was built from partial text that did not give ``field``.

        ``section`` is a Snapshot field name, or 'nvml.gpus' for GPU fields (see Snapshot.known_fields).
        """
        kf = self.snap.known_fields
        return section not in kf or field in kf[section]

    def require(self, section: str, *fields: str):
        """The section, or NotAssessed when it is missing or its text did not give one of ``fields``."""
        sec = getattr(self.snap, section.split(".")[0], None)
        if sec is None:
            raise NotAssessed(f"{section} facts missing")
        missing = [f for f in fields if not self.known(section, f)]
        if missing:
            src = getattr(sec, "source", section)
            raise NotAssessed(f"{', '.join(missing)} not in the facts (from {src})")
        return sec

    def finding(self, evidence: list[str], *, subject: str | None = None, severity: Severity | None = None,
                title: str | None = None, remedy: str | None = None, data: dict[str, Any] | None = None,
                sources: Iterable[str] | None = None) -> Finding:
        return Finding(rule_id=self.spec.id, severity=severity or self.spec.severity, area=self.spec.area,
                       title=title or self.spec.title, subject=subject, evidence=evidence,
                       remedy=remedy or self.spec.fix, sources=list(sources or self.spec.sources), data=data or {})

    # helpers used by many rules
    def missing(self, what: str, give: str) -> str:
        """Why a section's facts are absent: in `check`, what the inputs lack and what to give; in `scan`, that its
        probe failed (the probe error names why)."""
        if self.snap.inputs:
            return f"no {what} facts in the inputs ({give} has them)"
        return f"{what} facts missing (the probe failed: see the probe errors)"

    def gpus(self):
        """NVML GPUs; raises NotAssessed / NotApplicable when NVML gave none."""
        nv = self.snap.nvml
        if nv is None:
            raise NotAssessed(self.missing("GPU / NVML", "nvidia-smi -q or a saved report"))
        if not nv.available:
            # without a driver the GPUs (if any) cannot be read: unknown, not "none" (DRV001 says why)
            raise NotAssessed("NVML unusable (see DRV001): the GPUs cannot be read")
        if not nv.gpus:
            if nv.gpu_count:  # "Attached GPUs : 8" and the paste cut before the first GPU block
                raise NotAssessed(f"the input says {nv.gpu_count} GPUs but none of them is in it ({nv.source})")
            if not self.known("nvml", "gpus"):  # an excerpt that stops before the GPU rows: unknown, not none
                raise NotAssessed(f"the GPU list is not in the input ({nv.source})")
            raise NotApplicable("no NVIDIA GPU visible to NVML")
        if nv.gpu_count and nv.gpu_count > len(nv.gpus):  # e.g. "Attached GPUs : 8" with 3 blocks pasted
            self.partial = f"only {len(nv.gpus)} of the {nv.gpu_count} GPUs are in the inputs"
        return nv.gpus

    def gpus_with(self, *fields: str):
        """Like :meth:`gpus`, but NotAssessed when the GPU facts came from text lacking ``fields``."""
        gpus = self.gpus()
        self.require("nvml.gpus", *fields)
        return gpus

    def gpus_known(self, *fields: str, skip: Callable[[Any], str | None] | None = None) -> list:
        """The GPUs whose ``fields`` are all known -- the one way a rule reads a field across GPUs.

        ``skip(gpu)`` returns a reason when the check does not apply to that GPU (e.g. ECC disabled).
        GPUs with an unknown field are named in ``self.partial``, so a rule that finds nothing on the others
        says *not assessed*, never pass; NotAssessed when no GPU has them all, NotApplicable when every GPU
        is skipped.
        """
        gpus = self.gpus_with(*fields)
        known, unknown, skipped = [], [], []
        for g in gpus:
            why_not = skip(g) if skip else None
            if why_not:
                skipped.append(f"GPU {g.index}: {why_not}")
                continue
            states = [state_of(g, f) for f in fields]
            missing = [s for s in states if getattr(s, "reason", None) is not None]
            if missing:
                unknown.append(f"GPU {g.index}: {'; '.join(s.reason for s in missing)}")
            else:
                known.append(g)
        if not known and unknown:
            raise NotAssessed("unknown on every GPU: " + ", ".join(unknown))
        if not known:
            raise NotApplicable("; ".join(skipped))
        if unknown:
            self.partial = "unknown on " + ", ".join(unknown)
        return known

    def gpu_count(self) -> int:
        nv = self.snap.nvml
        return len(nv.gpus) if nv and nv.available else 0

    def env(self) -> dict[str, str]:
        if self.snap.env is None:
            raise NotAssessed("environment facts missing")
        if "env" in self.snap.known_fields:
            self.partial = f"only some variables are known ({self.snap.env.source})"
        return self.snap.env.variables


def run(spec: RuleSpec, ctx: Ctx) -> tuple[list[Finding], RuleOutcome]:
    """Run one rule: its findings and its outcome (fail / pass / not assessed / not applicable). A rule bug is
    a not-assessed outcome naming the exception and where it was raised, never a traceback."""

    def outcome(status: Status, reason: str | None = None) -> RuleOutcome:
        return RuleOutcome(rule_id=spec.id, area=spec.area, title=spec.title, check=spec.ok, status=status,
                           reason=reason)

    try:
        got = [f for f in (spec.func(ctx) or []) if f is not None]
    except (NotAssessed, NotApplicable) as exc:
        return [], outcome("not_assessed" if isinstance(exc, NotAssessed) else "not_applicable", str(exc))
    except data.RulesDataError:
        raise  # the site's rule data override is broken: the user's input, a one-line error (exit 2), not a rule bug
    except Exception as exc:  # a rule bug is reported, never a traceback
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return [], outcome("not_assessed", f"rule error: {type(exc).__name__}: {exc} ({tb.name}:{tb.lineno})")
    if not got and ctx.partial:
        return [], outcome("not_assessed", f"nothing found, but {ctx.partial}")
    return got, outcome("fail" if got else "pass")


def evaluate(snap: Snapshot, only: Iterable[str] | None = None) -> Report:
    """Run the registered rules (or the ``only`` ids) over ``snap``; return the full Report."""
    findings: list[Finding] = []
    outcomes: list[RuleOutcome] = []
    wanted = set(only) if only else None
    for spec in REGISTRY.values():
        if spec.scope != "node" or (wanted is not None and spec.id not in wanted):
            continue
        got, out = run(spec, Ctx(snap, spec))
        findings.extend(got)
        outcomes.append(out)
    findings = fold_restated(findings, {i: s.follows for i, s in REGISTRY.items() if s.follows},
                             {i: (s.title, s.fix) for i, s in REGISTRY.items()})
    findings = cause_first(findings, [i.path for i in snap.inputs])
    return Report(snapshot=snap, findings=findings, outcomes=outcomes, summary=summarize(snap, findings, outcomes))


def summarize(snap: Snapshot, findings: list[Finding], outcomes: list[RuleOutcome]) -> Summary:
    s = Summary(probe_errors=len(snap.probe_errors))
    for f in findings:
        if f.severity == "error":
            s.errors += 1
        elif f.severity == "warning":
            s.warnings += 1
        else:
            s.infos += 1
    for o in outcomes:
        if o.status == "pass":
            s.passed += 1
        elif o.status == "not_assessed":
            s.not_assessed += 1
        elif o.status == "not_applicable":
            s.not_applicable += 1
    return s
