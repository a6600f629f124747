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

SCHEMA_VERSION = "1.1"  # 1.1: optional `confirmation` section

Unlimited = Literal["unlimited"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ProbeError(_Model):
    """A probe that failed, timed out or crashed. The scan goes on without it."""

    probe: str
    kind: Literal["error", "timeout", "crash", "missing"] = "error"
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


# --- confirmation runs (issue 9): short real workloads whose results become facts -----------------
class Stat(_Model):
    """Median and spread of repeated measurements (same unit as the field holding it)."""

    median: float
    min: float
    max: float
    p25: float
    p75: float
    rel_spread: float = Field(description="(max - min) / median")
    n: int


class ConfirmDevice(_Model):
    rank: int
    index: int = Field(description="torch device index (after CUDA_VISIBLE_DEVICES)")
    name: Optional[str] = None
    capability: Optional[str] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    total_memory_bytes: Optional[int] = None


class AllReduceResult(_Model):
    """One message size and dtype of the all-reduce sweep (nccl-tests definitions; GB/s = 1e9 B/s)."""

    dtype: str
    size_bytes: int
    iters: int = 0
    time_s: Optional[Stat] = Field(None, description="seconds per all-reduce, rank 0, device-event timing on GPU")
    algbw_gbs: Optional[float] = Field(None, description="size / median time, GB/s")
    busbw_gbs: Optional[float] = Field(None, description="algbw * 2(n-1)/n, GB/s")
    correct: Optional[bool] = Field(None, description="every element of the reduced tensor right on every rank")
    max_abs_error: Optional[float] = None
    error: Optional[str] = None


class CopyResult(_Model):
    """Pinned host<->device copy bandwidth of one GPU, measured alone (GB/s = 1e9 B/s)."""

    rank: int
    device_index: int
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    size_bytes: int
    h2d_gbs: Stat
    d2h_gbs: Stat


class StepTimes(_Model):
    """Per-step times of a training step, seconds: device events on GPU, wall clock on CPU (checklist C3)."""

    step_s: Stat
    forward_s: Stat
    backward_s: Stat = Field(description="includes DDP's gradient all-reduce overlapped with it")
    optimizer_s: Stat
    batch: int = Field(description="samples per step on one rank")


class RankMemory(_Model):
    rank: int
    peak_allocated_bytes: Optional[int] = Field(None, description="torch.cuda.max_memory_allocated (checklist C4)")
    peak_reserved_bytes: Optional[int] = None
    peak_rss_bytes: Optional[int] = Field(None, description="CPU path: peak resident set size of the rank")


class DdpResult(_Model):
    """The DDP BERT smoke step and its scaling efficiency (checklist C2-C5, C8)."""

    model: str
    params: int
    grad_bytes: int = Field(description="fp32 gradient bytes all-reduced per step")
    precision: str
    optimizer: str
    world_size: int
    per_rank_batch: int
    global_batch: int
    seq_len: int
    warmup_steps: int
    timed_steps: int
    scaling: Literal["weak", "strong"] = Field(description="weak: per-GPU batch fixed; strong: global batch fixed")
    step: StepTimes = Field(description="world size n, rank 0")
    nosync_step_s: Optional[Stat] = Field(None, description="step time under DDP no_sync (no gradient all-reduce)")
    single: Optional[StepTimes] = Field(None, description="T1: the same model and settings on one device, no DDP")
    efficiency: Optional[float] = Field(None, description="E = (throughput_n / throughput_1) / n from median times")
    efficiency_low: Optional[float] = Field(None, description="E from the slow quartiles (p75 of Tn, p25 of T1)")
    efficiency_high: Optional[float] = None
    grad_allreduce_s: Optional[Stat] = Field(None, description="one all-reduce of the gradient size, fp32")
    samples_per_s: Optional[float] = Field(None, description="global samples per second at world size n")
    loss_first: Optional[float] = None
    loss_last: Optional[float] = None
    loss_finite: bool = True
    params_max_abs_diff: Optional[float] = Field(None, description="max |p_i - p_j| over ranks after the steps")
    memory: list[RankMemory] = Field(default_factory=list)


class RankStatus(_Model):
    """How one rank of a run ended, with its last phase and log tails (checklist C6)."""

    rank: int
    exitcode: Optional[int] = None
    phase: Optional[str] = None
    label: Optional[str] = Field(None, description="what the rank was doing last, e.g. 'all-reduce bfloat16 64 MiB'")
    joined: bool = Field(False, description="got through the rendezvous")
    error: Optional[str] = None
    nccl_warnings: list[str] = Field(default_factory=list, description="last 'NCCL WARN' lines of its NCCL log")
    log_tail: list[str] = Field(default_factory=list)


class ConfirmationRun(_Model):
    """One launch of the workers (the main run, or a transport re-run)."""

    name: str
    env: dict[str, str] = Field(default_factory=dict, description="variables set for this run only")
    status: Literal["ok", "failed", "hung", "error"]
    message: Optional[str] = None
    culprit_rank: Optional[int] = None
    seconds: float
    timeout_s: float
    orphans_killed: int = Field(0, description="processes of the run still alive after the launcher ended")
    log_dir: Optional[str] = Field(None, description="this run's per-rank logs (kept when it failed)")
    ranks: list[RankStatus] = Field(default_factory=list)


class ConfirmationFacts(_Model):
    source: str = "gpudoctor confirmation runs: torch.multiprocessing spawn in the target interpreter, 127.0.0.1 rendezvous"
    status: Literal["ok", "failed", "hung", "error", "skipped", "not_applicable"]
    reason: Optional[str] = None
    interpreter: Optional[str] = None
    torch_version: Optional[str] = None
    nccl_version: Optional[str] = None
    backend: Optional[str] = None
    device: Optional[str] = Field(None, description="cuda or cpu")
    world_size: Optional[int] = None
    tasks: list[str] = Field(default_factory=list)
    seconds: Optional[float] = None
    log_dir: Optional[str] = Field(None, description="per-rank logs, kept when a run failed")
    devices: list[ConfirmDevice] = Field(default_factory=list)
    allreduce: list[AllReduceResult] = Field(default_factory=list)
    copies: list[CopyResult] = Field(default_factory=list)
    ddp: Optional[DdpResult] = None
    runs: list[ConfirmationRun] = Field(default_factory=list, description="the main run first, then transport re-runs")
    transport_verdict: Optional[Literal["p2p", "shm", "either", "neither"]] = Field(
        None, description="which NCCL transport the re-runs blame (None: no re-run)")


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
    probe_errors: list[ProbeError] = Field(default_factory=list)
    probe_seconds: dict[str, float] = Field(default_factory=dict, description="wall time of each probe, s")
    confirmation: Optional[ConfirmationFacts] = Field(None, description="confirmation runs; None when not run")
