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

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.4"  # 1.1: topology, libpath, logs; 1.2: confirmation; 1.3: ddp.batch_choice, nvlinks.errors_after
# 1.4: one NvLink model (GpuFacts.nvlinks and TopologyFacts.nvlinks: same fields); NvmlFacts.fabric_states removed
#      (never read; TopologyFacts.fabric holds the fabric state). 1.3 reports load: extra keys are ignored.

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
    hostname: str | None = None
    os_name: str | None = Field(None, description="PRETTY_NAME from /etc/os-release")
    kernel: str | None = None
    arch: str | None = None
    python_version: str | None = Field(None, description="of the interpreter running gpudoctor")
    python_executable: str | None = None
    container: str | None = Field(None, description="docker, podman, kubernetes, lxc, ... or None on bare metal / VM")
    virtualization: str | None = Field(None, description="hypervisor vendor (e.g. KVM) or None when none was detected")


class CpuFacts(_Model):
    source: str = "psutil, os.sched_getaffinity, cgroup cpu.max / cpu.cfs_quota_us, /proc/cpuinfo, py-cpuinfo"
    model: str | None = None
    sockets: int | None = None
    physical_cores: int | None = None
    logical_cores: int | None = None
    affinity_cores: int | None = Field(None, description="logical CPUs in this process's affinity mask")
    cgroup_quota_cores: float | None = Field(None, description="CPU quota of the cgroup in cores; None = no quota")
    usable_cores: float | None = Field(None, description="min(affinity, cgroup quota): cores this process may really use")
    numa_nodes: int | None = None
    flags_count: int | None = Field(None, description="number of CPU feature flags (py-cpuinfo)")


class MemoryFacts(_Model):
    source: str = "psutil, cgroup memory.max / memory.limit_in_bytes, statvfs(/dev/shm), getrlimit"
    total_bytes: int | None = None
    available_bytes: int | None = None
    cgroup_limit_bytes: int | None = Field(None, description="None = no cgroup memory limit")
    shm_path: str = "/dev/shm"
    shm_total_bytes: int | None = None
    shm_free_bytes: int | None = None
    nofile_soft: int | Unlimited | None = None
    nofile_hard: int | Unlimited | None = None
    memlock_soft_bytes: int | Unlimited | None = None
    memlock_hard_bytes: int | Unlimited | None = None


class StorageFacts(_Model):
    source: str = "psutil.disk_partitions, os.statvfs, /sys/block/*/queue/rotational"
    path: str
    mount_point: str | None = None
    fs_type: str | None = None
    device: str | None = None
    block_device: str | None = Field(None, description="the whole disk under the mount (e.g. nvme0n1, vda)")
    rotational: bool | None = Field(None, description="sysfs queue/rotational of the block device")
    virtual_disk: bool | None = Field(None, description="virtio/xen disk: the rotational flag means nothing there")
    total_bytes: int | None = None
    free_bytes: int | None = None


class GpuProcess(_Model):
    pid: int
    name: str | None = None
    used_memory_bytes: int | None = None
    kind: Literal["compute", "graphics"] = "compute"


class NvLink(_Model):
    """One NVLink of one GPU: from NVML (the worker) or `nvidia-smi nvlink -s`. In ``GpuFacts.nvlinks`` the GPU is
    the parent (``gpu`` may be None); in ``TopologyFacts.nvlinks`` ``gpu`` names it."""

    gpu: int | None = None
    link: int
    active: bool
    version: int | None = Field(None, description="NVML nvmlNvlinkVersion_t value, not the generation: 4 = NVLink "
                                   "3.0, 6 = 4.0, 7 = 5.0 (gpudoctor.facts.topology.nvlink_generation)")
    speed_gbps: float | None = Field(None, description="per-link speed in GB/s as `nvidia-smi nvlink -s` prints it")
    remote_type: str | None = Field(None, description="gpu, switch, ibmnpu, unknown")
    remote_bus_id: str | None = None
    errors: dict[str, int] = Field(default_factory=dict, description="replay, recovery, crc_flit, crc_data counters")
    errors_after: dict[str, int] | None = Field(
        None, description="the same counters re-read after the confirmation runs loaded the links (None: not re-read)")


#: the names of NvLink before schema 1.4 (one model since; kept so that older imports keep working)
NvLinkState = NvLinkDetail = NvLink


class GpuFacts(_Model):
    """One GPU as NVML sees it (plus sysfs NUMA node)."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    compute_capability: str | None = Field(None, description="major.minor, e.g. '9.0'")
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    temperature_c: int | None = None
    temperature_slowdown_c: int | None = None
    temperature_shutdown_c: int | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = Field(None, description="enforced power limit")
    power_default_limit_w: float | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = Field(None, description="max of GPU and system (NVML MaxPcieLinkGeneration)")
    pcie_gen_gpu_max: int | None = Field(None, description="max the GPU itself supports")
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    pcie_replay_counter: int | None = None
    utilization_gpu_pct: int | None = None
    pstate: int | None = Field(None, description="performance state, 0 = P0 (max)")
    clock_event_reasons_mask: int | None = None
    clock_event_reasons: list[str] = Field(default_factory=list, description="decoded names of the active reasons")
    persistence_mode: bool | None = None
    compute_mode: str | None = Field(None, description="Default, Exclusive_Thread, Prohibited, Exclusive_Process")
    mig_mode_current: bool | None = None
    mig_mode_pending: bool | None = None
    ecc_mode_current: bool | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    processes: list[GpuProcess] = Field(default_factory=list)
    numa_node: int | None = Field(None, description="NVML NUMA node, else sysfs numa_node; None when neither knows (-1)")
    nvlinks: list[NvLink] = Field(default_factory=list)
    unsupported: list[str] = Field(default_factory=list, description="queries NVML answered 'Not Supported'")
    errors: dict[str, str] = Field(default_factory=dict, description="queries that failed, with NVML's message")


class NvmlFacts(_Model):
    source: str = "NVML (nvidia-ml-py), in an isolated subprocess; sysfs for NUMA fallback"
    available: bool = False
    error: str | None = Field(None, description="why NVML is unusable (no driver, library missing, init failed)")
    driver_version: str | None = None
    cuda_driver_version: str | None = Field(None, description="highest CUDA the driver supports, e.g. '13.0'")
    nvml_version: str | None = None
    gpu_count: int = 0
    gpus: list[GpuFacts] = Field(default_factory=list)
    kernel_module: str | None = Field(None, description="first line of /proc/driver/nvidia/version")


class TorchDevice(_Model):
    index: int
    name: str | None = None
    capability: str | None = None
    total_memory_bytes: int | None = None


class TorchFacts(_Model):
    source: str = "a subprocess of the target interpreter importing torch"
    interpreter: str
    interpreter_version: str | None = None
    installed: bool = False
    version: str | None = None
    cuda: str | None = Field(None, description="torch.version.cuda; None on a CPU-only build")
    hip: str | None = None
    cudnn_version: int | None = None
    nccl_version: str | None = None
    arch_list: list[str] = Field(default_factory=list)
    cuda_available: bool | None = None
    cuda_error: str | None = Field(None, description="warning or error text from CUDA initialisation")
    device_count: int | None = None
    devices: list[TorchDevice] = Field(default_factory=list)
    bf16_supported: bool | None = None
    torchvision_version: str | None = None
    torchvision_error: str | None = None
    torchaudio_version: str | None = None
    cuda_home: str | None = None
    nvcc_version: str | None = None
    import_seconds: float | None = None
    cuda_init_seconds: float | None = Field(None, description="torch.cuda.is_available() + device_count(), s")
    properties_seconds: float | None = Field(None, description="get_device_properties for every device, s")
    error: str | None = Field(None, description="import failure, when torch is present but cannot be imported")


class EnvFacts(_Model):
    source: str = "os.environ (NCCL_*, TORCH_*, CUDA_*, NVIDIA_*, PYTORCH_*, OMP_NUM_THREADS, LD_LIBRARY_PATH)"
    variables: dict[str, str] = Field(default_factory=dict, description="secret-looking values are replaced by '<redacted>'")


# --- topology and interconnect (issue 3) ---------------------------------------------------------

class TopoDeviceInfo(_Model):
    """One row of `nvidia-smi topo -m`: a GPU or a NIC, with its affinity columns."""

    name: str = Field(description="the matrix label: GPU0, NIC0, or a device name (mlx5_0) in old formats")
    kind: Literal["gpu", "nic"]
    nic_name: str | None = Field(None, description="NIC device name from the NIC Legend (mlx5_0) or the label")
    cpu_affinity: str | None = Field(None, description="CPU list, e.g. '0-23,48-71'; None = not shown / N/A")
    numa_affinity: str | None = Field(None, description="NUMA node(s) of the CPUs close to it; None = N/A")
    gpu_numa_id: str | None = Field(None, description="the GPU's own NUMA node (Grace/C2C systems); None = N/A")


class TopoMatrix(_Model):
    """The parsed `nvidia-smi topo -m` matrix (see gpudoctor.parsers.topo)."""

    source: str = "nvidia-smi topo -m"
    devices: list[str] = Field(description="column (and row) labels in order")
    matrix: list[list[str | None]] = Field(
        description="relation of devices[i] to devices[j]: X, NV#, PIX, PXB, PHB, NODE, SYS; None = row not captured")
    info: dict[str, TopoDeviceInfo] = Field(default_factory=dict)
    columns: list[str] = Field(default_factory=list, description="the columns after the matrix (CPU Affinity, ...)")
    nic_legend: dict[str, str] = Field(default_factory=dict, description="NIC0 -> mlx5_0 from the NIC Legend")
    truncated: bool = Field(False, description="the text stopped before every row was printed (a cut paste)")
    missing_rows: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def gpus(self) -> list[str]:
        return [d for d in self.devices if self.info[d].kind == "gpu"]

    @property
    def nics(self) -> list[str]:
        return [d for d in self.devices if self.info[d].kind == "nic"]

    def rel(self, a: str, b: str) -> str | None:
        """The relation between labels ``a`` and ``b`` (from either row); None when neither row was captured."""
        if a == b:
            return "X"
        i, j = self.devices.index(a), self.devices.index(b)
        return self.matrix[i][j] if self.matrix[i][j] is not None else self.matrix[j][i]


class PcieDevice(_Model):
    """A PCIe function on a GPU's or NIC's path to the root port, with its link (sysfs and/or lspci)."""

    bdf: str = Field(description="domain:bus:device.function, e.g. 0000:17:00.0")
    kind: Literal["gpu", "nic", "bridge", "other"] = "other"
    name: str | None = Field(None, description="lspci description, or the PCI class code from sysfs")
    class_code: str | None = None
    driver: str | None = None
    numa_node: int | None = None
    link_speed_gts: float | None = Field(None, description="current (negotiated) link speed, GT/s per lane")
    link_speed_max_gts: float | None = Field(None, description="link speed capability, GT/s per lane")
    link_width: int | None = Field(None, description="current (negotiated) link width, lanes")
    link_width_max: int | None = None
    downgraded: bool | None = Field(None, description="lspci marked LnkSta '(downgraded)'")
    acs_ctl: dict[str, bool] | None = Field(None, description="ACS control flags (SrcValid, ReqRedir, ...)")
    acs_cap: dict[str, bool] | None = None
    acs_state: Literal["enabled", "disabled", "absent", "needs_root", "unknown"] = Field(
        "unknown", description="ACS redirect state: enabled = ReqRedir+ or CmpltRedir+ in ACSCtl")
    iommu_group: int | None = None
    source: str = "sysfs"


class PciePath(_Model):
    """A GPU's or NIC's chain of PCIe functions from itself up to the root port (sysfs device tree)."""

    label: str = Field(description="GPU index as 'GPU0', or the NIC device name")
    bdf: str
    hops: list[str] = Field(description="BDFs from the device itself up to the root port")
    root_complex: str | None = Field(None, description="the host bridge the root port sits under, e.g. pci0000:00")


class NvmlPair(_Model):
    """NVML's view of one GPU pair: common ancestor and P2P status per capability."""

    a: int
    b: int
    common_ancestor: str | None = Field(None, description="as topo -m writes it: PIX, PXB, PHB, NODE, SYS, (X)")
    p2p: dict[str, str] = Field(default_factory=dict,
                                description="read/write/nvlink/atomics/pci -> OK, CNS, GNS, TNS, DISABLED, NS, U")
    errors: dict[str, str] = Field(default_factory=dict)


class FabricInfo(_Model):
    """NVML GPU fabric info (NVSwitch systems, Hopper and newer)."""

    gpu: int
    state: Literal["not_supported", "not_started", "in_progress", "completed", "unknown"]
    status: str | None = Field(None, description="NVML return code name; meaningful only when state is completed")
    clique_id: int | None = None
    cluster_uuid: str | None = None
    health_mask: int | None = None
    health_summary: str | None = None
    struct_version: int | None = Field(None, description="the nvmlGpuFabricInfo struct version used (2 or 3)")


class IommuFacts(_Model):
    source: str = "/sys/kernel/iommu_groups, /sys/bus/pci/devices/*/iommu_group/type, /proc/cmdline"
    enabled: bool | None = Field(None, description="True when IOMMU groups exist")
    group_count: int = 0
    mode: Literal["translated", "passthrough", "off", "unknown"] | None = Field(
        None, description="DMA translation of the GPUs' groups: DMA/DMA-FQ = translated, identity = passthrough")
    domain_types: dict[str, str] = Field(default_factory=dict, description="GPU BDF -> iommu group type")
    cmdline_flags: list[str] = Field(default_factory=list, description="iommu-related kernel parameters")


class IbPort(_Model):
    device: str = Field(description="e.g. mlx5_0")
    port: int
    state: str | None = Field(None, description="ACTIVE, DOWN, INIT, ARMED, POLLING")
    phys_state: str | None = Field(None, description="LinkUp, Polling, Disabled, ...")
    rate_gbps: float | None = Field(None, description="port rate, Gb/s (sysfs 'rate')")
    rate_text: str | None = None
    link_layer: str | None = Field(None, description="InfiniBand or Ethernet (RoCE)")
    hca_type: str | None = None
    pci_bus_id: str | None = None
    numa_node: int | None = None
    netdevs: list[str] = Field(default_factory=list)


class NetIface(_Model):
    name: str
    operstate: str | None = None
    speed_mbps: int | None = None
    pci_bus_id: str | None = None
    numa_node: int | None = None
    virtual: bool = False


class LinkClass(_Model):
    """A link class of the topology and the bandwidth it can carry (from rules/topology.toml)."""

    name: str = Field(description="NV#, PIX, PXB, PHB, NODE, SYS")
    meaning: str
    bandwidth_gbs: float | None = Field(None, description="line rate per direction, GB/s, for this host's links")
    basis: str | None = Field(None, description="how the bandwidth was derived (e.g. 'PCIe Gen5 x16')")
    source: str


class TopoPair(_Model):
    """One GPU pair as the report shows it: relation, link class and that class's bandwidth on this host."""

    a: int
    b: int
    relation: str | None = Field(None, description="topo -m cell: NV#, PIX, PXB, PHB, NODE, SYS")
    link_class: str | None = Field(None, description="NV, PIX, PXB, PHB, NODE, SYS")
    nvml_common_ancestor: str | None = None
    p2p: dict[str, str] = Field(default_factory=dict)
    bandwidth_gbs: float | None = Field(None, description="line rate per direction of this class here, GB/s")

    @property
    def p2p_ok(self) -> bool | None:
        """P2P possible (NVML read and write OK); None when NVML did not say."""
        if not self.p2p:
            return None
        return self.p2p.get("read") == "OK" and self.p2p.get("write") == "OK"


class TopologyFacts(_Model):
    source: str = ("nvidia-smi topo -m; NVML (isolated worker: common ancestor, P2P status, NVLink, fabric); "
                   "sysfs /sys/bus/pci/devices, /sys/kernel/iommu_groups, /sys/class/infiniband, /sys/class/net; "
                   "/proc/cmdline, /proc/modules; lspci -vvv when installed")
    matrix: TopoMatrix | None = None
    matrix_error: str | None = Field(None, description="why the topo matrix is missing")
    nvml_pairs: list[NvmlPair] = Field(default_factory=list)
    nvlinks: list[NvLink] = Field(default_factory=list)
    fabric: list[FabricInfo] = Field(default_factory=list)
    pcie: list[PcieDevice] = Field(default_factory=list)
    paths: list[PciePath] = Field(default_factory=list)
    lspci_available: bool | None = Field(None, description="None = not tried (e.g. a text dump)")
    iommu: IommuFacts | None = None
    ib_present: bool | None = Field(None, description="/sys/class/infiniband exists with devices; None = unknown")
    ib_ports: list[IbPort] = Field(default_factory=list)
    net_ifaces: list[NetIface] = Field(default_factory=list)
    peermem_loaded: bool | None = Field(None, description="nvidia_peermem or nv_peer_mem loaded; None = unknown")
    peermem_module: str | None = None
    link_classes: list[LinkClass] = Field(default_factory=list)
    pairs: list[TopoPair] = Field(default_factory=list, description="every GPU pair (derived from the sources above)")
    errors: dict[str, str] = Field(default_factory=dict, description="parts of the probe that failed, with why")
class SharedLibrary(_Model):
    """A cuDNN / NCCL / libcuda library file found in an LD_LIBRARY_PATH directory (by name, never loaded)."""

    kind: Literal["cudnn", "nccl", "cuda"] = Field(description="cuda = libcuda.so, the user-mode driver (cuda-compat)")
    path: str
    directory: str
    version: str | None = Field(None, description="from the file name or its symlink target, e.g. '9.1.0'")


class LibPathFacts(_Model):
    source: str = "file names in the LD_LIBRARY_PATH directories (nothing is loaded)"
    ld_library_path: list[str] = Field(default_factory=list)
    libraries: list[SharedLibrary] = Field(default_factory=list)
class SignatureHit(_Model):
    """Lines of the given logs / error text that match one entry of rules/signatures.toml."""

    id: str
    count: int = Field(description="matches over all inputs")
    lines: list[str] = Field(default_factory=list, description="the first matching lines (trimmed)")
    files: list[str] = Field(default_factory=list)
    groups: dict[str, str] = Field(default_factory=dict, description="named groups of the first match")


class XidEvent(_Model):
    xid: int
    pci_bus_id: str | None = None
    line: str
    file: str | None = None


class NcclLogFacts(_Model):
    """What an NCCL_DEBUG=INFO/WARN log says (possibly from several ranks and hosts)."""

    version: str | None = None
    cuda_driver_version: str | None = Field(None, description="'cudaDriverVersion 13000' -> '13.0'")
    ib_device_found: bool | None = None
    net: str | None = Field(None, description="network transport chosen: IB, Socket, or a plugin name")
    transports: list[str] = Field(default_factory=list, description="distinct channel transports, e.g. P2P/IPC, SHM/direct, NET/IB/1/GDRDMA")
    host_net_transports: dict[str, list[str]] = Field(default_factory=dict, description="host -> distinct NET/... transports")
    gdr_disabled_hcas: list[str] = Field(default_factory=list)
    env_set: dict[str, str] = Field(default_factory=dict, description="'NCCL_X set by environment to Y' lines")
    warnings: list[str] = Field(default_factory=list, description="NCCL WARN lines (first ones)")
    nranks: int | None = None
    nvls_channels: int | None = None
    init_complete: bool = False


class LogFacts(_Model):
    source: str = "log and error text given to `gpudoctor check`"
    lines_scanned: int = 0
    signatures: list[SignatureHit] = Field(default_factory=list)
    xids: list[XidEvent] = Field(default_factory=list)
    nccl: NcclLogFacts | None = None
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
    note: str | None = Field(None, description="e.g. 'recognised as nvidia-smi topo -m; parser not available'")
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
    mean: float | None = Field(None, description="arithmetic mean (what a loop timed end to end gives)")


class ConfirmDevice(_Model):
    rank: int
    index: int = Field(description="torch device index (after CUDA_VISIBLE_DEVICES)")
    name: str | None = None
    capability: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    total_memory_bytes: int | None = None


class AllReduceResult(_Model):
    """One message size and dtype of the all-reduce sweep (nccl-tests definitions; GB/s = 1e9 B/s)."""

    dtype: str
    size_bytes: int
    iters: int = 0
    time_s: Stat | None = Field(None, description="seconds per all-reduce, rank 0, device-event timing on GPU")
    algbw_gbs: float | None = Field(None, description="size / median time, GB/s")
    busbw_gbs: float | None = Field(None, description="algbw * 2(n-1)/n, GB/s")
    correct: bool | None = Field(None, description="every element of the reduced tensor right on every rank")
    max_abs_error: float | None = None
    error: str | None = None


class CopyResult(_Model):
    """Pinned host<->device copy bandwidth of one GPU, measured alone (GB/s = 1e9 B/s)."""

    rank: int
    device_index: int
    uuid: str | None = None
    pci_bus_id: str | None = None
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
    window_step_s: float | None = Field(
        None, description="timed window (first step's start to last step's end) / steps, s: includes the gaps "
                          "between steps, as a loop timed end to end; throughput follows from it")


class RankMemory(_Model):
    rank: int
    peak_allocated_bytes: int | None = Field(None, description="torch.cuda.max_memory_allocated (checklist C4)")
    peak_reserved_bytes: int | None = None
    peak_rss_bytes: int | None = Field(None, description="CPU path: peak resident set size of the rank")


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
    batch_choice: str | None = Field(None, description="how the batch was chosen: 'given (--batch)', the tiny "
                                        "model's default, or 'auto: ...' with its memory estimate (GPU default)")
    seq_len: int
    warmup_steps: int
    timed_steps: int
    scaling: Literal["weak", "strong"] = Field(description="weak: per-GPU batch fixed; strong: global batch fixed")
    step: StepTimes = Field(description="world size n, rank 0")
    nosync_step_s: Stat | None = Field(None, description="step time under DDP no_sync (no gradient all-reduce)")
    single: StepTimes | None = Field(None, description="T1: the same model and settings on one device, no DDP")
    efficiency: float | None = Field(None, description="E = (throughput_n / throughput_1) / n from median times")
    efficiency_low: float | None = Field(None, description="E from the slow quartiles (p75 of Tn, p25 of T1)")
    efficiency_high: float | None = None
    grad_allreduce_s: Stat | None = Field(None, description="one all-reduce of the gradient size, fp32")
    samples_per_s: float | None = Field(None, description="global samples per second at world size n")
    loss_first: float | None = None
    loss_last: float | None = None
    loss_finite: bool = True
    params_max_abs_diff: float | None = Field(None, description="max |p_i - p_j| over ranks after the steps")
    memory: list[RankMemory] = Field(default_factory=list)


class RankStatus(_Model):
    """How one rank of a run ended, with its last phase and log tails (checklist C6)."""

    rank: int
    exitcode: int | None = None
    phase: str | None = None
    label: str | None = Field(None, description="what the rank was doing last, e.g. 'all-reduce bfloat16 64 MiB'")
    joined: bool = Field(False, description="got through the rendezvous")
    error: str | None = None
    nccl_warnings: list[str] = Field(default_factory=list, description="last 'NCCL WARN' lines of its NCCL log")
    log_tail: list[str] = Field(default_factory=list)


class ConfirmationRun(_Model):
    """One launch of the workers (the main run, or a transport re-run)."""

    name: str
    env: dict[str, str] = Field(default_factory=dict, description="variables set for this run only")
    status: Literal["ok", "failed", "hung", "error"]
    message: str | None = None
    culprit_rank: int | None = None
    seconds: float
    timeout_s: float
    orphans_killed: int = Field(0, description="processes of the run still alive after the launcher ended")
    log_dir: str | None = Field(None, description="this run's per-rank logs (kept when it failed)")
    ranks: list[RankStatus] = Field(default_factory=list)


class ConfirmationFacts(_Model):
    source: str = "gpudoctor confirmation runs: torch.multiprocessing spawn in the target interpreter, 127.0.0.1 rendezvous"
    status: Literal["ok", "failed", "hung", "error", "skipped", "not_applicable"]
    reason: str | None = None
    interpreter: str | None = None
    torch_version: str | None = None
    nccl_version: str | None = None
    backend: str | None = None
    device: str | None = Field(None, description="cuda or cpu")
    world_size: int | None = None
    tasks: list[str] = Field(default_factory=list)
    seconds: float | None = None
    log_dir: str | None = Field(None, description="per-rank logs, kept when a run failed")
    devices: list[ConfirmDevice] = Field(default_factory=list)
    allreduce: list[AllReduceResult] = Field(default_factory=list)
    copies: list[CopyResult] = Field(default_factory=list)
    ddp: DdpResult | None = None
    runs: list[ConfirmationRun] = Field(default_factory=list, description="the main run first, then transport re-runs")
    transport_verdict: Literal["p2p", "shm", "either", "neither"] | None = Field(
        None, description="which NCCL transport the re-runs blame (None: no re-run)")


class Snapshot(_Model):
    """Everything probed on one host, at one time."""

    schema_version: str = SCHEMA_VERSION
    gpudoctor_version: str
    created_at: str = Field(description="ISO 8601 UTC")
    duration_s: float | None = None
    data_path: str | None = None
    host: HostFacts | None = None
    cpu: CpuFacts | None = None
    memory: MemoryFacts | None = None
    storage: StorageFacts | None = None
    nvml: NvmlFacts | None = None
    torch: TorchFacts | None = None
    env: EnvFacts | None = None
    topology: TopologyFacts | None = None
    libpath: LibPathFacts | None = None
    logs: LogFacts | None = None
    inputs: list[InputFile] = Field(default_factory=list, description="files read by `gpudoctor check` (empty for a scan)")
    known_fields: dict[str, list[str]] = Field(
        default_factory=dict,
        description="for sections built from partial text: the fields the text gave ('nvml.gpus' for GPU fields, "
                    "'env' for variable names when only some were seen); a section absent here was probed in full")
    probe_errors: list[ProbeError] = Field(default_factory=list)
    probe_seconds: dict[str, float] = Field(default_factory=dict, description="wall time of each probe, s")
    confirmation: ConfirmationFacts | None = Field(None, description="confirmation runs; None when not run")
