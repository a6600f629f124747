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

SCHEMA_VERSION = "1.1"

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
    speed_gbps: Optional[float] = Field(None, description="per-link speed in GB/s as `nvidia-smi nvlink -s` prints it")


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
    fabric_states: dict[int, str] = Field(default_factory=dict, description="GPU index -> NVSwitch fabric state "
                                          "(nvidia-smi -q 'Fabric State': In Progress / Completed); N/A omitted")


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


class PciDevice(_Model):
    """One PCI function as `lspci -vvv` shows it (fields None when the paste lacks them)."""

    bdf: Optional[str] = Field(None, description="domain:bus:device.function; None for grep output without headers")
    description: Optional[str] = None
    link_cap_speed_gts: Optional[float] = Field(None, description="LnkCap speed, GT/s")
    link_cap_width: Optional[int] = None
    link_sta_speed_gts: Optional[float] = Field(None, description="LnkSta speed, GT/s")
    link_sta_width: Optional[int] = None
    speed_downgraded: Optional[bool] = Field(None, description="lspci marks LnkSta speed '(downgraded)'")
    width_downgraded: Optional[bool] = None
    acs_cap: dict[str, bool] = Field(default_factory=dict, description="ACSCap flags, e.g. {'ReqRedir': True}")
    acs_ctl: dict[str, bool] = Field(default_factory=dict, description="ACSCtl flags (enabled = True)")


class PciFacts(_Model):
    source: str = "lspci -vvv text"
    devices: list[PciDevice] = Field(default_factory=list)


class SignatureHit(_Model):
    """Lines of the given logs / error text that match one entry of rules/signatures.toml."""

    id: str
    count: int = Field(description="matches over all inputs")
    lines: list[str] = Field(default_factory=list, description="the first matching lines (trimmed)")
    files: list[str] = Field(default_factory=list)
    groups: dict[str, str] = Field(default_factory=dict, description="named groups of the first match")


class XidEvent(_Model):
    xid: int
    pci_bus_id: Optional[str] = None
    line: str
    file: Optional[str] = None


class NcclLogFacts(_Model):
    """What an NCCL_DEBUG=INFO/WARN log says (possibly from several ranks and hosts)."""

    version: Optional[str] = None
    cuda_driver_version: Optional[str] = Field(None, description="'cudaDriverVersion 13000' -> '13.0'")
    ib_device_found: Optional[bool] = None
    net: Optional[str] = Field(None, description="network transport chosen: IB, Socket, or a plugin name")
    transports: list[str] = Field(default_factory=list, description="distinct channel transports, e.g. P2P/IPC, SHM/direct, NET/IB/1/GDRDMA")
    host_net_transports: dict[str, list[str]] = Field(default_factory=dict, description="host -> distinct NET/... transports")
    gdr_disabled_hcas: list[str] = Field(default_factory=list)
    env_set: dict[str, str] = Field(default_factory=dict, description="'NCCL_X set by environment to Y' lines")
    warnings: list[str] = Field(default_factory=list, description="NCCL WARN lines (first ones)")
    nranks: Optional[int] = None
    nvls_channels: Optional[int] = None
    init_complete: bool = False


class LogFacts(_Model):
    source: str = "log and error text given to `gpudoctor check`"
    lines_scanned: int = 0
    signatures: list[SignatureHit] = Field(default_factory=list)
    xids: list[XidEvent] = Field(default_factory=list)
    nccl: Optional[NcclLogFacts] = None
    kernel_messages: list[str] = Field(default_factory=list, description="NVRM lines of the kernel log, continuation lines joined")
    error_lines: list[str] = Field(default_factory=list, description="error-looking lines no signature explains")
    commands: list[str] = Field(default_factory=list, description="shell commands found (docker run ...), secrets redacted")
    peer_access: dict[str, bool] = Field(default_factory=dict, description="'a,b' -> cudaDeviceCanAccessPeer(a, b) "
                                         "as a pasted check printed it")


class InputFile(_Model):
    """One file given to `gpudoctor check`: what it was recognised as and which sections it fed."""

    path: str
    kinds: list[str] = Field(default_factory=list)
    sections: list[str] = Field(default_factory=list)
    note: Optional[str] = Field(None, description="e.g. 'recognised as nvidia-smi topo -m; parser not available'")


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
    pci: Optional[PciFacts] = None
    logs: Optional[LogFacts] = None
    inputs: list[InputFile] = Field(default_factory=list, description="files read by `gpudoctor check` (empty for a scan)")
    known_fields: dict[str, list[str]] = Field(
        default_factory=dict,
        description="for sections built from partial text: the fields the text gave ('nvml.gpus' for GPU fields, "
                    "'env' for variable names when only some were seen); a section absent here was probed in full")
    probe_errors: list[ProbeError] = Field(default_factory=list)
    probe_seconds: dict[str, float] = Field(default_factory=dict, description="wall time of each probe, s")
