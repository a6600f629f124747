"""One fact, one finding (issue 14 item 3): a finding that restates another rule's fact is listed inside it.

Two ways a finding restates another:

* **declared**: its rule names the other in ``follows`` (rules/rule_meta.toml for fact rules, a signature's
  ``follows`` in rules/signatures.toml when it names a fact rule), about the same subject when both name one: torch
  seeing no GPU (TRC005) because its CUDA runtime needs a newer driver (TRC003); the log's "driver too old" warning
  (SIG002) beside collect_env's versions (TRC003); a debugging variable set (NCL005) to a value NCCL misreads (NCL013);
* **the same line**: a signature matched the very line a fact rule quotes in its evidence (nvidia-smi's "Failed to
  initialize NVML: ..." is both DRV001's NVML fact and the nvidia-smi signature's match).

The finding kept is the one the other follows (declared), or the fact rule's (same line: it weighed the other inputs,
e.g. /proc/driver/nvidia/version); it gets one evidence line naming the folded rule and that rule's conclusions. A
finding more severe than the one it would fold into is not folded: the two disagree (collect_env's driver runs the
wheel's CUDA, a log from another host says the driver is too old), and both are reported. Signatures folded into
signatures, and into the log rules of RULE_CAUSES, are handled
inside rules/logs.py before this pass.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from gpudoctor.facts.findings import SEVERITY_ORDER, Finding

_MIN_SAME = 20  # characters a quoted line must have to count as the same line (not a word both happen to contain)
_MATCHED = "matched ("
_SPACE = re.compile(r"\s+")


def fold_restated(findings: list[Finding], follows: Mapping[str, tuple[str, ...]],
                  generic: Mapping[str, tuple[str, str]] | None = None) -> list[Finding]:
    """``findings`` without those that restate another's fact, each listed in the one it restates (module docstring).
    ``follows``: rule id -> the rule ids it declares it follows; ``generic``: rule id -> its default (title, fix): a
    kept finding that says no more than those takes the title and fix of the signature folded into it (nvidia-smi's
    "couldn't communicate with the driver" names the fix better than "no usable driver"). Changes only the kept
    findings' evidence, data, severity and (generic) title and remedy; the order of the kept findings is unchanged."""
    by_rule: dict[str, list[Finding]] = {}
    for f in findings:
        by_rule.setdefault(f.rule_id, []).append(f)
    folded: set[int] = set()
    for f in findings:
        declared = _declared_host(f, by_rule, follows) if _plain(f, generic) else None
        host = declared or _same_line_host(f, findings)
        if host is None or id(host) in folded or any(r in by_rule for r in follows.get(host.rule_id, ())):
            continue  # a host that itself restates something present stays as it is (no chains, no cycles)
        if SEVERITY_ORDER[host.severity] < SEVERITY_ORDER[f.severity]:
            continue  # they disagree (collect_env's driver runs this CUDA, a log from elsewhere says too old): both
        folded.add(id(f))
        _absorb(host, f, (generic or {}).get(host.rule_id))
    return [f for f in findings if id(f) not in folded]


def _plain(f: Finding, generic: Mapping[str, tuple[str, str]] | None) -> bool:
    """Whether ``f`` says no more than its rule's default title: a finding that names a cause of its own (a case's
    title: 'CUDA_VISIBLE_DEVICES hides every GPU') is not the same fact as the one its rule follows."""
    default = (generic or {}).get(f.rule_id)
    return default is None or f.title == default[0]


def _declared_host(f: Finding, by_rule: dict[str, list[Finding]], follows) -> Finding | None:
    """The first finding of a rule ``f`` follows; about the same subject when both name one (NCL005's finding on
    NCCL_BUFFSIZE restates NCL013's on NCCL_BUFFSIZE, not its finding on another variable)."""
    for target in follows.get(f.rule_id, ()):
        if target == f.rule_id:
            continue
        for host in by_rule.get(target, ()):
            if f.subject is None or host.subject is None or host.subject == f.subject:
                return host
    return None


def _same_line_host(f: Finding, findings: list[Finding]) -> Finding | None:
    """The first fact-rule finding quoting a line signature finding ``f`` matched."""
    if not f.rule_id.startswith("SIG"):
        return None
    lines = [_norm(e) for e in _matched_lines(f)]
    lines = [m for m in lines if len(m) >= _MIN_SAME]
    for host in findings:
        if host is f or host.rule_id.startswith(("SIG", "LOG")):
            continue
        quoted = [_norm(e.split(": ", 1)[1] if ": " in e else e) for e in host.evidence]
        if any(len(q) >= _MIN_SAME and (q in m or m in q) for q in quoted for m in lines):
            return host
    return None


def _matched_lines(f: Finding) -> list[str]:
    """The log lines a signature finding quotes: the indented lines after its 'matched (...):' line."""
    out, inside = [], False
    for e in f.evidence:
        if e.startswith(_MATCHED):
            inside = True
        elif inside and e.startswith("  "):
            out.append(e.strip())
        else:
            inside = False
    return out


def _conclusions(f: Finding) -> list[str]:
    """What finding ``f`` concluded beyond the lines it quotes: a signature's conclusion, a fact rule's first
    evidence line."""
    if f.rule_id.startswith("SIG"):
        return [f.data["conclusion"]] if f.data.get("conclusion") else []
    return f.evidence[:1]


def _absorb(host: Finding, f: Finding, generic: tuple[str, str] | None) -> None:
    if generic is not None and (host.title, host.remedy) == generic and f.rule_id.startswith("SIG"):
        host.title, host.remedy = f.title, f.remedy
    said = "; ".join(_conclusions(f) + [x for x in _matched_lines(f)[:2] if not any(x in e for e in host.evidence)])
    host.evidence.append(f"the same fact, also reported by {f.rule_id} ({f.title})" + (f": {said}" if said else ""))
    host.data.setdefault("restated_by", []).append(f.rule_id)


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()
