"""What the CLU rules share: the cluster rule context and the 'which nodes differ from the majority' helpers."""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from gpudoctor.facts.cluster import AllReduceResult, NodeEntry, PairwiseResult
from gpudoctor.rules.engine import Ctx, NotApplicable, NotAssessed, RuleSpec

MAX_LISTED = 8


class ClusterCtx(Ctx):
    """What a cluster rule sees: every node entry, the all-reduce and the pairwise results."""

    def __init__(self, nodes: Sequence[NodeEntry], spec: RuleSpec, allreduce: AllReduceResult | None = None,
                 pairwise: PairwiseResult | None = None):
        super().__init__(None, spec)  # type: ignore[arg-type]
        self.nodes = list(nodes)
        self.allreduce = allreduce
        self.pairwise = pairwise

    def reported(self) -> list[NodeEntry]:
        """Nodes whose scan arrived (a node that hung later still counts); NotApplicable with fewer than two."""
        got = [n for n in self.nodes if n.report is not None]
        if len(got) < 2:
            raise NotApplicable(f"{len(got)} node(s) reported; comparing needs two or more")
        return got


def names(labels: Sequence[str]) -> str:
    """'a, b, c' with at most MAX_LISTED names, then '... and N more'."""
    labels = list(labels)
    if len(labels) <= MAX_LISTED:
        return ", ".join(labels)
    return ", ".join(labels[:MAX_LISTED]) + f" ... and {len(labels) - MAX_LISTED} more"


def split_majority(values: dict[str, Hashable], order: Sequence[str]):
    """Group node labels by value. Returns (majority value, {value: [labels]}) with groups in node order.

    The majority is the value held by most nodes; a tie goes to the value of the first node in ``order``.
    """
    groups: dict[Hashable, list[str]] = defaultdict(list)
    for label in order:
        if label in values:
            groups[values[label]].append(label)
    counts = Counter({v: len(ls) for v, ls in groups.items()})
    top = max(counts.values())
    majority = next(v for v in groups if counts[v] == top)  # dict keeps first-seen (node) order
    return majority, dict(groups)


def differ(ctx: ClusterCtx, what: str, get: Callable[[NodeEntry], Any], show: Callable[[Any], str] = str,
           subject: str | None = None):
    """One finding when ``get(node)`` is not the same on every reported node that knows it (None = unknown)."""
    nodes = ctx.reported()
    order = [n.label for n in nodes]
    values = {}
    unknown = []
    for n in nodes:
        v = get(n)
        if v is None:
            unknown.append(n.label)
        else:
            values[n.label] = v
    if len(values) < 2:
        raise NotAssessed(f"{what} known on {len(values)} node(s)")
    majority, groups = split_majority(values, order)
    if len(groups) == 1:
        return None
    tie = sum(len(ls) == len(groups[majority]) for ls in groups.values()) > 1
    tag = " (reference: no majority, lowest node rank)" if tie else " (majority)"
    odd = [label for v, ls in groups.items() if v != majority for label in ls]
    evidence = [f"{what} {show(v)} on {len(ls)} node{'s' * (len(ls) != 1)}: {names(ls)}"
                + (tag if v == majority else "") for v, ls in groups.items()]
    if unknown:
        evidence.append(f"{what} unknown on {names(unknown)}")
    return ctx.finding(evidence, subject=subject or f"{what}: {names(odd)}",
                       data={"what": what, "majority": show(majority), "tie": tie, "odd_nodes": odd,
                             "values": {label: show(v) for label, v in values.items()}})


def _differ_all(ctx, checks, none_reason: str, show: Callable[[Any], str] | None = None,
                when_none: type[Exception] = NotAssessed) -> list:
    """Run :func:`differ` for each (what, value-of-node) pair; the findings of those that differ.

    Raises ``when_none(none_reason)`` (default NotAssessed) when no check could be assessed."""
    out, assessed = [], 0
    for what, value in checks:
        try:
            f = differ(ctx, what, value, show=show) if show is not None else differ(ctx, what, value)
        except NotAssessed:
            continue
        assessed += 1
        if f:
            out.append(f)
    if not assessed:
        raise when_none(none_reason)
    return out


def _nvml(n: NodeEntry):
    s = n.report.snapshot if n.report else None
    return s.nvml if s else None


def _torch(n: NodeEntry):
    s = n.report.snapshot if n.report else None
    t = s.torch if s else None
    return t if t is not None and t.installed else None
