"""Topology rules (family TOP), PCIe paths: TOP003 (hop below capability), TOP004 (ACS redirect), TOP005 (IOMMU
translation).

Shared helpers and source links: :mod:`gpudoctor.rules.topology`; tables: rules/topology.toml."""
from __future__ import annotations

from gpudoctor.facts import topology as T
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule
from gpudoctor.rules.topology import (
    _busy,
    _is_vm,
    _multi_gpu,
    _topo,
)


@rule("TOP003")
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


@rule("TOP004")
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
                          ("" if topo.lspci_available or ctx.snap.inputs else " (lspci not installed)"))
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


@rule("TOP005")
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
