"""This process's cgroup (v2 and v1) and the smallest limit on its path to the root (CPU quota, memory limit).

A limit anywhere above this process's cgroup applies too, so every folder from its own up to the hierarchy's
root is read. When /proc/self/cgroup points at a path not visible in the container's mount namespace, the
mount root itself is read. Missing, unreadable or malformed files are skipped, never raised.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from gpudoctor.probes.sysfs import read_text

Reader = Callable[[str], "float | None"]


def self_cgroup_path(root: str) -> tuple[str | None, dict[str, str]]:
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


def walk_up(base: str, rel: str) -> Iterator[str]:
    """Yield base/rel, then each parent up to base."""
    rel = (rel or "/").strip("/")
    parts = rel.split("/") if rel else []
    for i in range(len(parts), -1, -1):
        yield os.path.join(base, *parts[:i])


def smallest_limit(root: str, v2_read: Reader, v1_mounts: tuple[str, ...], v1_controller: str,
                   v1_read: Reader) -> float | None:
    """The smallest value ``v2_read`` (a v2 cgroup folder) or ``v1_read`` (a v1 one, under the first of
    ``v1_mounts`` mounted in sys/fs/cgroup) gives on this process's cgroup path; None = no limit anywhere."""
    v2, v1 = self_cgroup_path(root)
    dirs: list[tuple[Reader, str]] = []
    base2 = os.path.join(root, "sys/fs/cgroup")
    if v2 is not None:
        dirs += [(v2_read, d) for d in [*walk_up(base2, v2), base2]]
    for mount in v1_mounts:
        base1 = os.path.join(root, "sys/fs/cgroup", mount)
        if os.path.isdir(base1):
            dirs += [(v1_read, d) for d in [*walk_up(base1, v1.get(v1_controller, "/")), base1]]
            break
    values = [v for read, d in dirs if (v := read(d)) is not None]
    return min(values) if values else None
