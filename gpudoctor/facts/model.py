"""The typed, versioned snapshot of everything gpudoctor probed.

Every section names its ``source`` (where its values came from: NVML, sysfs, a
subprocess, the torch probe, ...). Units are in the field names: ``*_bytes`` are
bytes, ``*_w`` watts, ``*_c`` degrees Celsius, ``*_s`` seconds. ``None`` means
"not known" (the probe could not read it); a value NVML reports as *Not
Supported* is listed in the GPU's ``unsupported`` list instead, so that
"not supported" is distinct from "0" and from "probe failed".

Bump :data:`SCHEMA_VERSION` (major) when a field is removed or changes meaning;
add fields in a minor bump. ``gpudoctor check`` refuses snapshots of a newer
major version.
"""
from __future__ import annotations

from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.0"

Unlimited = Literal["unlimited"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ProbeError(_Model):
    """A probe that failed, timed out or crashed. The scan goes on without it."""

    probe: str
    kind: Literal["error", "timeout", "crash", "missing", "interrupted"] = "error"
    message: str
    seconds: float = Field(description="wall time the probe ran before it failed, s")


class HostFacts(_Model):
    source: str = "platform, /etc/os-release, /proc/1/cgroup, /sys/class/dmi/id, /proc/cpuinfo"
    hostname: Optional[str] = None
    os_name: Optional[str] = Field(None, description="PRETTY_NAME from /etc/os-release")
    kernel: Optional[str] = None
    arch: Optional[str] = None
    python_version: Optional[str] = Field(None, description="of the interpreter running gpudoctor")
    python_executable: Optional[str] = None
    container: Optional[str] = Field(None, description="docker, podman, kubernetes, lxc, ... or None on bare metal / VM")
    virtualization: Optional[str] = Field(None, description="hypervisor vendor (e.g. KVM) or None when none was detected")


class CpuFacts(_Model):
    source: str = "psutil, os.sched_getaffinity, cgroup cpu.max / cpu.cfs_quota_us, /proc/cpuinfo, py-cpuinfo"
    model: Optional[str] = None
    sockets: Optional[int] = None
    physical_cores: Optional[int] = None
    logical_cores: Optional[int] = None
    affinity_cores: Optional[int] = Field(None, description="logical CPUs in this process's affinity mask")
    cgroup_quota_cores: Optional[float] = Field(None, description="CPU quota of the cgroup in cores; None = no quota")
    usable_cores: Optional[float] = Field(None, description="min(affinity, cgroup quota): cores this process may really use")
    numa_nodes: Optional[int] = None
    flags_count: Optional[int] = Field(None, description="number of CPU feature flags (py-cpuinfo)")


class MemoryFacts(_Model):
    source: str = "psutil, cgroup memory.max / memory.limit_in_bytes, statvfs(/dev/shm), getrlimit"
    total_bytes: Optional[int] = None
    available_bytes: Optional[int] = None
    cgroup_limit_bytes: Optional[int] = Field(None, description="None = no cgroup memory limit")
    shm_path: str = "/dev/shm"
    shm_total_bytes: Optional[int] = None
    shm_free_bytes: Optional[int] = None
    nofile_soft: Union[int, Unlimited, None] = None
    nofile_hard: Union[int, Unlimited, None] = None
    memlock_soft_bytes: Union[int, Unlimited, None] = None
    memlock_hard_bytes: Union[int, Unlimited, None] = None


class StorageFacts(_Model):
    source: str = "psutil.disk_partitions, os.statvfs, /sys/block/*/queue/rotational"
    path: str
    mount_point: Optional[str] = None
    fs_type: Optional[str] = None
    device: Optional[str] = None
    block_device: Optional[str] = Field(None, description="the whole disk under the mount (e.g. nvme0n1, vda)")
    rotational: Optional[bool] = Field(None, description="sysfs queue/rotational of the block device")
    virtual_disk: Optional[bool] = Field(None, description="virtio/xen disk: the rotational flag means nothing there")
    total_bytes: Optional[int] = None
    free_bytes: Optional[int] = None


class GpuProcess(_Model):
    pid: int
    name: Optional[str] = None
    used_memory_bytes: Optional[int] = None
    kind: Literal["compute", "graphics"] = "compute"


class NvLinkState(_Model):
    link: int
    active: bool
    version: Optional[int] = None


class GpuFacts(_Model):
    """One GPU as NVML sees it (plus sysfs NUMA node)."""

    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    compute_capability: Optional[str] = Field(None, description="major.minor, e.g. '9.0'")
    memory_total_bytes: Optional[int] = None
    memory_used_bytes: Optional[int] = None
    temperature_c: Optional[int] = None
    temperature_slowdown_c: Optional[int] = None
    temperature_shutdown_c: Optional[int] = None
    power_draw_w: Optional[float] = None
    power_limit_w: Optional[float] = Field(None, description="enforced power limit")
    power_default_limit_w: Optional[float] = None
    pcie_gen_current: Optional[int] = None
    pcie_gen_max: Optional[int] = Field(None, description="max of GPU and system (NVML MaxPcieLinkGeneration)")
    pcie_gen_gpu_max: Optional[int] = Field(None, description="max the GPU itself supports")
    pcie_width_current: Optional[int] = None
    pcie_width_max: Optional[int] = None
    pcie_replay_counter: Optional[int] = None
    utilization_gpu_pct: Optional[int] = None
    pstate: Optional[int] = Field(None, description="performance state, 0 = P0 (max)")
    clock_event_reasons_mask: Optional[int] = None
    clock_event_reasons: list[str] = Field(default_factory=list, description="decoded names of the active reasons")
    persistence_mode: Optional[bool] = None
    compute_mode: Optional[str] = Field(None, description="Default, Exclusive_Thread, Prohibited, Exclusive_Process")
    mig_mode_current: Optional[bool] = None
    mig_mode_pending: Optional[bool] = None
    ecc_mode_current: Optional[bool] = None
    ecc_uncorrected_volatile: Optional[int] = None
    ecc_uncorrected_aggregate: Optional[int] = None
    remapped_rows_correctable: Optional[int] = None
    remapped_rows_uncorrectable: Optional[int] = None
    remapped_rows_pending: Optional[bool] = None
    remapped_rows_failure: Optional[bool] = None
    processes: list[GpuProcess] = Field(default_factory=list)
    numa_node: Optional[int] = Field(None, description="NVML NUMA node, else sysfs numa_node; None when neither knows (-1)")
    nvlinks: list[NvLinkState] = Field(default_factory=list)
    unsupported: list[str] = Field(default_factory=list, description="queries NVML answered 'Not Supported'")
    errors: dict[str, str] = Field(default_factory=dict, description="queries that failed, with NVML's message")


class NvmlFacts(_Model):
    source: str = "NVML (nvidia-ml-py), in an isolated subprocess; sysfs for NUMA fallback"
    available: bool = False
    error: Optional[str] = Field(None, description="why NVML is unusable (no driver, library missing, init failed)")
    driver_version: Optional[str] = None
    cuda_driver_version: Optional[str] = Field(None, description="highest CUDA the driver supports, e.g. '13.0'")
    nvml_version: Optional[str] = None
    gpu_count: int = 0
    gpus: list[GpuFacts] = Field(default_factory=list)
    kernel_module: Optional[str] = Field(None, description="first line of /proc/driver/nvidia/version")


class TorchDevice(_Model):
    index: int
    name: Optional[str] = None
    capability: Optional[str] = None
    total_memory_bytes: Optional[int] = None


class TorchFacts(_Model):
    source: str = "a subprocess of the target interpreter importing torch"
    interpreter: str
    interpreter_version: Optional[str] = None
    installed: bool = False
    version: Optional[str] = None
    cuda: Optional[str] = Field(None, description="torch.version.cuda; None on a CPU-only build")
    hip: Optional[str] = None
    cudnn_version: Optional[int] = None
    nccl_version: Optional[str] = None
    arch_list: list[str] = Field(default_factory=list)
    cuda_available: Optional[bool] = None
    cuda_error: Optional[str] = Field(None, description="warning or error text from CUDA initialisation")
    device_count: Optional[int] = None
    devices: list[TorchDevice] = Field(default_factory=list)
    bf16_supported: Optional[bool] = None
    torchvision_version: Optional[str] = None
    torchvision_error: Optional[str] = None
    torchaudio_version: Optional[str] = None
    cuda_home: Optional[str] = None
    nvcc_version: Optional[str] = None
    import_seconds: Optional[float] = None
    error: Optional[str] = Field(None, description="import failure, when torch is present but cannot be imported")


class EnvFacts(_Model):
    source: str = "os.environ (NCCL_*, TORCH_*, CUDA_*, NVIDIA_*, PYTORCH_*, OMP_NUM_THREADS, LD_LIBRARY_PATH)"
    variables: dict[str, str] = Field(default_factory=dict, description="secret-looking values are replaced by '<redacted>'")


class SharedLibrary(_Model):
    """A cuDNN / NCCL / libcuda library file found in an LD_LIBRARY_PATH directory (by name, never loaded)."""

    kind: Literal["cudnn", "nccl", "cuda"] = Field(description="cuda = libcuda.so, the user-mode driver (cuda-compat)")
    path: str
    directory: str
    version: Optional[str] = Field(None, description="from the file name or its symlink target, e.g. '9.1.0'")


class LibPathFacts(_Model):
    source: str = "file names in the LD_LIBRARY_PATH directories (nothing is loaded)"
    ld_library_path: list[str] = Field(default_factory=list)
    libraries: list[SharedLibrary] = Field(default_factory=list)


class Snapshot(_Model):
    """Everything probed on one host, at one time."""

    schema_version: str = SCHEMA_VERSION
    gpudoctor_version: str
    created_at: str = Field(description="ISO 8601 UTC")
    duration_s: Optional[float] = None
    data_path: Optional[str] = None
    host: Optional[HostFacts] = None
    cpu: Optional[CpuFacts] = None
    memory: Optional[MemoryFacts] = None
    storage: Optional[StorageFacts] = None
    nvml: Optional[NvmlFacts] = None
    torch: Optional[TorchFacts] = None
    env: Optional[EnvFacts] = None
    libpath: Optional[LibPathFacts] = None
    probe_errors: list[ProbeError] = Field(default_factory=list)
    probe_seconds: dict[str, float] = Field(default_factory=dict, description="wall time of each probe, s")
