"""Memory probe: RAM, cgroup limit, /dev/shm, and the nofile / memlock ulimits."""
from __future__ import annotations

import os
import resource
from typing import Literal

import psutil

from gpudoctor.facts.model import MemoryFacts
from gpudoctor.probes.cgroup import smallest_limit
from gpudoctor.probes.sysfs import read_text

# cgroup v1 reports "no limit" as a huge page-rounded number (e.g. 9223372036854771712).
_V1_UNLIMITED = 1 << 60


def _v2_bytes(d: str) -> int | None:
    text = read_text(os.path.join(d, "memory.max"))
    try:
        return int(text) if text and text != "max" else None
    except ValueError:
        return None


def _v1_bytes(d: str) -> int | None:
    text = read_text(os.path.join(d, "memory.limit_in_bytes"))
    try:
        return int(text) if text and int(text) < _V1_UNLIMITED else None
    except ValueError:
        return None


def cgroup_memory_limit(root: str = "/") -> int | None:
    """Smallest memory limit (bytes) on this process's cgroup path; None = no limit."""
    limit = smallest_limit(root, _v2_bytes, ("memory",), "memory", _v1_bytes)
    return None if limit is None else int(limit)


def _limit(value: int) -> int | Literal["unlimited"]:
    return "unlimited" if value == resource.RLIM_INFINITY else int(value)


def probe_memory(_opts=None) -> MemoryFacts:
    vm = psutil.virtual_memory()
    facts = MemoryFacts(total_bytes=vm.total, available_bytes=vm.available,
                        cgroup_limit_bytes=cgroup_memory_limit())
    try:
        st = os.statvfs(facts.shm_path)
        facts.shm_total_bytes = st.f_blocks * st.f_frsize
        facts.shm_free_bytes = st.f_bavail * st.f_frsize
    except OSError:
        pass
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    facts.nofile_soft, facts.nofile_hard = _limit(soft), _limit(hard)
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    facts.memlock_soft_bytes, facts.memlock_hard_bytes = _limit(soft), _limit(hard)
    return facts
