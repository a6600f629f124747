"""Cross-node rules (family CLU): what differs between the nodes of one job, and what the inter-node tests found.

These rules have ``scope="cluster"``: single-host ``evaluate`` skips them; ``evaluate_cluster``
runs them over the node entries that ``gpudoctor cluster`` gathered on rank 0. Where values
differ, the *majority* value is taken as intended and the nodes outside it are named (ties go
to the value of the lowest node rank).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from gpudoctor.compat import data
from gpudoctor.facts.cluster import AllReduceResult, NodeEntry, PairwiseResult
from gpudoctor.facts.findings import Finding, RuleOutcome
from gpudoctor.rules.cluster_compare import (  # noqa: F401 (re-exported)
    MAX_LISTED,
    ClusterCtx,
    _differ_all,
    _nvml,
    _torch,
    differ,
    names,
    split_majority,
)
from gpudoctor.rules.engine import REGISTRY, NotApplicable, NotAssessed, rule, run


@rule("CLU001")
def driver_differs(ctx):
    """Compares NVML's driver version and the CUDA version the driver supports across nodes."""
    nodes = ctx.reported()
    if all(_nvml(n) is not None and not _nvml(n).available for n in nodes):
        raise NotApplicable("no node has a usable NVIDIA driver")
    return _differ_all(
        ctx,
        [
            (what, lambda n, a=attr: getattr(_nvml(n), a) if _nvml(n) and _nvml(n).available else None)
            for what, attr in (("driver", "driver_version"), ("CUDA driver API", "cuda_driver_version"))
        ],
        "driver version known on fewer than two nodes",
    )


@rule("CLU002")
def stack_differs(ctx):
    """Compares torch.__version__, torch.version.cuda, the NCCL and the cuDNN version torch reports, across nodes."""
    return _differ_all(ctx, [(what, lambda n, a=attr: getattr(_torch(n), a) if _torch(n) else None)
                             for what, attr in (("torch", "version"), ("torch CUDA runtime", "cuda"),
                                                ("NCCL", "nccl_version"), ("cuDNN", "cudnn_version"))],
                       "torch facts missing on all but one node")


def gpu_models(n: NodeEntry) -> tuple[str, ...] | None:
    nv = _nvml(n)
    if nv is None:
        return None
    return tuple(sorted(g.name or "?" for g in nv.gpus)) if nv.available else ()


def counted(items) -> str:
    c = Counter(items)
    return ", ".join(f"{v} × {k}" for k, v in c.items()) or "none"


@rule("CLU003")
def gpus_differ(ctx):
    """Compares the NVML GPU count and the list of GPU models across nodes (a node without a usable driver counts 0)."""
    nodes = ctx.reported()
    if all(gpu_models(n) in (None, ()) for n in nodes):
        raise NotApplicable("no node has an NVIDIA GPU")
    out = []
    f = differ(ctx, "GPU count", lambda n: None if (m := gpu_models(n)) is None else len(m))
    if f:
        out.append(f)
    f = differ(ctx, "GPU models", lambda n: gpu_models(n) or None, show=lambda v: counted(v))
    if f:
        out.append(f)
    return out


def pcie_signature(n: NodeEntry) -> tuple[str, ...] | None:
    """Each GPU's link as 'Gen<max> x<current width>' (sorted). Current generation is not used: GPUs lower it at
    idle (checklist H8); the width a link trained at does not change with load."""
    nv = _nvml(n)
    if nv is None or not nv.available or not nv.gpus:
        return None
    sig = []
    for g in nv.gpus:
        if g.pcie_gen_max is None and g.pcie_width_current is None:
            continue
        sig.append(f"Gen{g.pcie_gen_max if g.pcie_gen_max is not None else '?'} "
                   f"x{g.pcie_width_current if g.pcie_width_current is not None else '?'}")
    return tuple(sorted(sig)) or None


def ib_signature(n: NodeEntry) -> tuple[str, ...] | None:
    """Rates of the node's InfiniBand/RoCE ports (sorted; a port not ACTIVE counts as 'down'), from the topology
    section when the snapshot has one (issue 3); None when it has none."""
    snap = n.report.snapshot if n.report else None
    topo = getattr(snap, "topology", None)
    ports = getattr(topo, "ib_ports", None) if topo is not None else None
    if not ports:
        return None
    sig = []
    for p in ports:
        state = (getattr(p, "state", None) or "").upper()
        rate = getattr(p, "rate_gbps", None)
        sig.append(f"{rate:g} Gb/s" if state == "ACTIVE" and rate else "down")
    return tuple(sorted(sig))


@rule("CLU004")
def links_differ(ctx):
    """Compares each node's GPU PCIe links (max generation, trained width, per NVML) and, when the snapshot has a
    topology section, its IB port rates, with the majority of nodes."""
    return _differ_all(ctx, (("GPU PCIe links", pcie_signature), ("IB ports", ib_signature)),
                       "no link facts (no GPUs, no IB ports) on two or more nodes", show=counted,
                       when_none=NotApplicable)


NCCL_PREFIXES = ("NCCL_", "TORCH_NCCL_")


@rule("CLU005")
def nccl_env_differs(ctx):
    """Compares every NCCL_* and TORCH_NCCL_* variable (set, unset, value) across nodes."""
    nodes = ctx.reported()
    envs = {}
    for n in nodes:
        env = n.report.snapshot.env
        if env is not None:
            envs[n.label] = {k: v for k, v in env.variables.items() if k.startswith(NCCL_PREFIXES)}
    if len(envs) < 2:
        raise NotAssessed("environment facts missing on all but one node")
    out = []
    for var in sorted({k for e in envs.values() for k in e}):
        def value(n: NodeEntry, var: str = var) -> str | None:
            return envs[n.label].get(var, "(unset)") if n.label in envs else None
        f = differ(ctx, var, value, subject=var)
        if f:
            out.append(f)
    return out


@rule("CLU006")
def clock_skew(ctx):
    """Flags nodes whose wall-clock offset from rank 0 (ping-pong over the process group, corrected by half the
    round trip) exceeds the threshold by more than the measurement's uncertainty."""
    nodes = ctx.reported()
    measured = [n for n in nodes if n.clock_offset_ms is not None]
    if len(measured) < 2:
        raise NotAssessed("clock offsets not measured (no process group formed, or it failed)")
    limit = float(data.load("cluster")["clock"]["max_offset_ms"])
    for n in measured:
        unc = n.clock_uncertainty_ms or 0.0
        if abs(n.clock_offset_ms) - unc > limit:
            yield ctx.finding([f"{n.label}: clock {n.clock_offset_ms:+.1f} ms from rank 0 (± {unc:.2f} ms), "
                               f"limit {limit:g} ms"], subject=n.label,
                              data={"offset_ms": n.clock_offset_ms, "uncertainty_ms": unc, "limit_ms": limit})


@rule("CLU007")
def missing_nodes(ctx):
    """Names every node that did not join within the timeout (missing) or joined and then went silent (hung)."""
    for n in ctx.nodes:
        if n.status in ("missing", "hung"):
            yield ctx.finding([f"{n.label}: {n.status}" + (f" — {n.detail}" if n.detail else "")], subject=n.label,
                              title="Node never joined" if n.status == "missing" else "Node hung",
                              data={"status": n.status, "last_phase": n.last_phase})


@rule("CLU008")
def slow_pairs(ctx):
    """Reports the nodes whose pairwise tests were all slow, and slow pairs not explained by a slow node."""
    pw = ctx.pairwise
    if sum(n.status != "missing" for n in ctx.nodes) < 2:
        raise NotApplicable("fewer than two nodes took part")
    if pw is None or not pw.pairs:
        raise NotAssessed("no node-to-node tests ran (fewer than two nodes, --no-confirm, or an earlier failure)")
    ref = pw.reference_busbw_gbs
    by_node: dict[str, list] = defaultdict(list)
    for p in pw.pairs:
        by_node[p.a].append(p)
        by_node[p.b].append(p)

    def show(p):
        return (f"{p.a} ↔ {p.b}: " + (f"error: {p.error}" if p.error else f"busbw {p.busbw_gbs:.3g} GB/s")
                + (" (slow)" if p.slow else ""))

    ref_txt = f"reference {ref:.3g} GB/s × {pw.slow_fraction:g}" if ref else "no pair completed"
    for node in pw.slow_nodes:
        yield ctx.finding([f"every pair of {node} was slow ({ref_txt}):"] + [show(p) for p in by_node[node]],
                          subject=node, title="Slow node", data={"kind": "node", "node": node})
    for a, b in pw.slow_links:
        p = next(p for p in pw.pairs if {p.a, p.b} == {a, b})
        yield ctx.finding([show(p) + f"; {ref_txt}; both nodes are fine with other partners"],
                          subject=f"{a} ↔ {b}", title="Slow link", data={"kind": "link", "nodes": [a, b]})
    for a, b in pw.unattributed:
        p = next(p for p in pw.pairs if {p.a, p.b} == {a, b})
        yield ctx.finding([show(p) + f"; {ref_txt}; too few other pairs to tell which end is at fault"],
                          subject=f"{a} ↔ {b}", severity="warning", title="Slow pair",
                          data={"kind": "pair", "nodes": [a, b]})


@rule("CLU009")
def allreduce_failed(ctx):
    """Flags an all-reduce across nodes that raised, timed out, or whose check sum was wrong."""
    ar = ctx.allreduce
    if ar is None and sum(n.status != "missing" for n in ctx.nodes) < 2:
        raise NotApplicable("fewer than two nodes took part")
    if ar is None:
        raise NotAssessed("no all-reduce across nodes ran (fewer than two nodes or --no-confirm)")
    if ar.error:
        yield ctx.finding([f"all-reduce over {ar.ranks} ranks on {ar.nodes} nodes ({ar.backend}): {ar.error}"],
                          subject=f"{ar.nodes} nodes")
    elif ar.correct is False:
        yield ctx.finding([f"check all-reduce over {ar.ranks} ranks returned a wrong sum"], subject=f"{ar.nodes} nodes")


def evaluate_cluster(nodes: Sequence[NodeEntry], allreduce: AllReduceResult | None = None,
                     pairwise: PairwiseResult | None = None) -> tuple[list[Finding], list[RuleOutcome]]:
    """Run every cluster-scope rule; a rule bug becomes a not-assessed outcome, never a traceback."""
    findings: list[Finding] = []
    outcomes: list[RuleOutcome] = []
    for spec in REGISTRY.values():
        if spec.scope != "cluster":
            continue
        got, out = run(spec, ClusterCtx(nodes, spec, allreduce, pairwise))
        findings.extend(got)
        outcomes.append(out)
    return findings, outcomes
