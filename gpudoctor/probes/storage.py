"""Storage probe: the filesystem holding the data path, its disk, and whether it spins."""
from __future__ import annotations

import os

import psutil

from gpudoctor.facts.model import StorageFacts
from gpudoctor.probes.runner import ProbeFailed
from gpudoctor.probes.sysfs import exists, read_text


def block_device_of(path: str, sys_root: str = "/sys") -> str | None:
    """Whole-disk name (e.g. 'nvme0n1', 'vda') under ``path``; None for overlay/network/tmpfs."""
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    major, minor = os.major(dev), os.minor(dev)
    if major == 0:
        return None  # anonymous device: overlayfs, tmpfs, NFS, ...
    link = os.path.join(sys_root, "dev/block", f"{major}:{minor}")
    try:
        real = os.path.realpath(link)
    except OSError:
        return None
    if not exists(real):
        return None
    if exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    return os.path.basename(real)


def probe_storage(opts) -> StorageFacts:
    path = os.path.abspath(getattr(opts, "data_path", ".") or ".")
    if not os.path.exists(path):
        raise ProbeFailed(f"data path {path} does not exist", kind="missing")
    facts = StorageFacts(path=path)
    best = None
    try:
        for part in psutil.disk_partitions(all=True):
            mp = part.mountpoint
            if path == mp or path.startswith(mp.rstrip("/") + "/"):
                if best is None or len(mp) > len(best.mountpoint):
                    best = part
    except OSError:
        best = None
    if best is not None:
        facts.mount_point, facts.fs_type, facts.device = best.mountpoint, best.fstype, best.device
    try:
        usage = psutil.disk_usage(path)
        facts.total_bytes, facts.free_bytes = usage.total, usage.free
    except OSError:
        pass
    disk = block_device_of(path)
    facts.block_device = disk
    if disk:
        rot = read_text(f"/sys/block/{disk}/queue/rotational")
        facts.rotational = (rot == "1") if rot in ("0", "1") else None
        driver = os.path.basename(os.path.realpath(f"/sys/block/{disk}/device/driver")) if exists(
            f"/sys/block/{disk}/device/driver") else ""
        facts.virtual_disk = disk.startswith(("vd", "xvd")) or "virtio" in driver or "xen" in driver
    return facts
