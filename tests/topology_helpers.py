"""Fake sysfs/proc trees and command runners for the topology tests (imported by test_topology_*.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from gpudoctor.probes.subproc import CmdResult, run_cmd

ACS_ON = 0b0011101   # SrcValid ReqRedir CmpltRedir UpstreamFwd (ACSCtl 0x001d, corpus case 001)


def config_with_acs(ctl: int) -> bytes:
    raw = bytearray(4096)
    raw[0:4] = (0x10b5 | 0x8725 << 16).to_bytes(4, "little")
    # extended cap at 0x100: AER (id 1) -> next 0x148; ACS (id 0x0d) at 0x148 -> end
    raw[0x100:0x104] = (0x0001 | 1 << 16 | 0x148 << 20).to_bytes(4, "little")
    raw[0x148:0x14c] = (0x000D | 1 << 16 | 0 << 20).to_bytes(4, "little")
    raw[0x14c:0x14e] = (0x7f).to_bytes(2, "little")
    raw[0x14e:0x150] = ctl.to_bytes(2, "little")
    return bytes(raw)


def mkdev(root: Path, chain: list[str], bdf: str, *, cls: str, vendor: str = "0x10b5", speed="32.0 GT/s PCIe",
          maxspeed="32.0 GT/s PCIe", width=16, maxwidth=16, numa=0, config: bytes | None = None,
          group: int | None = None, driver: str | None = None) -> Path:
    d = root / "sys" / "devices" / chain[0]
    for c in chain[1:]:
        d = d / c
    d = d / bdf
    d.mkdir(parents=True)
    for name, val in (("class", cls), ("vendor", vendor), ("current_link_speed", speed), ("max_link_speed", maxspeed),
                      ("current_link_width", str(width)), ("max_link_width", str(maxwidth)), ("numa_node", str(numa))):
        (d / name).write_text(val + "\n")
    (d / "config").write_bytes(config if config is not None else b"\0" * 64)
    bus = root / "sys" / "bus" / "pci" / "devices"
    bus.mkdir(parents=True, exist_ok=True)
    (bus / bdf).symlink_to(d)
    if group is not None:
        g = root / "sys" / "kernel" / "iommu_groups" / str(group)
        g.mkdir(parents=True, exist_ok=True)
        (d / "iommu_group").symlink_to(g)
    if driver:
        drv = root / "sys" / "bus" / "pci" / "drivers" / driver
        drv.mkdir(parents=True, exist_ok=True)
        (d / "driver").symlink_to(drv)
    return d


def build_tree(root: Path, *, acs_readable: bool, iommu_type: str | None = None, peermem: bool = True,
               ib_state: str = "4: ACTIVE", uplink_width: int = 16) -> None:
    """Two GPUs behind a PCIe switch on socket 0, one ConnectX NIC on socket 1."""
    cfg = config_with_acs(ACS_ON) if acs_readable else None
    grp = 0 if iommu_type else None
    rp = ["pci0000:00"]
    mkdev(root, rp, "0000:00:01.0", cls="0x060400", vendor="0x8086", config=cfg, driver="pcieport")
    mkdev(root, rp + ["0000:00:01.0"], "0000:01:00.0", cls="0x060400", width=uplink_width, config=cfg)
    up = rp + ["0000:00:01.0", "0000:01:00.0"]
    mkdev(root, up, "0000:02:00.0", cls="0x060400", config=cfg)
    mkdev(root, up, "0000:02:01.0", cls="0x060400", config=cfg)
    mkdev(root, up + ["0000:02:00.0"], "0000:03:00.0", cls="0x030200", vendor="0x10de", group=grp, driver="nvidia")
    mkdev(root, up + ["0000:02:01.0"], "0000:04:00.0", cls="0x030200", vendor="0x10de",
          group=(1 if iommu_type else None), driver="nvidia")
    mkdev(root, ["pci0000:80"], "0000:80:01.0", cls="0x060400", vendor="0x8086", numa=1)
    nic = mkdev(root, ["pci0000:80", "0000:80:01.0"], "0000:81:00.0", cls="0x020700", vendor="0x15b3",
                speed="16.0 GT/s PCIe", maxspeed="16.0 GT/s PCIe", numa=1)
    if iommu_type:
        for g in (0, 1):
            (root / "sys" / "kernel" / "iommu_groups" / str(g) / "type").write_text(iommu_type + "\n")
    ib = root / "sys" / "class" / "infiniband" / "mlx5_0"
    (ib / "ports" / "1").mkdir(parents=True)
    (ib / "device").symlink_to(nic)
    (ib / "hca_type").write_text("MT4123\n")
    for name, val in (("state", ib_state), ("phys_state", "5: LinkUp"), ("rate", "200 Gb/sec (4X HDR)"),
                      ("link_layer", "InfiniBand")):
        (ib / "ports" / "1" / name).write_text(val + "\n")
    (nic / "net" / "ib0").mkdir(parents=True)
    net = root / "sys" / "class" / "net"
    (net / "ib0").mkdir(parents=True)
    (net / "ib0" / "device").symlink_to(nic)
    (net / "ib0" / "operstate").write_text("up\n")
    (net / "ib0" / "speed").write_text("200000\n")
    (net / "lo").mkdir()
    (net / "lo" / "operstate").write_text("unknown\n")
    proc = root / "proc"
    proc.mkdir()
    (proc / "cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on quiet\n")
    mods = "nvidia_uvm 1 0 - Live 0x0\nnvidia 2 1 nvidia_uvm, Live 0x0\n"
    (proc / "modules").write_text(mods + ("nvidia_peermem 16384 0 - Live 0x0\n" if peermem else ""))


TOPO_2GPU = """\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tPIX\tSYS\t0-15\t0\t\tN/A
GPU1\tPIX\t X \tSYS\t0-15\t0\t\tN/A
NIC0\tSYS\tSYS\t X \t\t\t\t

NIC Legend:

  NIC0: mlx5_0
"""


def stream(*objs) -> str:
    return "\n".join(json.dumps(o) for o in objs) + "\n"


TOPOLOGY_STREAM = stream(
    {"t": "step", "name": "nvmlInit"}, {"t": "sys", "k": "gpu_count", "v": 2},
    {"t": "gpu", "i": 0, "k": "pci_bus_id", "v": "00000000:03:00.0"},
    {"t": "gpu", "i": 1, "k": "pci_bus_id", "v": "00000000:04:00.0"},
    {"t": "pair", "a": 0, "b": 1, "k": "common_ancestor", "v": 10},
    {"t": "pair", "a": 0, "b": 1, "k": "p2p_read", "v": 0}, {"t": "pair", "a": 0, "b": 1, "k": "p2p_write", "v": 0},
    {"t": "pair", "a": 0, "b": 1, "k": "p2p_nvlink", "v": 5}, {"t": "pair", "a": 0, "b": 1, "k": "p2p_atomics", "v": 0},
    {"t": "done"})
FABRIC_STREAM = stream({"t": "sys", "k": "gpu_count", "v": 2}, {"t": "unsupported", "i": 0, "k": "fabric"},
                       {"t": "unsupported", "i": 1, "k": "fabric"}, {"t": "done"})


def fake_runner(topo=TOPO_2GPU, lspci=None, fabric=FABRIC_STREAM, real_fabric_env=None):
    calls = []

    def run(argv, timeout, env=None, input_text=None):
        calls.append(list(argv))
        if argv[0] == "nvidia-smi":
            return CmdResult(argv, 0, topo, "")
        if argv[0] == "lspci":
            return CmdResult(argv, 0, lspci or "", "")
        if argv[-1] == "topology":
            return CmdResult(argv, 0, TOPOLOGY_STREAM, "")
        if argv[-1] == "fabric":
            if real_fabric_env is not None:
                return run_cmd(argv, timeout=timeout, env={**(env or os.environ), **real_fabric_env})
            return CmdResult(argv, 0, fabric, "")
        raise AssertionError(argv)

    run.calls = calls
    return run


def which_all(name):
    return "/usr/bin/" + name
