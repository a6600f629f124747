"""Topology rules (family TOP), RDMA and NICs: TOP008 (IB ports), TOP009 (NCCL_IB_DISABLE), TOP010
(NCCL_SOCKET_IFNAME), TOP011 (NIC locality), TOP012 (GPUDirect prerequisites).

Shared helpers and source links: :mod:`gpudoctor.rules.topology`; tables: rules/topology.toml."""
from __future__ import annotations

from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule
from gpudoctor.rules.nccl_env import _socket_if_match, multi_node
from gpudoctor.rules.topology import (
    _active_rdma,
    _env,
    _ib,
    _topo,
)


@rule("TOP008")
def ib_ports(ctx):
    """Reads state, phys_state, rate and link layer of every port in /sys/class/infiniband; flags ports that are
    not ACTIVE and ACTIVE ports slower than the fastest port of the same HCA type and link layer."""
    topo = _ib(ctx)
    best: dict[tuple, float] = {}
    for p in topo.ib_ports:
        if p.state == "ACTIVE" and p.rate_gbps:
            k = (p.hca_type, p.link_layer)
            best[k] = max(best.get(k, 0.0), p.rate_gbps)
    for p in topo.ib_ports:
        name = f"{p.device} port {p.port}"
        if p.state != "ACTIVE":
            hint = " (link up, not active: no subnet manager?)" if (p.phys_state or "").lower() == "linkup" else ""
            phys = f", physical {p.phys_state}" if p.phys_state else ""
            yield ctx.finding([f"{name}: state {p.state}{phys}{hint}"], subject=name,
                              data=p.model_dump())
            continue
        top = best.get((p.hca_type, p.link_layer))
        if p.rate_gbps and top and p.rate_gbps < top:
            yield ctx.finding([f"{name}: {p.rate_text}, while {p.hca_type or 'same-type'} ports reach {top:g} Gb/s"],
                              subject=name, data={**p.model_dump(), "peer_rate_gbps": top})


@rule("TOP009")
def ib_disabled(ctx):
    """Flags NCCL_IB_DISABLE=1 when an RDMA port is ACTIVE; severity warning when WORLD_SIZE > LOCAL_WORLD_SIZE or
    SLURM_NNODES > 1, info on one node or when the job size is unknown."""
    env = ctx.env()
    if env.get("NCCL_IB_DISABLE", "").strip() != "1":
        return
    topo = _ib(ctx)
    act = _active_rdma(topo)
    if not act:
        return
    mn = multi_node(env)
    yield ctx.finding(["NCCL_IB_DISABLE=1",
                       "active RDMA ports: " + ", ".join(f"{p.device}/{p.port} {p.link_layer} {p.rate_text}"
                                                         for p in act[:6]),
                       "multi-node job (launcher variables)" if mn else
                       "job spans one node or its size is unknown: harmless inside one node"],
                      subject="NCCL_IB_DISABLE", severity="warning" if mn else "info", data={"multi_node": mn})


@rule("TOP010")
def socket_ifname(ctx):
    """Matches NCCL_SOCKET_IFNAME against /sys/class/net with NCCL's prefix, '^' (exclude) and '=' (exact) rules:
    error when it selects no interface, warning for list entries that match nothing."""
    env = ctx.env()
    spec = env.get("NCCL_SOCKET_IFNAME")
    if not spec:
        return
    topo = _topo(ctx)
    names = [i.name for i in topo.net_ifaces]
    if not names:
        raise NotAssessed("network interfaces unknown (/sys/class/net not read)")
    exclude, selected, dead = _socket_if_match(spec, names)
    usable = [n for n in selected if n != "lo"] or selected
    if not usable:
        yield ctx.finding([f"NCCL_SOCKET_IFNAME={spec} selects no interface; interfaces: {', '.join(names)}"],
                          subject="NCCL_SOCKET_IFNAME", data={"interfaces": names, "selected": selected})
    elif dead and not exclude:
        yield ctx.finding([f"NCCL_SOCKET_IFNAME={spec}: {', '.join(dead)} match no interface (uses "
                           f"{', '.join(selected)}); interfaces: {', '.join(names)}"],
                          subject="NCCL_SOCKET_IFNAME", severity="warning",
                          data={"interfaces": names, "selected": selected, "unmatched": dead})


@rule("TOP011")
def nic_locality(ctx):
    """For each GPU, the closest NIC in the topo matrix (PIX < PXB < PHB < NODE < SYS), or the NUMA nodes of the
    RDMA devices in sysfs: flags GPUs whose best NIC is SYS / on another NUMA node. Warning for multi-node jobs,
    info otherwise."""
    topo = _topo(ctx)
    from gpudoctor.parsers.topo import RELATION_RANK, link_class

    m = topo.matrix
    far: list[str] = []
    detail: dict[str, str] = {}
    if m and m.nics:
        for g in m.gpus:
            rels = [(RELATION_RANK.get(link_class(m.rel(g, n)) or "SYS", 9), m.rel(g, n), n) for n in m.nics
                    if m.rel(g, n)]
            if not rels:
                continue
            best = min(rels)
            detail[g] = f"{best[1]} to {m.info[best[2]].nic_name or best[2]}"
            if link_class(best[1]) == "SYS":
                far.append(g)
    elif topo.ib_ports:
        nic_numa = {p.numa_node for p in topo.ib_ports if p.numa_node is not None}
        nv = ctx.snap.nvml
        if not nic_numa or not nv or not nv.available:
            raise NotAssessed("NUMA nodes of GPUs or NICs unknown")
        for g in nv.gpus:
            if g.numa_node is not None:
                detail[f"GPU{g.index}"] = f"NUMA {g.numa_node}"
                if g.numa_node not in nic_numa:
                    far.append(f"GPU{g.index}")
    else:
        raise NotApplicable("no RDMA NIC in the topology")
    if not far:
        return
    mn = multi_node(_env(ctx))
    yield ctx.finding([f"{', '.join(far)}: closest NIC is across the CPU interconnect (" +
                       "; ".join(f"{g} {detail[g]}" for g in far[:8]) + ")",
                       "multi-node job" if mn else "single node or job size unknown: matters for multi-node jobs"],
                      subject=", ".join(far), severity="warning" if mn else "info", data={"gpus": far, "best": detail})


@rule("TOP012")
def rdma_prereqs(ctx):
    """With an ACTIVE RDMA port: checks that nvidia_peermem / nv_peer_mem is loaded (/proc/modules) and that the
    memlock soft limit is unlimited."""
    topo = _ib(ctx)
    if not _active_rdma(topo):
        raise NotApplicable("no ACTIVE RDMA port")
    if topo.peermem_loaded is False:
        nv = ctx.snap.nvml
        open_km = bool(nv and nv.kernel_module and "Open Kernel Module" in nv.kernel_module)
        yield ctx.finding(["neither nvidia_peermem nor nv_peer_mem is loaded (/proc/modules)" +
                           ("; open kernel modules: DMA-BUF may provide GPUDirect RDMA instead (check NCCL's "
                            "log for 'DMA-BUF')" if open_km else "")],
                          subject="nvidia_peermem", severity="info" if open_km else "warning",
                          data={"open_kernel_module": open_km})
    mem = ctx.snap.memory
    if mem is not None and mem.memlock_soft_bytes not in (None, "unlimited"):
        yield ctx.finding([f"memlock soft limit {mem.memlock_soft_bytes} bytes "
                           f"({mem.memlock_soft_bytes // 1024} KiB), not unlimited"],
                          subject="memlock", data={"memlock_soft_bytes": mem.memlock_soft_bytes})
