"""Topology facts read from the filesystem: PCIe devices and their paths to the root port (sysfs, lspci),
ACS from config space, IOMMU groups, RDMA ports, network interfaces, nvidia_peermem. Roots are injectable
(:class:`Roots`) so tests run on fake trees; re-exported by :mod:`gpudoctor.probes.topology`."""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from gpudoctor.facts.model import (
    IbPort,
    IommuFacts,
    NetIface,
    PcieDevice,
    PciePath,
)
from gpudoctor.parsers.lspci import PciDevice
from gpudoctor.probes.subproc import CmdResult
from gpudoctor.probes.sysfs import read_int, read_text

BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
ACS_BITS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
PEERMEM = ("nvidia_peermem", "nv_peer_mem")



@dataclass
class Roots:
    """Where /sys and /proc are (tests point these at tmp_path trees)."""

    sys: str = "/sys"
    proc: str = "/proc"

    def s(self, *parts: str) -> str:
        return os.path.join(self.sys, *parts)

    def p(self, *parts: str) -> str:
        return os.path.join(self.proc, *parts)


Runner = Callable[..., CmdResult]


# ---------------------------------------------------------------------------------- sysfs PCIe

def _speed_gts(text: str | None) -> float | None:
    """sysfs '32.0 GT/s PCIe' / '8 GT/s' / '2.5 GT/s' -> GT/s; 'Unknown' -> None."""
    if not text:
        return None
    m = re.match(r"\s*([\d.]+)\s*GT/s", text)
    return float(m.group(1)) if m else None


def _ls(path: str) -> list[str] | None:
    """Sorted entries of a directory: [] when it does not exist (absent), None when it exists but
    cannot be read (EACCES, EIO, a file where a directory should be): unknown, not absent."""
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []
    except OSError:
        return None


def _link_name(path: str) -> str | None:
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def acs_from_config(raw: bytes) -> tuple[Literal["enabled", "disabled", "absent", "needs_root"],
                                         dict[str, bool] | None, dict[str, bool] | None]:
    """ACS state from a PCI config-space dump (sysfs ``config``).

    Returns (state, cap flags, ctl flags): state "needs_root" when only the 64/256-byte
    header is readable (non-root), "absent" when the extended capability list has no ACS
    (id 0x000D), else "enabled" (ReqRedir or CmpltRedir set) / "disabled". Layout: PCIe base
    spec 7.6 (extended capability header) and 7.7.8 (ACS: capability at +4, control at +6).
    """
    if len(raw) <= 256:
        return "needs_root", None, None
    off, seen = 0x100, set()
    while 0x100 <= off <= len(raw) - 8 and off not in seen:
        seen.add(off)
        hdr = int.from_bytes(raw[off:off + 4], "little")
        cap_id, nxt = hdr & 0xFFFF, (hdr >> 20) & 0xFFC
        if hdr in (0, 0xFFFFFFFF):
            break
        if cap_id == 0x000D:
            cap = int.from_bytes(raw[off + 4:off + 6], "little")
            ctl = int.from_bytes(raw[off + 6:off + 8], "little")
            capf = {n: bool(cap >> b & 1) for b, n in enumerate(ACS_BITS)}
            ctlf = {n: bool(ctl >> b & 1) for b, n in enumerate(ACS_BITS)}
            return ("enabled" if ctlf["ReqRedir"] or ctlf["CmpltRedir"] else "disabled"), capf, ctlf
        if not nxt:
            break
        off = nxt
    return "absent", None, None


def read_pci_device(roots: Roots, bdf: str) -> PcieDevice:
    """One PCI function's facts from /sys/bus/pci/devices/<bdf>."""
    d = roots.s("bus", "pci", "devices", bdf)
    cls = read_text(os.path.join(d, "class")) or ""
    vendor = (read_text(os.path.join(d, "vendor")) or "").lower()
    code = cls.lower().replace("0x", "")
    kind: Literal["gpu", "nic", "bridge", "other"]
    kind = "gpu" if vendor == "0x10de" and code.startswith("03") else "nic" if code.startswith("02") else \
        "bridge" if code.startswith("0604") else "other"
    numa = read_int(os.path.join(d, "numa_node"))
    grp = _link_name(os.path.join(d, "iommu_group"))
    dev = PcieDevice(bdf=bdf, kind=kind, class_code=cls or None, name=f"class {cls}" if cls else None,
                     driver=_link_name(os.path.join(d, "driver")),
                     numa_node=numa if numa is not None and numa >= 0 else None,
                     link_speed_gts=_speed_gts(read_text(os.path.join(d, "current_link_speed"))),
                     link_speed_max_gts=_speed_gts(read_text(os.path.join(d, "max_link_speed"))),
                     link_width=read_int(os.path.join(d, "current_link_width")) or None,
                     link_width_max=read_int(os.path.join(d, "max_link_width")) or None,
                     iommu_group=int(grp) if grp and grp.isdigit() else None, source="sysfs")
    if kind == "bridge":
        try:
            with open(os.path.join(d, "config"), "rb") as fh:
                raw = fh.read(4096)
            dev.acs_state, dev.acs_cap, dev.acs_ctl = acs_from_config(raw)
            if dev.acs_state != "needs_root":
                dev.source = "sysfs (config space)"
        except OSError:
            dev.acs_state = "unknown"
    return dev


def pci_path(roots: Roots, bdf: str) -> tuple[list[str], str | None]:
    """BDFs from ``bdf`` up to its root port, and the host bridge (pciDDDD:BB) above them."""
    real = os.path.realpath(roots.s("bus", "pci", "devices", bdf))
    hops: list[str] = []
    root = None
    for part in reversed(real.split(os.sep)):
        if BDF_RE.match(part):
            hops.append(part)
        else:
            if part.startswith("pci"):
                root = part
            break
    return hops or [bdf], root


def list_pci(roots: Roots) -> list[str] | None:
    """BDFs under /sys/bus/pci/devices: [] when it is missing, None when it cannot be read."""
    names = _ls(roots.s("bus", "pci", "devices"))
    return None if names is None else [x for x in names if BDF_RE.match(x)]


def nvidia_gpu_function(roots: Roots, bdf: str) -> bool:
    """Whether PCI function ``bdf`` is an NVIDIA GPU: vendor 0x10de, class 03xx (display controller)."""
    d = roots.s("bus", "pci", "devices", bdf)
    vendor = (read_text(os.path.join(d, "vendor")) or "").lower()
    code = (read_text(os.path.join(d, "class")) or "").lower().replace("0x", "")
    return vendor == "0x10de" and code.startswith("03")


def collect_pcie(
    roots: Roots, gpu_bdfs: dict[str, int], nic_bdfs: dict[str, str]
) -> tuple[list[PcieDevice], list[PciePath]]:
    """PcieDevice for every GPU and NIC and every bridge on their paths, plus each path."""
    devices: dict[str, PcieDevice] = {}
    paths: list[PciePath] = []
    for bdf in list_pci(roots) or []:
        if bdf in gpu_bdfs or bdf in nic_bdfs:
            continue
        if nvidia_gpu_function(roots, bdf):  # GPUs NVML did not report (NVML down) still get a path
            gpu_bdfs[bdf] = -1
    targets = [
        (bdf, f"GPU{i}" if i >= 0 else f"GPU {bdf}")
        for bdf, i in sorted(gpu_bdfs.items(), key=lambda x: (x[1] < 0, x[1], x[0]))
    ]
    targets += [(bdf, name) for bdf, name in sorted(nic_bdfs.items(), key=lambda x: x[1])]
    for bdf, label in targets:
        if not os.path.exists(roots.s("bus", "pci", "devices", bdf)):
            continue
        hops, root = pci_path(roots, bdf)
        for h in hops:
            if h not in devices:
                devices[h] = read_pci_device(roots, h)
        if bdf in nic_bdfs:
            devices[bdf].kind = "nic"
        paths.append(PciePath(label=label, bdf=bdf, hops=hops, root_complex=root))
    return list(devices.values()), paths


def merge_lspci(devs: list[PcieDevice], parsed: Iterable[PciDevice]) -> None:
    """Fold lspci's ACS flags, names and LnkSta markers into the sysfs devices (same BDF)."""
    by = {d.bdf: d for d in devs}
    for p in parsed:
        if p.bdf is None or p.bdf not in by:
            continue
        d = by[p.bdf]
        d.name = p.name or d.name
        if p.speed_downgraded is not None or p.width_downgraded is not None:
            d.downgraded = bool(p.downgraded)
        if p.acs_ctl is not None:
            d.acs_ctl, d.acs_cap = p.acs_ctl, p.acs_cap
            d.acs_state = "enabled" if p.acs_redirect else "disabled"
            d.source = "sysfs + lspci"
        elif p.caps_access_denied and d.acs_state in ("unknown", "needs_root"):
            d.acs_state = "needs_root"
        elif d.kind == "bridge" and d.acs_state == "unknown" and not p.caps_access_denied:
            d.acs_state = "absent"


# ---------------------------------------------------------------------------------- IOMMU, IB, net, modules

def collect_iommu(roots: Roots, gpu_bdfs: Iterable[str]) -> IommuFacts:
    names = _ls(roots.s("kernel", "iommu_groups"))
    groups = [g for g in names or [] if g.isdigit()]
    cmdline = read_text(roots.p("cmdline")) or ""
    flags = [t for t in cmdline.split() if re.match(r"(intel_iommu|amd_iommu|iommu|iommu\.\w+|pci)=", t)]
    types: dict[str, str] = {}
    for bdf in gpu_bdfs:
        t = read_text(roots.s("bus", "pci", "devices", bdf, "iommu_group", "type"))
        if t:
            types[bdf] = t
    mode: Literal["translated", "passthrough", "off", "unknown"]
    if names is None:  # unreadable: the IOMMU may well be on
        return IommuFacts(enabled=None, mode="unknown", cmdline_flags=flags)
    if not groups:
        mode = "off"
    elif types:
        vals = set(types.values())
        mode = "passthrough" if vals == {"identity"} else "translated" if vals & {"DMA", "DMA-FQ"} else "unknown"
    elif any(f in ("iommu=pt", "iommu.passthrough=1") for f in flags):
        mode = "passthrough"
    else:
        mode = "unknown"
    return IommuFacts(enabled=bool(groups), group_count=len(groups), mode=mode, domain_types=types,
                      cmdline_flags=flags)


def _rate_gbps(text: str | None) -> float | None:
    m = re.match(r"\s*([\d.]+)\s*Gb/sec", text or "")
    return float(m.group(1)) if m else None


def _state(text: str | None) -> str | None:
    """sysfs '4: ACTIVE' / '5: LinkUp' -> 'ACTIVE' / 'LinkUp'."""
    if not text:
        return None
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def collect_ib(roots: Roots) -> tuple[bool | None, list[IbPort]]:
    base = roots.s("class", "infiniband")
    devs = _ls(base)
    if devs is None:
        return None, []  # unreadable: unknown, not absent
    ports: list[IbPort] = []
    for dev in devs:
        bdf = _link_name(os.path.join(base, dev, "device"))
        numa = read_int(os.path.join(base, dev, "device", "numa_node"))
        try:
            netdevs = sorted(os.listdir(os.path.join(base, dev, "device", "net")))
        except OSError:
            netdevs = []
        try:
            pnums = sorted(int(p) for p in os.listdir(os.path.join(base, dev, "ports")) if p.isdigit())
        except OSError:
            pnums = []
        for pn in pnums:
            pd = os.path.join(base, dev, "ports", str(pn))
            rate = read_text(os.path.join(pd, "rate"))
            ports.append(IbPort(device=dev, port=pn, state=_state(read_text(os.path.join(pd, "state"))),
                                phys_state=_state(read_text(os.path.join(pd, "phys_state"))),
                                rate_gbps=_rate_gbps(rate), rate_text=rate,
                                link_layer=read_text(os.path.join(pd, "link_layer")),
                                hca_type=read_text(os.path.join(base, dev, "hca_type")),
                                pci_bus_id=bdf if bdf and BDF_RE.match(bdf) else None,
                                numa_node=numa if numa is not None and numa >= 0 else None, netdevs=netdevs))
    return bool(devs), ports


def collect_net(roots: Roots) -> list[NetIface]:
    base = roots.s("class", "net")
    names = _ls(base) or []
    out = []
    for name in names:
        d = os.path.join(base, name)
        bdf = _link_name(os.path.join(d, "device"))
        speed = read_int(os.path.join(d, "speed"))
        numa = read_int(os.path.join(d, "device", "numa_node"))
        out.append(NetIface(name=name, operstate=read_text(os.path.join(d, "operstate")),
                            speed_mbps=speed if speed is not None and speed > 0 else None,
                            pci_bus_id=bdf if bdf and BDF_RE.match(bdf) else None,
                            numa_node=numa if numa is not None and numa >= 0 else None,
                            virtual=not os.path.exists(os.path.join(d, "device"))))
    return out


def collect_peermem(roots: Roots) -> tuple[bool | None, str | None]:
    text = read_text(roots.p("modules"))
    if text is not None:
        loaded = {line.split()[0] for line in text.splitlines() if line.strip()}
        for m in PEERMEM:
            if m in loaded:
                return True, m
    for m in PEERMEM:
        if os.path.isdir(roots.s("module", m)):
            return True, m
    return (False, None) if text is not None else (None, None)
