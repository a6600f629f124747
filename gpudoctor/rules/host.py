"""Host rules (family HST): CPU cores, RAM, /dev/shm, storage."""
from __future__ import annotations

from gpudoctor.compat import data
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule

GIB = 1024 ** 3


def _gpus_or_na(ctx) -> int:
    nv = ctx.snap.nvml
    if nv is None or not nv.available:
        raise NotAssessed("NVML unusable (see DRV001): the GPU count is unknown")
    return len(ctx.gpus())  # NotAssessed when the GPU list is not in the inputs, NotApplicable when it is empty


def _share(ctx, section: str, field: str, what: str):
    """The GPU count and the host facts ``section`` to divide among the GPUs; NotAssessed when the section is
    missing or its ``field`` is empty."""
    n = _gpus_or_na(ctx)
    facts = getattr(ctx.snap, section)
    if facts is None or not getattr(facts, field):
        raise NotAssessed(f"{what} facts missing")
    return n, facts


@rule("HST001")
def cores_per_gpu(ctx):
    """Usable physical cores (affinity and cgroup quota, scaled by cores/threads) divided by the GPU count."""
    n, cpu = _share(ctx, "cpu", "usable_cores", "CPU")
    smt = (cpu.logical_cores / cpu.physical_cores) if cpu.physical_cores and cpu.logical_cores else 1.0
    physical = cpu.usable_cores / max(smt, 1.0)
    per_gpu = physical / n
    need = data.threshold("host.cores_per_gpu", "min")
    if per_gpu < need:
        yield ctx.finding([f"{cpu.usable_cores:g} usable logical CPUs (affinity {cpu.affinity_cores}, cgroup quota "
                           f"{cpu.cgroup_quota_cores if cpu.cgroup_quota_cores is not None else 'none'}), "
                           f"{smt:g} threads/core -> {physical:.1f} physical cores",
                           f"{n} GPU(s): {per_gpu:.1f} cores per GPU < {need}"],
                          data={"cores_per_gpu": round(per_gpu, 2), "min": need})


@rule("HST002")
def ram_per_gpu(ctx):
    """min(RAM, cgroup limit) in GiB divided by the GPU count."""
    n, mem = _share(ctx, "memory", "total_bytes", "memory")
    usable = min(mem.total_bytes, mem.cgroup_limit_bytes or mem.total_bytes)
    per_gpu = usable / GIB / n
    need = data.threshold("host.ram_per_gpu", "min_gib")
    if per_gpu < need:
        yield ctx.finding(
            [
                f"RAM {mem.total_bytes / GIB:.1f} GiB, cgroup limit "
                f"{(str(round(mem.cgroup_limit_bytes / GIB, 1)) + ' GiB') if mem.cgroup_limit_bytes else 'none'}",
                f"{n} GPU(s): {per_gpu:.1f} GiB per GPU < {need} GiB",
            ],
            data={"gib_per_gpu": round(per_gpu, 2), "min_gib": need},
        )


@rule("HST003")
def dev_shm(ctx):
    """Compares the size of /dev/shm (bytes) with the threshold."""
    mem = ctx.require("memory")
    if mem.shm_total_bytes is None:
        if not ctx.known("memory", "shm_total_bytes"):
            raise NotAssessed(f"/dev/shm size not in the facts (from {mem.source})")
        yield ctx.finding([f"{mem.shm_path} not mounted or unreadable"], title="/dev/shm missing",
                          data={"shm_total_bytes": None})
        return
    need = data.threshold("host.dev_shm", "min_bytes")
    if mem.shm_total_bytes < need:
        yield ctx.finding([f"{mem.shm_path}: {mem.shm_total_bytes / 2**20:.0f} MiB (< {need / 2**20:.0f} MiB)"],
                          severity="error" if ctx.gpu_count() >= 2 and mem.shm_total_bytes < need / 8 else None,
                          data={"shm_total_bytes": mem.shm_total_bytes, "min_bytes": need})


@rule("HST004")
def rotational(ctx):
    """Reads sysfs queue/rotational of the disk holding --data-path; a virtual disk's flag is not trusted."""
    st = ctx.require("storage")
    if st.rotational is None:
        raise NotApplicable(f"{st.path} is not on a local block device ({st.fs_type or 'unknown fs'})")
    if not st.rotational:
        return
    if st.virtual_disk:
        yield ctx.finding([f"{st.path} on {st.block_device} ({st.fs_type}): rotational=1 reported by a virtual disk",
                           "in a VM the flag says nothing about the real storage"],
                          severity="info", title="Data on a virtual disk that reports rotational (cannot tell)",
                          remedy="Measure read throughput (e.g. fio) if data loading is slow.",
                          data={"block_device": st.block_device, "virtual": True})
    else:
        yield ctx.finding([f"{st.path} on /dev/{st.block_device} ({st.fs_type}): rotational=1"],
                          data={"block_device": st.block_device, "virtual": False})
