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

from pydantic import Field

from gpudoctor.facts._base import _Model
from gpudoctor.facts.confirm_model import *  # noqa: F403 (one import path for every facts model)
from gpudoctor.facts.confirm_model import ConfirmationFacts
from gpudoctor.facts.topo_model import *  # noqa: F403
from gpudoctor.facts.topo_model import NvLink, NvLinkDetail, NvLinkState, TopologyFacts  # noqa: F401

SCHEMA_VERSION = "2.5"  # 1.1: topology, libpath, logs; 1.2: confirmation; 1.3: ddp.batch_choice, nvlinks.errors_after
# 2.0: one NvLink model (GpuFacts.nvlinks and TopologyFacts.nvlinks: same fields); NvmlFacts.fabric_states removed
#      (never read; TopologyFacts.fabric holds the fabric state). 1.x reports load: unknown keys are ignored.
#      Also: inputs[].status / reason, confirmation status "interrupted" (issue 15); confirmation.selftest,
#      confirmation.baseline (issue 16).
# 2.1: logs.signatures[] ranks, hosts, gpus, first_line, last_line (where a signature fired; issue 14).
# 2.2: logs.rank_announcements (launcher rank lines: the same global rank started twice; issue 14);
#      logs.nccl.comms (per communicator, the ranks whose Init START / COMPLETE lines are in the log).
# 2.3: gpus[].retired_pages_* (dynamic page retirement, pre-Ampere); logs.nccl_tests (pasted nccl-tests runs);
#      logs.nccl.host_nets (host:pid -> NCCL network); torch.nvidia_wheels (nvidia-* pip packages);
#      logs.collective_timeouts (each rank's watchdog timeout: SeqNum, OpType).
# 2.4: logs.rendezvous (torchrun's dynamic-rendezvous join lines: node, run id, round, node rank, node count);
#      logs.signatures[].wrapped_by (the signatures that read a wrapper's lines), .from_prose (a message quoted
#      in the writer's words when no log was pasted); logs.first_exceptions (each
#      file's first exception line that no signature explains, with its line number and rank).
# 2.5: logs.signatures[].first_time (the wall-clock stamp of the first match's line or the nearest line above it:
#      the cause of per-rank logs is ordered by time); logs.nccl.socket_addresses (the address NCCL's 'Using' lines
#      give each interface); logs.nccl.nnodes; logs.signatures[].group_variants.

Unlimited = Literal["unlimited"]


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
    usable_cores: float | None = Field(
        None, description="min(affinity, cgroup quota): cores this process may really use"
    )
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
    retired_pages_sbe: int | None = Field(None, description="pages retired for multiple single-bit ECC errors "
                                                            "(dynamic page retirement, pre-Ampere GPUs)")
    retired_pages_dbe: int | None = Field(None, description="pages retired for double-bit ECC errors")
    retired_pages_pending: bool | None = Field(None, description="a page waits for the next driver reload to retire")
    processes: list[GpuProcess] = Field(default_factory=list)
    numa_node: int | None = Field(
        None, description="NVML NUMA node, else sysfs numa_node; None when neither knows (-1)"
    )
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
    nvidia_wheels: dict[str, str] = Field(
        default_factory=dict, description="nvidia-* pip packages of the environment (nvidia-nccl-cu12 -> 2.21.5), "
                                          "from collect_env's [pip3] lines or a package list")
    cuda_home: str | None = None
    nvcc_version: str | None = None
    import_seconds: float | None = None
    cuda_init_seconds: float | None = Field(None, description="torch.cuda.is_available() + device_count(), s")
    properties_seconds: float | None = Field(None, description="get_device_properties for every device, s")
    error: str | None = Field(None, description="import failure, when torch is present but cannot be imported")


class EnvFacts(_Model):
    source: str = "os.environ (NCCL_*, TORCH_*, CUDA_*, NVIDIA_*, PYTORCH_*, OMP_NUM_THREADS, LD_LIBRARY_PATH)"
    variables: dict[str, str] = Field(
        default_factory=dict, description="secret-looking values are replaced by '<redacted>'"
    )


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
    groups: dict[str, str] = Field(default_factory=dict, description="named groups of the first match (of the copy "
                                   "torch prints after 'Last error:', when there is one: the error NCCL failed on)")
    ranks: list[int] = Field(default_factory=list, description="ranks the matching lines name ([rankN]: / [Rank N])")
    hosts: list[str] = Field(default_factory=list, description="hosts of the matching NCCL lines (host:pid:tid)")
    gpus: list[str] = Field(default_factory=list, description="GPUs of the matching lines: cuda:N@host (NCCL's "
                            "[cudaDev]) or a PCI address (NVRM: Xid (PCI:...))")
    group_variants: list[dict[str, str]] = Field(default_factory=list, description="other values the named groups "
                                                 "took in later matches (up to 4): a case may be read from them")
    first_line: int | None = Field(None, description="line number of the first match (in files[0])")
    last_line: int | None = Field(None, description="line number of the last match (in files[-1])")
    first_time: str | None = Field(None, description="wall-clock time of the first match, 'MM-DD HH:MM:SS.ffffff' "
                                   "(its line's stamp, or the nearest stamped line above it; the earliest over "
                                   "files); None when the log carries no time")
    from_prose: bool = Field(False, description="read from the writer's words (a Markdown paste or a message with "
                             "no log in it): what the person says they saw; its finding is at most a warning")
    wrapped_by: list[str] = Field(default_factory=list, description="for a message that carries another error's "
                                  "text (a `wraps` entry): the signatures that matched its lines, when every line of "
                                  "it was matched by one")


class RankAnnouncement(_Model):
    """A launcher's line naming one process's global rank (parsers/launch_ranks.py)."""

    rank: int = Field(description="global rank")
    world_size: int
    restart: int | None = Field(None, description="torchrun's restart_count of the rendezvous, when printed")
    source: Literal["lightning", "torchrun"]
    line: str


class RendezvousJoin(_Model):
    """A torchrun agent joining a dynamic rendezvous (c10d / etcd backends), as dynamic_rendezvous.py logs it:
    "The node '<node>' attempts to join the next round of the rendezvous '<run_id>'." and "... has joined round <n>
    of the rendezvous '<run_id>' as rank <r> in a world of size <w>." (parsers/launch_ranks.py)."""

    node: str = Field(description="the agent's node id, <hostname>_<pid>_<local id>")
    run_id: str = Field(description="the rendezvous id (--rdzv-id / rdzv_id)")
    round: int | None = Field(None, description="the round joined; None for an attempt")
    rank: int | None = Field(None, description="the node's rank in the rendezvous (not a global rank)")
    world_size: int | None = Field(None, description="the number of nodes of that round")
    line: str


class FirstException(_Model):
    """The first line of one input that raises an exception no signature explains ("[rank2]: ValueError: ...",
    parsers/signatures.py first_unexplained_exception): the candidate root cause when only consequences follow."""

    file: str
    line: int = Field(description="line number in the file (1-based)")
    text: str = Field(description="the line, trimmed")
    rank: int | None = Field(None, description="the rank its prefix names ([rankN]:)")


class CollectiveTimeout(_Model):
    """One rank's watchdog timeout as torch prints it (parsers/launch_ranks.py)."""

    rank: int
    seq: int = Field(description="SeqNum of the collective the rank was waiting in")
    op: str = Field(description="OpType, e.g. ALLREDUCE, _ALLGATHER_BASE")


class XidEvent(_Model):
    xid: int
    pci_bus_id: str | None = None
    line: str
    file: str | None = None


class NcclCommInit(_Model):
    """One NCCL communicator's initialisation as the log shows it (ncclCommInitRank's INFO lines, NCCL 2.17+)."""

    comm_id: str = Field(description="commId printed on the Init START line, e.g. 0x9e02c3a51fd7a884")
    nranks: int
    started: list[int] = Field(default_factory=list, description="ranks with an 'Init START' line")
    completed: list[int] = Field(default_factory=list, description="ranks with an 'Init COMPLETE' line")


class NcclLogFacts(_Model):
    """What an NCCL_DEBUG=INFO/WARN log says (possibly from several ranks and hosts)."""

    version: str | None = None
    cuda_driver_version: str | None = Field(None, description="'cudaDriverVersion 13000' -> '13.0'")
    ib_device_found: bool | None = None
    net: str | None = Field(None, description="network transport chosen: IB, Socket, or a plugin name")
    transports: list[str] = Field(
        default_factory=list, description="distinct channel transports, e.g. P2P/IPC, SHM/direct, NET/IB/1/GDRDMA"
    )
    host_net_transports: dict[str, list[str]] = Field(
        default_factory=dict, description="host -> distinct NET/... transports"
    )
    host_nets: dict[str, str] = Field(default_factory=dict,
                                      description="host:pid -> the network its 'Using network' line named (IB, Socket)")
    gdr_disabled_hcas: list[str] = Field(default_factory=list)
    env_set: dict[str, str] = Field(default_factory=dict, description="'NCCL_X set by environment to Y' lines")
    socket_interfaces: list[str] = Field(
        default_factory=list, description="interfaces of the 'Bootstrap : Using' / 'NET/Socket : Using' lines, "
                                          "e.g. ['bond0', 'bond0.2973']")
    nnodes: int | None = Field(None, description="nodes of the communicator ('comm %p rank %d nRanks %d nNodes %d', "
                               "NCCL 2.21+): the largest seen")
    socket_addresses: dict[str, str] = Field(
        default_factory=dict, description="interface -> the address those lines give for it (the first seen)")
    bootstrap_no_interface: bool = Field(False, description="a 'Bootstrap : Using' line that names no interface")
    warnings: list[str] = Field(default_factory=list, description="NCCL WARN lines (first ones)")
    nranks: int | None = None
    nvls_channels: int | None = None
    init_complete: bool = False
    comms: list[NcclCommInit] = Field(
        default_factory=list, description="per communicator (commId): the ranks whose Init START / Init COMPLETE "
                                          "lines are in the log")


class NcclTestsRow(_Model):
    """One size of an nccl-tests sweep (parsers/nccl_tests.py); the larger of the out-of-place and in-place figures."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    algbw_gbs: float | None = Field(None, description="GB/s (1e9 B/s)")
    busbw_gbs: float | None = Field(None, description="GB/s (1e9 B/s): algbw x the collective's bus factor")
    wrong: int | None = Field(None, description="#wrong of both runs added; None when not validated (-c 0)")


class NcclTestsRun(_Model):
    """One nccl-tests run pasted into `gpudoctor check`."""

    collective: str | None = Field(None, description="all_reduce, all_gather, ... (from the binary's name)")
    gpus_per_process: int | None = Field(None, description="-g of the header line")
    ranks: list[int] = Field(default_factory=list, description="ranks of the '#  Rank N ... device' lines")
    hosts: list[str] = Field(default_factory=list, description="distinct hosts of those lines")
    gpus: list[str] = Field(default_factory=list, description="GPU model of each rank line")
    rows: list[NcclTestsRow] = Field(default_factory=list)
    avg_busbw_gbs: float | None = Field(None, description="'# Avg bus bandwidth' (averages every size of the sweep)")
    out_of_bounds: int | None = None


class LogFacts(_Model):
    source: str = "log and error text given to `gpudoctor check`"
    lines_scanned: int = 0
    signatures: list[SignatureHit] = Field(default_factory=list)
    xids: list[XidEvent] = Field(default_factory=list)
    nccl: NcclLogFacts | None = None
    kernel_messages: list[str] = Field(
        default_factory=list, description="NVRM lines of the kernel log, continuation lines joined"
    )
    error_lines: list[str] = Field(default_factory=list, description="error-looking lines no signature explains")
    commands: list[str] = Field(
        default_factory=list, description="shell commands found (docker run ...), secrets redacted"
    )
    peer_access: dict[str, bool] = Field(default_factory=dict, description="'a,b' -> cudaDeviceCanAccessPeer(a, b) "
                                         "as a pasted check printed it")
    rank_announcements: list[RankAnnouncement] = Field(
        default_factory=list, description="launcher lines naming a process's global rank and world size (Lightning's "
                                          "GLOBAL_RANK lines, torchrun's rendezvous result), in input order")
    nccl_tests: list[NcclTestsRun] = Field(default_factory=list, description="nccl-tests runs (all_reduce_perf ...)")
    collective_timeouts: list[CollectiveTimeout] = Field(
        default_factory=list, description="watchdog timeouts with rank, SeqNum and OpType, in input order")
    first_exceptions: list[FirstException] = Field(
        default_factory=list, description="each input's first exception line no signature explains")
    rendezvous: list[RendezvousJoin] = Field(
        default_factory=list, description="torchrun agents' rendezvous join lines (node, run id), in input order")


class InputFile(_Model):
    """One file given to `gpudoctor check`: what it was recognised as and which sections it fed."""

    path: str
    kinds: list[str] = Field(default_factory=list)
    sections: list[str] = Field(default_factory=list)
    note: str | None = Field(None, description="e.g. 'recognised as nvidia-smi topo -m; parser not available'")
    status: Literal["read", "skipped", "rejected"] = Field(
        "read", description="read: used; skipped: found in a named folder but not an input `check` reads (notes, "
                            "gpudoctor's own text reports, a second saved report); rejected: unusable (unreadable, "
                            "binary, unknown format when named, newer schema): exit code 2")
    reason: str | None = Field(None, description="why it was skipped or rejected (one line)")


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
    inputs: list[InputFile] = Field(
        default_factory=list, description="files read by `gpudoctor check` (empty for a scan)"
    )
    known_fields: dict[str, list[str]] = Field(
        default_factory=dict,
        description="for sections built from partial text: the fields the text gave ('nvml.gpus' for GPU fields, "
                    "'env' for variable names when only some were seen); a section absent here was probed in full")
    probe_errors: list[ProbeError] = Field(default_factory=list)
    probe_seconds: dict[str, float] = Field(default_factory=dict, description="wall time of each probe, s")
    confirmation: ConfirmationFacts | None = Field(None, description="confirmation runs; None when not run")
