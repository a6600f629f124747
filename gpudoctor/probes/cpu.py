"""CPU probe: model, sockets, cores, and the cores this process may really use."""
from __future__ import annotations

import glob
import os

import psutil

from gpudoctor.facts.model import CpuFacts
from gpudoctor.probes.sysfs import read_text


def _self_cgroup_path(root: str) -> tuple[str | None, dict[str, str]]:
    """(cgroup v2 path, {v1 controller: path}) of this process, from /proc/self/cgroup."""
    v2, v1 = None, {}
    for line in (read_text(os.path.join(root, "proc/self/cgroup")) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            v2 = path
        for c in controllers.split(","):
            if c:
                v1[c] = path
    return v2, v1


def _walk_up(base: str, rel: str):
    """Yield base/rel, then each parent up to base (a limit anywhere above applies too)."""
    rel = (rel or "/").strip("/")
    parts = rel.split("/") if rel else []
    for i in range(len(parts), -1, -1):
        yield os.path.join(base, *parts[:i])


def cgroup_cpu_quota(root: str = "/") -> float | None:
    """CPU quota in cores from cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``; None = unlimited.

    The smallest quota on the path from this process's cgroup to the root wins. When
    /proc/self/cgroup points at a path not visible in the container's mount
    namespace, the mount root itself is read. Missing, unreadable or malformed files (a
    zero or negative period or quota) are skipped, never raised.
    """
    v2, v1 = _self_cgroup_path(root)
    best: float | None = None
    base2 = os.path.join(root, "sys/fs/cgroup")
    if v2 is not None:
        for d in list(_walk_up(base2, v2)) + [base2]:
            text = read_text(os.path.join(d, "cpu.max"))
            if text:
                q, _, p = text.partition(" ")
                if q != "max":
                    try:
                        quota, period = int(q), int(p or "100000")
                    except ValueError:
                        continue
                    if quota > 0 and period > 0:  # a zero/negative value is a broken file, not a limit
                        cores = quota / period
                        best = cores if best is None else min(best, cores)
    for ctl in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        base1 = os.path.join(root, "sys/fs/cgroup", ctl)
        if not os.path.isdir(base1):
            continue
        for d in list(_walk_up(base1, v1.get("cpu", "/"))) + [base1]:
            q1 = read_text(os.path.join(d, "cpu.cfs_quota_us"))
            p1 = read_text(os.path.join(d, "cpu.cfs_period_us"))
            try:
                quota, period = (int(q1), int(p1)) if q1 and p1 else (0, 0)
            except ValueError:
                continue
            if quota > 0 and period > 0:  # -1 = unlimited; a zero period is a broken file, not a limit
                cores = quota / period
                best = cores if best is None else min(best, cores)
        break
    return best


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
