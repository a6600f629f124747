"""CPU probe: model, sockets, cores, and the cores this process may really use."""
from __future__ import annotations

import glob
import os

import psutil

from gpudoctor.facts.model import CpuFacts
from gpudoctor.probes.cgroup import smallest_limit
from gpudoctor.probes.sysfs import read_text


def _v2_cores(d: str) -> float | None:
    """cgroup v2 ``cpu.max`` ("QUOTA PERIOD" in µs, or "max"): cores."""
    text = read_text(os.path.join(d, "cpu.max"))
    if not text:
        return None
    q, _, p = text.partition(" ")
    if q == "max":
        return None
    try:
        quota, period = int(q), int(p or "100000")
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None  # zero/negative: a broken file, not a limit


def _v1_cores(d: str) -> float | None:
    """cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``: cores."""
    q1 = read_text(os.path.join(d, "cpu.cfs_quota_us"))
    p1 = read_text(os.path.join(d, "cpu.cfs_period_us"))
    try:
        quota, period = (int(q1), int(p1)) if q1 and p1 else (0, 0)
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None  # -1 = unlimited; a zero period is broken


def cgroup_cpu_quota(root: str = "/") -> float | None:
    """CPU quota in cores from cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``; None = unlimited.

    The smallest quota on the path from this process's cgroup to the root wins (:mod:`gpudoctor.probes.cgroup`);
    missing, unreadable or malformed files (a zero or negative period or quota) are skipped, never raised.
    """
    return smallest_limit(root, _v2_cores, ("cpu", "cpu,cpuacct", "cpuacct,cpu"), "cpu", _v1_cores)


def count_sockets(root: str = "/") -> int | None:
    ids = set()
    for path in glob.glob(os.path.join(root, "sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id")):
        val = read_text(path)
        if val is not None:
            ids.add(val)
    if ids:
        return len(ids)
    text = read_text(os.path.join(root, "proc/cpuinfo"), limit=1 << 22) or ""
    ids = {line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("physical id")}
    return len(ids) or None


def cpu_model(root: str = "/") -> str | None:
    text = read_text(os.path.join(root, "proc/cpuinfo"), limit=65536) or ""
    for line in text.splitlines():
        if line.startswith(("model name", "Model", "cpu model")):
            return line.split(":", 1)[1].strip()
    return None


def _physical_cores() -> int | None:
    """psutil's physical core count; None when /proc/cpuinfo or sysfs cannot be read (psutil raises then)."""
    try:
        return psutil.cpu_count(logical=False)
    except (OSError, psutil.Error):
        return None


def probe_cpu(_opts=None) -> CpuFacts:
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    quota = cgroup_cpu_quota()
    logical = psutil.cpu_count(logical=True)
    candidates = [c for c in (affinity, quota, logical) if c]
    model = cpu_model()
    if model is None:
        # py-cpuinfo is slow (~1.3 s): only asked when /proc/cpuinfo has no model name (e.g. some Arm hosts).
        try:
            import cpuinfo

            model = cpuinfo.get_cpu_info().get("brand_raw") or None
        except Exception:
            model = None
    nodes = len(glob.glob("/sys/devices/system/node/node[0-9]*")) or None
    return CpuFacts(
        model=model,
        sockets=count_sockets(),
        physical_cores=_physical_cores(),
        logical_cores=logical,
        affinity_cores=affinity,
        cgroup_quota_cores=round(quota, 3) if quota is not None else None,
        usable_cores=round(min(candidates), 3) if candidates else None,
        numa_nodes=nodes,
    )
