"""Topology and interconnect rules (family TOP): shared helpers and source links.

The rules: :mod:`~gpudoctor.rules.topology_nvlink` (NVLink, P2P, NVSwitch), :mod:`~gpudoctor.rules.topology_pcie`
(PCIe paths, ACS, IOMMU), :mod:`~gpudoctor.rules.topology_rdma` (InfiniBand/RoCE, NICs, NCCL network variables).

Facts come from ``snapshot.topology`` (see gpudoctor.probes.topology) plus NVML, host,
memory and environment facts. Tables (bandwidths, expected NVLink counts) live in
rules/topology.toml with their sources.
"""
from __future__ import annotations

from gpudoctor.facts import topology as T
from gpudoctor.rules.engine import NotApplicable, NotAssessed


def _topo(ctx):
    t = ctx.snap.topology
    if t is None:
        raise NotAssessed(ctx.missing("topology", "nvidia-smi topo -m or sudo lspci -vvv"))
    return t


def _n_gpus(ctx, topo) -> int:
    n = T.gpu_count(topo, ctx.snap.nvml)
    if n is None:
        raise NotAssessed("GPU count unknown (no NVML, no topo matrix)")
    return n


def _multi_gpu(ctx, topo) -> int:
    n = _n_gpus(ctx, topo)
    if n < 2:
        raise NotApplicable(f"{n} GPU(s): no GPU-to-GPU traffic on this host")
    return n


def _is_vm(ctx) -> bool | None:
    h = ctx.snap.host
    return None if h is None else bool(h.virtualization)


def _pairs_text(pairs, limit: int = 8) -> str:
    items = [f"GPU{p.a}-GPU{p.b} {p.relation or p.link_class}" for p in pairs]
    more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _env(ctx) -> dict[str, str]:
    return ctx.snap.env.variables if ctx.snap.env else {}


def _busy(ctx) -> bool | None:
    nv = ctx.snap.nvml
    if nv is None or not nv.available or not nv.gpus:
        return None
    return any(bool(g.utilization_gpu_pct) and "GpuIdle" not in g.clock_event_reasons for g in nv.gpus)


def _ib(ctx):
    topo = _topo(ctx)
    if topo.ib_present is None:
        raise NotAssessed("InfiniBand facts missing")
    if not topo.ib_present:
        raise NotApplicable("no RDMA device (/sys/class/infiniband absent or empty)")
    return topo


def _active_rdma(topo) -> list:
    return [p for p in topo.ib_ports if p.state == "ACTIVE"]
