"""Topology and interconnect rules (family TOP): NVLink, P2P, PCIe paths, ACS/IOMMU, NVSwitch, InfiniBand.

Facts come from ``snapshot.topology`` (see gpudoctor.probes.topology) plus NVML, host,
memory and environment facts. Tables (bandwidths, expected NVLink counts) live in
rules/topology.toml with their sources.
"""
from __future__ import annotations

from gpudoctor.facts import topology as T
from gpudoctor.compat import data
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule

AREA = "Topology"
NCCL_GPU_TS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/gpu_troubleshooting.html"
NCCL_TS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
NVML_TOPO = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
FM_GUIDE = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
NVML_FABRIC = "https://docs.nvidia.com/deploy/nvml-api/api/structnvmlGpuFabricInfo__t.html"
SYSFS_IB = "https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband"
SYSFS_PCI = "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci"


# ------------------------------------------------------------------------------------------ helpers

def _topo(ctx):
    t = ctx.snap.topology
    if t is None:
        raise NotAssessed("topology facts missing (probe failed or not in this snapshot)")
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


def multi_node(env: dict[str, str]) -> bool | None:
    """True when the launcher's variables say the job spans nodes (WORLD_SIZE > LOCAL_WORLD_SIZE,
    SLURM_NNODES / SLURM_JOB_NUM_NODES > 1); False when they say one node; None when unknown."""
    def num(name):
        try:
            return int(env[name])
        except (KeyError, ValueError):
            return None

    ws, lws = num("WORLD_SIZE"), num("LOCAL_WORLD_SIZE")
    nodes = num("SLURM_NNODES") or num("SLURM_JOB_NUM_NODES")
    if (ws and lws and ws > lws) or (nodes and nodes > 1):
        return True
    if (ws and lws and ws <= lws) or nodes == 1:
        return False
    return None


def _pairs_text(pairs, limit: int = 8) -> str:
    items = [f"GPU{p.a}-GPU{p.b} {p.relation or p.link_class}" for p in pairs]
    more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _env(ctx) -> dict[str, str]:
    return ctx.snap.env.variables if ctx.snap.env else {}


# ------------------------------------------------------------------------------------------ rules

@rule("TOP001", AREA, "warning", "GPUs without NVLink between them",
      ok="every GPU reaches the others over NVLink",
      why="Gradients cross the slowest link of the ring every step. Without NVLink they go over PCIe (16-63 GB/s "
          "per direction at line rate, less through host bridges and sockets) instead of NVLink (hundreds of GB/s), "
          "so a step's all-reduce of BERT-base gradients (~438 MB fp32) takes tens of ms and two GPUs may give only "
          "~1.5x the speed of one. Without P2P (NVML status not OK) NCCL also copies through host memory.",
      fix="Expect PCIe-bound scaling (overlap communication, larger batches, gradient accumulation, bf16 "
          "gradients); for multi-GPU training prefer NVLink/NVSwitch machines. Check P2P with "
          "`nvidia-smi topo -p2p rw` and measure with the confirmation run. PCIe peer-to-peer needs ACS "
          "redirection off on the bridges between the GPUs (bare metal): check `sudo lspci -vvv | grep ACSCtl` "
          "(ReqRedir+/CmpltRedir+ = on; NCCL may hang) and see TOP004.",
      sources=["checklist H7", "checklist H10", NVML_TOPO, NCCL_GPU_TS,
               "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"])
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


@rule("TOP002", AREA, "warning", "GPU pairs cross CPU sockets (SYS)",
      ok="no GPU pair crosses the inter-socket link",
      why="A SYS path goes through the SMP interconnect between NUMA nodes (QPI/UPI/Infinity Fabric): lower "
          "bandwidth and higher latency than a path inside one socket, and PCIe P2P across sockets is often not "
          "supported, so NCCL copies through host memory.",
      fix="Run a job's ranks on GPUs of one socket (CUDA_VISIBLE_DEVICES) where possible; bind each rank to its "
          "GPU's NUMA node (CPU Affinity column); for training across all GPUs, expect SYS pairs to bound the "
          "all-reduce bandwidth.",
      sources=["checklist H10", "nvidia-smi topo -m legend (SYS)", NCCL_GPU_TS])
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


def _busy(ctx) -> bool | None:
    nv = ctx.snap.nvml
    if nv is None or not nv.available or not nv.gpus:
        return None
    return any(bool(g.utilization_gpu_pct) and "GpuIdle" not in g.clock_event_reasons for g in nv.gpus)


@rule("TOP003", AREA, "warning", "PCIe hop negotiated below its capability",
      ok="every PCIe hop on the GPU and NIC paths runs at its full width (and generation under load)",
      why="A GPU is only as fast as the narrowest hop to the CPU: a x16 GPU behind a switch whose uplink trained at "
          "x8, or a root port at Gen3 instead of Gen5, halves or quarters host<->GPU and NIC bandwidth. Width is "
          "judged always; generation only under load, because idle GPUs lower their link generation to save power "
          "(a Gen1 idle reading is normal).",
      fix="Reseat the card or riser, move it to a full-width slot, set the slot's link speed to Auto/maximum in the "
          "BIOS, check bifurcation; re-measure under load (`nvidia-smi -q -d PCIE`, `lspci -vvv` LnkSta).",
      sources=["checklist H8", SYSFS_PCI, "https://forums.developer.nvidia.com/t/prevent-pcie-from-reducing-gen/72537",
               "lspci(8) LnkCap/LnkSta"])
def hop_below_capability(ctx):
    """Checks every device on each GPU's and NIC's path to the root port (sysfs current vs max link width and
    speed, lspci '(downgraded)'), and hops narrower than the GPU below them. Generation drops on GPU paths are
    judged only while a GPU is busy (PCI002's idle rule)."""
    topo = _topo(ctx)
    devs = {d.bdf: d for d in topo.pcie}
    if not devs:
        if T.gpu_count(topo, ctx.snap.nvml) == 0 and not topo.ib_ports:
            raise NotApplicable("no GPU or RDMA NIC on this host")
        raise NotAssessed("no PCIe link facts (sysfs unreadable, no lspci)")
    if not any(d.link_width or d.link_speed_gts or d.downgraded for d in devs.values()):
        raise NotAssessed(f"link width and speed unknown on all {len(devs)} PCIe device(s)")
    busy = _busy(ctx)
    gpu_hops = {h for p in topo.paths if p.label.startswith("GPU") for h in p.hops}
    idle_notes, seen = [], set()
    for d in devs.values():
        w, wm, s, sm = d.link_width, d.link_width_max, d.link_speed_gts, d.link_speed_max_gts
        who = f"{d.kind} {d.bdf}"
        if w and wm and w < wm:
            seen.add(d.bdf)
            yield ctx.finding([f"{who}: link x{w}, capable of x{wm}" +
                               (f" (Gen{T.gen_of(s)})" if s else "")], subject=d.bdf,
                              data={"bdf": d.bdf, "width": w, "width_max": wm})
            continue
        low_speed = (s and sm and s < sm) or (d.downgraded and d.source == "lspci -vvv" and not (w and wm and w < wm))
        if not low_speed:
            continue
        txt = (f"{who}: Gen{T.gen_of(s)} ({s:g} GT/s), capable of Gen{T.gen_of(sm)} ({sm:g} GT/s)" if s and sm
               else f"{who}: LnkSta marked (downgraded)")
        gpu_side = d.bdf in gpu_hops or d.kind == "gpu" or (d.source == "lspci -vvv" and not topo.paths)
        if gpu_side and not busy:
            idle_notes.append(txt)
            continue
        seen.add(d.bdf)
        yield ctx.finding([txt + (" while a GPU is busy" if gpu_side else "")], subject=d.bdf,
                          data={"bdf": d.bdf, "gts": s, "gts_max": sm})
    for p in topo.paths:  # bottleneck: a hop narrower than the device at the bottom of the path
        end = devs.get(p.bdf)
        if not end or not end.link_width:
            continue
        for h in p.hops[1:]:
            d = devs.get(h)
            if d and d.bdf not in seen and d.link_width and d.link_width < end.link_width:
                seen.add(d.bdf)
                yield ctx.finding([f"{p.label} ({p.bdf}) runs x{end.link_width} but hop {d.bdf} on its path to the "
                                   f"root port runs x{d.link_width}"], subject=p.label,
                                  data={"device": p.bdf, "hop": d.bdf, "width": end.link_width,
                                        "hop_width": d.link_width})
    if idle_notes and busy is None:
        raise NotAssessed("generation below maximum, GPU load unknown (judge under load): " + "; ".join(idle_notes))
    if idle_notes:
        raise NotAssessed("idle GPUs below max generation (normal power saving; judged under load): "
                          + "; ".join(idle_notes))


@rule("TOP004", AREA, "error", "ACS redirects peer-to-peer traffic on a PCIe bridge",
      ok="ACS redirect off on the bridges between the GPUs",
      why="With ACS Request/Completion Redirect enabled on a switch or root port, GPU peer-to-peer and GPUDirect "
          "RDMA traffic is forced up to the root complex (and the IOMMU): NCCL's P2P transport slows down, hangs "
          "in the first all-reduce, or crashes (NCCL issues 2079, 304). Bare metal only: virtual machines need "
          "ACS for device isolation.",
      fix="Disable ACS in the BIOS (IO virtualization / VT-d / ACS), or per bridge `sudo setpci -s <BDF> "
          "ECAP_ACS+0x6.w=0000` (re-apply after every reboot); as a stop-gap NCCL_P2P_DISABLE=1. Verify with "
          "`sudo lspci -vvv | grep ACSCtl` (ReqRedir- CmpltRedir-).",
      sources=[NCCL_GPU_TS, "checklist H10", "https://github.com/NVIDIA/nccl/issues/2079",
               "https://github.com/NVIDIA/nccl/issues/304", "PCIe base spec 7.7.8 (ACS control register)"])
def acs_redirect(ctx):
    """Reads ACSCtl of the bridges on the GPUs' paths (config space as root, or lspci -vvv); redirect = ReqRedir+
    or CmpltRedir+ (SrcValid+ alone does not redirect). Without root, ACS is 'not assessed (needs root)', never
    a pass. Not applicable in VMs and with fewer than 2 GPUs."""
    topo = _topo(ctx)
    n = T.gpu_count(topo, ctx.snap.nvml)
    if n is not None and n < 2:
        raise NotApplicable(f"{n} GPU(s): no GPU peer-to-peer traffic")
    if _is_vm(ctx):
        raise NotApplicable(f"virtual machine ({ctx.snap.host.virtualization}): VMs need ACS (NCCL guide); "
                            "enable ATS on the NICs instead")
    on_path = {h for p in topo.paths if p.label.startswith("GPU") for h in p.hops[1:]}
    bridges = [d for d in topo.pcie if (d.bdf in on_path) or (not topo.paths and (d.kind == "bridge" or d.acs_ctl))]
    if not bridges:
        if topo.paths:
            return  # GPUs directly on the root complex: no bridge between them
        raise NotAssessed("no bridge facts: run `sudo lspci -vvv | grep ACSCtl`" +
                          ("" if topo.lspci_available else " (lspci not installed)"))
    enabled = [d for d in bridges if d.acs_state == "enabled"]
    for d in enabled:
        flags = " ".join(f"{k}{'+' if v else '-'}" for k, v in (d.acs_ctl or {}).items())
        known = d.bdf in on_path
        yield ctx.finding([f"bridge {d.bdf if not d.bdf.startswith('unnamed') else '(unnamed in the excerpt)'}"
                           f"{' on a GPU path' if known else ''}: ACSCtl {flags}"],
                          subject=d.bdf, severity="error" if known or (n or 0) >= 2 else "warning",
                          data={"bdf": d.bdf, "acs_ctl": d.acs_ctl, "on_gpu_path": known})
    if enabled:
        return
    unknown = [d.bdf for d in bridges if d.acs_state in ("needs_root", "unknown")]
    if unknown:
        raise NotAssessed(f"not assessed (needs root): ACS of {len(unknown)} bridge(s) unreadable without root "
                          f"({', '.join(unknown[:6])}); run `sudo lspci -vvv | grep ACSCtl`")


@rule("TOP005", AREA, "warning", "IOMMU translates GPU DMA on bare metal",
      ok="IOMMU off or in passthrough mode for the GPUs",
      why="With the IOMMU translating DMA (VT-d/AMD-Vi, group type DMA or DMA-FQ), PCIe peer-to-peer between GPUs "
          "is redirected through the root complex: the NCCL guide reports large slowdowns or hangs. Passthrough "
          "(iommu=pt) keeps the IOMMU available for VFIO but maps GPUs 1:1.",
      fix="Boot with `iommu=pt` (or `intel_iommu=on iommu=pt` / `amd_iommu=on iommu=pt`), or disable VT-d/AMD-Vi "
          "in the BIOS if nothing needs it; re-check /sys/bus/pci/devices/<gpu>/iommu_group/type = identity.",
      sources=[NCCL_GPU_TS, "checklist H10", "https://docs.kernel.org/admin-guide/kernel-parameters.html (iommu=pt)"])
def iommu_translated(ctx):
    """Reads the IOMMU group type of each GPU (sysfs) and the iommu kernel parameters; bare-metal multi-GPU
    hosts only."""
    topo = _topo(ctx)
    _multi_gpu(ctx, topo)
    if _is_vm(ctx):
        raise NotApplicable(f"virtual machine ({ctx.snap.host.virtualization}): the guest IOMMU is the hypervisor's")
    io = topo.iommu
    if io is None:
        raise NotAssessed("IOMMU facts missing")
    if io.mode == "translated":
        types = ", ".join(f"{b} {t}" for b, t in sorted(io.domain_types.items()))
        yield ctx.finding([f"IOMMU on ({io.group_count} groups); GPU groups: {types}",
                           f"kernel parameters: {' '.join(io.cmdline_flags) or '(no iommu parameter)'}"],
                          subject="IOMMU", data=io.model_dump(exclude={"source"}))
    elif io.mode == "unknown":
        raise NotAssessed("IOMMU groups unreadable, or they exist but the GPUs' group type is not readable")


@rule("TOP006", AREA, "error", "NVLink down, fewer links than expected, or link errors",
      ok="all expected NVLinks active, no error counts",
      why="An inactive NVLink lowers the GPU's NVLink bandwidth (each H100 link is 1/18 of it) and can make NCCL "
          "route over PCIe; CRC/replay/recovery counts point to a bad link, cable or baseboard (XID 74).",
      fix="Check `nvidia-smi nvlink -s` and `nvidia-smi nvlink -e`; reset the GPU or reboot; if links stay down or "
          "errors keep rising, drain the node and open a hardware ticket.",
      sources=[NVML_TOPO, "https://docs.nvidia.com/deploy/xid-errors/index.html (XID 74)",
               "https://docs.nvidia.com/datacenter/dcgm/latest/learn/core-services/topology-and-links.html "
               "(error counters: did the total increase during an interval)",
               "rules/topology.toml [[nvlink.expected]] (link counts per SKU with sources)"])
def nvlink_health(ctx):
    """Counts active NVLinks per GPU (NVML) against the expected count for known SKUs (rules/topology.toml), lists
    inactive links; CRC/replay/recovery counters that rose during the confirmation runs are a warning, counts
    that are only cumulative since the driver loaded a note."""
    topo = ctx.snap.topology
    gpus = ctx.gpus()
    if len(gpus) < 2:
        raise NotApplicable("1 GPU: NVLink not used")
    detail = {}
    for d in (topo.nvlinks if topo else []):
        detail.setdefault(d.gpu, []).append(d)
    any_links = bool(detail) or any(g.nvlinks for g in gpus)
    expectations = [T.expected_nvlinks(g.name) for g in gpus]
    if not any_links and not any(expectations):
        raise NotApplicable("no NVLink on these GPUs")
    if not detail and not ctx.known("nvml.gpus", "nvlinks"):
        # GPUs known from text that says nothing about NVLink (nvidia-smi -L, --query-gpu CSV): unknown, not "0 links"
        raise NotAssessed("the NVLink state is not in the inputs (`nvidia-smi nvlink -s` or a saved report gives it)")
    for g, exp in zip(gpus, expectations):
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


@rule("TOP007", AREA, "error", "NVSwitch fabric not ready",
      ok="GPUs registered with the NVSwitch fabric (state completed, status success)",
      why="On NVSwitch systems (HGX/DGX A100, H100, H200, B200) CUDA cannot create a context until the Fabric "
          "Manager has configured the fabric and registered the GPU: every CUDA program fails with error 802 "
          "'system not yet initialized' although nvidia-smi works.",
      fix="Install nvidia-fabricmanager of exactly the driver's version and start it (`systemctl enable --now "
          "nvidia-fabricmanager`); check `nvidia-smi -q | grep -A3 Fabric` (State Completed, Status Success).",
      sources=[FM_GUIDE, NVML_FABRIC, "https://github.com/NVIDIA/gpu-operator/issues/1043",
               "CUDA driver_types.h: cudaErrorSystemNotReady = 802"])
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


def _ib(ctx):
    topo = _topo(ctx)
    if topo.ib_present is None:
        raise NotAssessed("InfiniBand facts missing")
    if not topo.ib_present:
        raise NotApplicable("no RDMA device (/sys/class/infiniband absent or empty)")
    return topo


@rule("TOP008", AREA, "warning", "InfiniBand/RoCE port down or below its peers' rate",
      ok="RDMA ports active at the same rate",
      why="NCCL spreads inter-node traffic over the HCAs next to each GPU; a port that is down (or up but not "
          "ACTIVE: no subnet manager) or trained at a lower rate than its peers caps the whole ring at its speed.",
      fix="Check cables and switch ports (`ibstat`, `ibv_devinfo`); an INIT/ARMED port needs a running subnet "
          "manager (opensm/UFM); a low rate needs the cable/transceiver or switch port fixed. Exclude unused ports "
          "with NCCL_IB_HCA.",
      sources=["checklist H11", SYSFS_IB, NCCL_TS])
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
            yield ctx.finding([f"{name}: state {p.state}, physical {p.phys_state}{hint}"], subject=name,
                              data=p.model_dump())
            continue
        top = best.get((p.hca_type, p.link_layer))
        if p.rate_gbps and top and p.rate_gbps < top:
            yield ctx.finding([f"{name}: {p.rate_text}, while {p.hca_type or 'same-type'} ports reach {top:g} Gb/s"],
                              subject=name, data={**p.model_dump(), "peer_rate_gbps": top})


def _active_rdma(topo) -> list:
    return [p for p in topo.ib_ports if p.state == "ACTIVE"]


@rule("TOP009", AREA, "warning", "NCCL_IB_DISABLE=1 while InfiniBand/RoCE is active",
      ok="NCCL may use the active RDMA ports",
      why="Inside one node NCCL uses NVLink/P2P/SHM and NCCL_IB_DISABLE changes nothing; across nodes it forces "
          "TCP sockets instead of RDMA, a fraction of the bandwidth with more CPU load. So: a warning for a "
          "multi-node job, a note on one node.",
      fix="unset NCCL_IB_DISABLE (or set it to 0) for multi-node jobs.",
      sources=["checklist H11", NCCL_ENV])
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


def _socket_if_match(spec: str, names: list[str]) -> tuple[bool, list[str], list[str]]:
    """NCCL_SOCKET_IFNAME semantics (NCCL env docs): comma-separated prefixes; '^' excludes; '=' exact match.
    Returns (exclude mode, interfaces selected, entries matching nothing)."""
    s = spec.strip()
    exclude = s.startswith("^")
    if exclude:
        s = s[1:]
    exact = s.startswith("=")
    if exact:
        s = s[1:]
    entries = [e.strip() for e in s.split(",") if e.strip()]
    def hit(e, n):
        return n == e if exact else n.startswith(e)
    dead = [e for e in entries if not any(hit(e, n) for n in names)]
    if exclude:
        selected = [n for n in names if not any(hit(e, n) for e in entries)]
    else:
        selected = [n for n in names if any(hit(e, n) for e in entries)]
    return exclude, selected, dead


@rule("TOP010", AREA, "error", "NCCL_SOCKET_IFNAME matches no network interface",
      ok="NCCL_SOCKET_IFNAME unset or naming existing interfaces",
      why="NCCL uses only the interfaces NCCL_SOCKET_IFNAME selects (prefix match; '^' excludes, '=' exact) for "
          "bootstrap and socket traffic; an interface name that does not exist (copied from another cluster: eth0 "
          "vs ens5) makes init fail with 'no socket interface found' or hang.",
      fix="Set NCCL_SOCKET_IFNAME to an interface listed by `ip -br link` (e.g. the prefix 'ens' or '=ens5'), or "
          "unset it.",
      sources=[NCCL_ENV, "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"])
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


@rule("TOP011", AREA, "warning", "GPU without a NIC on its own socket / NUMA node",
      ok="every GPU has an RDMA NIC on its side of the CPU interconnect",
      why="Inter-node traffic of a GPU whose closest NIC is SYS (other socket / NUMA node) crosses the inter-socket "
          "link twice and cannot use GPUDirect RDMA efficiently; multi-node all-reduce slows to the worst GPU. "
          "Matters for multi-node jobs only (a note on one node).",
      fix="Use a node type with one NIC per GPU pair/socket, or restrict multi-node jobs to the GPUs next to the "
          "NICs; keep NCCL's default NIC selection (NCCL_IB_HCA unset) so each GPU uses its closest NIC.",
      sources=["checklist H10", "checklist H11", NCCL_GPU_TS, "nvidia-smi topo -m (GPU-NIC relations)"])
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


@rule("TOP012", AREA, "warning", "RDMA without GPUDirect (nvidia_peermem) or with a small memlock limit",
      ok="GPUDirect RDMA module loaded and memlock unlimited",
      why="Without nvidia_peermem (or DMA-BUF) the NIC cannot read GPU memory: NCCL stages inter-node traffic "
          "through host memory (NCCL logs 'GPU Direct RDMA Disabled'; bandwidth fell ~10x in NCCL issue 1676). "
          "RDMA also pins memory: a small memlock limit makes ibv_reg_mr fail ('Cannot allocate memory').",
      fix="`sudo modprobe nvidia-peermem` (and load it at boot), or use DMA-BUF (open kernel modules, recent "
          "kernel and NCCL); set memlock unlimited (/etc/security/limits.conf, systemd LimitMEMLOCK=infinity, "
          "docker --ulimit memlock=-1) and verify inside the launcher (`ulimit -l`).",
      sources=[NCCL_GPU_TS, NCCL_TS, "https://github.com/NVIDIA/nccl/issues/1676",
               "https://github.com/NVIDIA/nccl-tests/issues/206", "rules/topology.toml [memlock]"])
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


@rule("TOP013", AREA, "warning", "nvidia-smi topo and NVML disagree about GPU paths",
      ok="nvidia-smi topo -m and NVML agree",
      why="Both read the driver's view of the PCIe/NVLink topology; when they differ (a relation, the GPU count, "
          "an NV# pair without NVLink P2P) one of them is stale or the host changed (GPU fell off the bus, hot "
          "reset, a VM with a virtual topology), and NCCL's own topology detection may be wrong too.",
      fix="Re-run `nvidia-smi topo -m` and the scan; check `dmesg` for GPU/PCIe errors; in a VM, give NCCL the "
          "real topology (NCCL_TOPO_FILE).",
      sources=[NVML_TOPO, "nvidia-smi topo -m", NCCL_GPU_TS])
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
