"""Memory probe: RAM, cgroup limit, /dev/shm, and the nofile / memlock ulimits."""
from __future__ import annotations

import os
import resource
from typing import Literal

import psutil

from gpudoctor.facts.model import MemoryFacts
from gpudoctor.probes.cpu import _self_cgroup_path, _walk_up
from gpudoctor.probes.sysfs import read_text

# cgroup v1 reports "no limit" as a huge page-rounded number (e.g. 9223372036854771712).
_V1_UNLIMITED = 1 << 60


def cgroup_memory_limit(root: str = "/") -> int | None:
    """Smallest memory limit (bytes) on this process's cgroup path; None = no limit."""
    v2, v1 = _self_cgroup_path(root)
    best: int | None = None
    base2 = os.path.join(root, "sys/fs/cgroup")
    if v2 is not None:
        for d in list(_walk_up(base2, v2)) + [base2]:
            text = read_text(os.path.join(d, "memory.max"))
            if text and text != "max":
                try:
                    best = int(text) if best is None else min(best, int(text))
                except ValueError:
                    pass
    base1 = os.path.join(root, "sys/fs/cgroup/memory")
    if os.path.isdir(base1):
        for d in list(_walk_up(base1, v1.get("memory", "/"))) + [base1]:
            text = read_text(os.path.join(d, "memory.limit_in_bytes"))
            try:
                if text and int(text) < _V1_UNLIMITED:
                    best = int(text) if best is None else min(best, int(text))
            except ValueError:
                pass
    return best


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
