"""Topology rules (family TOP), NVLink and GPU-to-GPU paths: TOP001 (no NVLink), TOP002 (cross-socket pairs), TOP006
(NVLink health), TOP007 (NVSwitch fabric), TOP013 (topo vs NVML).

Shared helpers and source links: :mod:`gpudoctor.rules.topology`; tables: rules/topology.toml."""
from __future__ import annotations

from collections import Counter

from gpudoctor.compat import data
from gpudoctor.facts import topology as T
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule
from gpudoctor.rules.topology import (
    _multi_gpu,
    _n_gpus,
    _pairs_text,
    _topo,
)


@rule("TOP001")
def no_nvlink(ctx):
    """Groups GPUs by NVLink connectivity (NV# in topo -m, NVSwitch links, NVML P2P NVLink status); more than
    one group means the ring crosses PCIe. Estimates the all-reduce time of BERT-base gradients at the PCIe
    line rate (a lower bound on time) and notes pairs whose P2P status is not OK."""
    topo = _topo(ctx)
    n = _multi_gpu(ctx, topo)
    pairs = T.gpu_pairs(topo)
    if not pairs and not topo.nvlinks:
        raise NotAssessed("no GPU pair facts (no topo matrix, no NVML pairs)")
    groups = T.nvlink_components(topo, n)
    if len(groups) == 1:
        return
    cross = [p for p in pairs if not any(p.a in g and p.b in g for g in groups)]
    t = data.load("topology")
    ex = t["allreduce_example"]
    bw, basis = T.gpu_link_gbs(topo, ctx.snap.nvml)
    assumed = False
    if bw is None:
        bw, basis, assumed = T.pcie_gbs(16.0, 16), "PCIe Gen4 x16 (assumed: GPU link unknown)", True
        assert bw is not None  # Gen4 x16 is in rules/topology.toml's PCIe table
    ms = T.allreduce_ms(ex["bytes"], n, bw)
    gtxt = " | ".join("GPU" + ",".join(str(i) for i in sorted(g)) for g in sorted(groups, key=min))
    ev = [f"{n} GPUs in {len(groups)} NVLink groups: {gtxt}" if any(len(g) > 1 for g in groups)
          else f"{n} GPUs, no NVLink between any of them",
          f"pairs crossing PCIe: {_pairs_text(cross)}",
          f"all-reduce of {ex['name']} ({ex['bytes'] / 1e6:.0f} MB) over {n} GPUs at {basis} "
          f"({bw:g} GB/s per direction): >= {ms:.1f} ms per step (ring: S x 2(n-1)/n / busbw)"]
    no_p2p = [p for p in cross if p.p2p_ok is False]
    if no_p2p:
        ev.append("P2P not available (NVML read/write status): " + ", ".join(
            f"GPU{p.a}-GPU{p.b} read {p.p2p.get('read')} write {p.p2p.get('write')}" for p in no_p2p[:8]) +
                  " -> NCCL stages GPU-to-GPU traffic through host memory (SHM)")
    yield ctx.finding(ev, subject=f"{n} GPUs", data={
        "groups": [sorted(g) for g in groups], "cross_pairs": [[p.a, p.b, p.relation or p.link_class] for p in cross],
        "allreduce_bytes": ex["bytes"], "link_gbs": bw, "link_basis": basis, "link_assumed": assumed,
        "allreduce_ms_min": round(ms, 2), "no_p2p_pairs": [[p.a, p.b] for p in no_p2p],
        "bandwidth_source": t["pcie"]["source"]})


@rule("TOP002")
def cross_socket(ctx):
    """Lists GPU pairs whose best path is SYS (topo -m, or NVML common ancestor SYSTEM) and that are not in the
    same NVLink group (a DGX-1 cube mesh reaches SYS pairs over NVLink), and shows each GPU's NUMA affinity."""
    topo = _topo(ctx)
    _multi_gpu(ctx, topo)
    pairs = T.gpu_pairs(topo)
    if not pairs:
        raise NotAssessed("no GPU pair facts (no topo matrix, no NVML pairs)")
    groups = T.nvlink_components(topo, _n_gpus(ctx, topo))
    same = {(a, b) for g in groups for a in g for b in g}
    sys_pairs = [p for p in pairs if p.link_class == "SYS" and (p.a, p.b) not in same]
    if not sys_pairs:
        return  # no SYS pair, or SYS pairs whose GPUs still reach each other over NVLink (hybrid cube mesh)
    ev = [f"{len(sys_pairs)} of {len(pairs)} GPU pairs are SYS: {_pairs_text(sys_pairs)}"]
    m = topo.matrix
    if m:
        numa = {g: m.info[g].numa_affinity for g in m.gpus if m.info[g].numa_affinity is not None}
        if numa:
            ev.append("NUMA affinity: " + ", ".join(f"{g} {v}" for g, v in numa.items()))
    yield ctx.finding(ev, subject="GPU pairs", data={"pairs": [[p.a, p.b] for p in sys_pairs], "total": len(pairs)})


def _uneven_nvlinks(m) -> tuple[dict[str, int], int] | None:
    """From a topo -m matrix: the GPUs whose NVLink total (sum of NV# over their row, links) is below the total
    most GPUs with NVLink share, and that total; None when fewer than three GPUs have NVLink, a row is missing or
    no total is held by a strict majority (two bridged pairs with different bridges are not a fault).

    On an NVSwitch baseboard every pair shows the links of the GPUs (NV18 on HGX H100/H200), on a cube mesh
    (DGX-1) the pairs differ but every GPU's total is its link count, so a lower total means links down."""
    if m is None or m.truncated or m.missing_rows:
        return None
    gpus = m.gpus
    totals = {g: sum(T.nvlink_count(m.rel(g, h)) for h in gpus if h != g) for g in gpus}
    with_nv = {g: t for g, t in totals.items() if t > 0}
    if len(with_nv) < 3:
        return None
    common, count = Counter(with_nv.values()).most_common(1)[0]
    if count * 2 <= len(with_nv):
        return None
    low = {g: t for g, t in with_nv.items() if t < common}
    return (low, common) if low else None


def _matrix_evidence(m, low: dict[str, int], common: int) -> list[str]:
    others = [g for g in m.gpus if g not in low]
    peer_rels = sorted({m.rel(a, b) or "?" for a in others for b in others if a != b})
    ev = []
    for g, t in list(low.items())[:8]:
        rels = sorted({m.rel(g, h) or "?" for h in m.gpus if h != g})
        ev.append(f"{g}: {'/'.join(rels)} to its peers, pairs among the other GPUs show {'/'.join(peer_rels)} "
                  f"(NV# summed over its row: {t}, the other GPUs {common})")
    return ev


@rule("TOP006")
def nvlink_health(ctx):
    """Counts active NVLinks per GPU (NVML) against the expected count for known SKUs (rules/topology.toml), lists
    inactive links; CRC/replay/recovery counters that rose during the confirmation runs are a warning, counts
    that are only cumulative since the driver loaded a note. Without NVML's link state, a GPU whose NV# total in
    `nvidia-smi topo -m` is below the other GPUs' is a GPU with links down."""
    topo = ctx.snap.topology
    uneven = _uneven_nvlinks(topo.matrix if topo else None)
    if uneven and not (topo and topo.nvlinks) and (ctx.snap.nvml is None or not ctx.known("nvml.gpus", "nvlinks")):
        low, common = uneven
        yield ctx.finding(_matrix_evidence(topo.matrix, low, common), subject=", ".join(low),
                          title="NVLinks down: fewer than on the other GPUs",
                          data={"gpus": low, "expected": common, "expected_source": "the other GPUs in topo -m"})
        return
    gpus = ctx.gpus()
    if len(gpus) < 2:
        raise NotApplicable("1 GPU: NVLink not used")
    detail: dict[int | None, list] = {}
    for d in (topo.nvlinks if topo else []):
        detail.setdefault(d.gpu, []).append(d)
    any_links = bool(detail) or any(g.nvlinks for g in gpus)
    expectations = [T.expected_nvlinks(g.name) for g in gpus]
    if not any_links and not any(expectations):
        raise NotApplicable("no NVLink on these GPUs")
    if not detail and not ctx.known("nvml.gpus", "nvlinks"):
        # GPUs known from text that says nothing about NVLink (nvidia-smi -L, --query-gpu CSV): unknown, not "0 links"
        raise NotAssessed("the NVLink state is not in the inputs (`nvidia-smi nvlink -s` or a saved report gives it)")
    for g, exp in zip(gpus, expectations, strict=False):
        links = detail.get(g.index) or g.nvlinks
        active = [x.link for x in links if x.active]
        down = [x.link for x in links if not x.active]
        ev = []
        if down:
            ev.append(f"GPU {g.index} ({g.name}): links down: {', '.join(map(str, down))}")
        if exp and len(active) < exp[0]:
            ev.append(f"GPU {g.index} ({g.name}): {len(active)} active NVLinks, expected {exp[0]} for this model")
        errs = {f"link {x.link} {k}": v for x in detail.get(g.index, []) for k, v in x.errors.items() if v}
        rose = {f"link {x.link} {k}": (x.errors.get(k, 0), v) for x in detail.get(g.index, [])
                if x.errors_after is not None for k, v in x.errors_after.items() if v > x.errors.get(k, 0)}
        rechecked = any(x.errors_after is not None for x in detail.get(g.index, []))
        if ev:
            yield ctx.finding(ev, subject=f"GPU {g.index}", data={"active": active, "down": down,
                                                                  "expected": exp[0] if exp else None,
                                                                  "expected_source": exp[1] if exp else None})
        if rose:
            yield ctx.finding([f"GPU {g.index}: " + ", ".join(f"{k} {a} -> {b} (+{b - a})" for k, (a, b) in
                                                             list(rose.items())[:10]),
                               "the counters rose while the confirmation runs' all-reduce loaded the links"],
                              subject=f"GPU {g.index}", severity="warning", title="NVLink errors rose under load",
                              data={"rose": {k: b - a for k, (a, b) in rose.items()}})
        elif errs:
            # cumulative since the driver loaded: DCGM reads NVLink error counters as "did the total increase
            # during an interval" (DCGM docs, Topology and NVLink), so a static count is a note, not a fault; the
            # all-reduce of the confirmation runs (CNF003 busbw) is the test of the link under load
            yield ctx.finding([f"GPU {g.index}: " + ", ".join(f"{k}={v}" for k, v in list(errs.items())[:10]) +
                               " (counts since the driver loaded)",
                               "unchanged after the confirmation runs loaded the links" if rechecked else
                               "a count that rises between two readings around a load (`nvidia-smi nvlink -e`, or "
                               "`dcgmi nvlink -e`) is the sign of a bad link; a static one is not"],
                              subject=f"GPU {g.index}", severity="info", title="NVLink error counters non-zero",
                              data={"errors": errs})


@rule("TOP007")
def fabric_not_ready(ctx):
    """Reads NVML's GPU fabric info per GPU (versioned struct, isolated worker): state not started / in progress,
    or completed with a failure status, or an unhealthy summary."""
    topo = _topo(ctx)
    ctx.gpus()
    if not topo.fabric:
        errs = {k: v for k, v in topo.errors.items() if k.startswith("nvml_fabric")}
        if errs:
            raise NotAssessed("fabric info unreadable: " + "; ".join(errs.values()))
        raise NotAssessed("no fabric facts")
    if all(f.state == "not_supported" for f in topo.fabric):
        raise NotApplicable("no NVSwitch fabric (fabric state Not Supported: not an NVSwitch system, or a VM)")
    unknown = [f"GPU {f.gpu}" for f in topo.fabric if f.state == "completed" and f.status is None
               and f.health_summary is None and f.health_mask is None]
    if unknown:
        ctx.partial = "fabric registration status and health unknown on " + ", ".join(unknown)
    for f in topo.fabric:
        if f.state in ("not_started", "in_progress"):
            yield ctx.finding([f"GPU {f.gpu}: fabric state {f.state.replace('_', ' ')} -> CUDA init fails with 802"],
                              subject=f"GPU {f.gpu}", data=f.model_dump())
        elif f.state == "completed" and f.status not in (None, "Success"):
            yield ctx.finding([f"GPU {f.gpu}: fabric registration completed with status {f.status}"],
                              subject=f"GPU {f.gpu}", data=f.model_dump())
        elif f.health_summary in ("unhealthy", "limited_capacity") or (
                f.health_mask is not None and f.health_mask & 0x3 == 1):
            yield ctx.finding([f"GPU {f.gpu}: fabric health {f.health_summary or '?'} (health mask "
                               f"0x{(f.health_mask or 0):x}; bits 0-1 = 1: degraded bandwidth)"],
                              subject=f"GPU {f.gpu}", severity="warning", title="NVSwitch fabric degraded",
                              data=f.model_dump())


@rule("TOP013")
def sources_disagree(ctx):
    """Compares topo -m relations with NVML's common ancestor (PCIe classes) and NV# pairs with NVML's NVLink P2P
    status, and the GPU counts of both sources."""
    topo = _topo(ctx)
    m = topo.matrix
    if m is None or not topo.nvml_pairs:
        _multi_gpu(ctx, topo)
        raise NotAssessed("needs both the topo matrix and NVML pair facts")
    ev = []
    nv = ctx.snap.nvml
    if nv and nv.available and len(nv.gpus) != len(m.gpus):
        ev.append(f"NVML sees {len(nv.gpus)} GPUs, topo -m shows {len(m.gpus)}")
    for p in T.gpu_pairs(topo):
        if p.relation is None:
            continue
        if p.relation.startswith("NV"):
            if p.p2p.get("nvlink") not in (None, "OK"):
                ev.append(f"GPU{p.a}-GPU{p.b}: topo {p.relation}, NVML NVLink P2P {p.p2p.get('nvlink')}")
        elif p.nvml_common_ancestor and T.link_class_of(p.relation) != p.nvml_common_ancestor:
            ev.append(f"GPU{p.a}-GPU{p.b}: topo {p.relation}, NVML common ancestor {p.nvml_common_ancestor}")
    if ev:
        yield ctx.finding(ev[:10], subject="topology", data={"differences": ev})


# TOP014 (P2P disabled on an NVLink host, from the topo -m matrix) was merged into NCL007, which now
# reads NVML's NVLink state or, without it, the matrix: one rule, one finding per problem.
