"""Topology and interconnect facts: the topo matrix, PCIe devices and paths, NVLinks, NVSwitch fabric, IOMMU,
RDMA ports, network interfaces, link classes and GPU pairs (re-exported by :mod:`gpudoctor.facts.model`)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpudoctor.facts._base import _Model


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
NvLinkState = NvLink
NvLinkDetail = NvLink


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
    nvidia_gpus_on_bus: int | None = Field(
        None, description="NVIDIA display-class functions (vendor 0x10de, class 03xx) under /sys/bus/pci/devices, "
                          "whatever the driver says; None = the bus was not read (a text dump, an unreadable sysfs)")
    iommu: IommuFacts | None = None
    ib_present: bool | None = Field(None, description="/sys/class/infiniband exists with devices; None = unknown")
    ib_ports: list[IbPort] = Field(default_factory=list)
    net_ifaces: list[NetIface] = Field(default_factory=list)
    peermem_loaded: bool | None = Field(None, description="nvidia_peermem or nv_peer_mem loaded; None = unknown")
    peermem_module: str | None = None
    link_classes: list[LinkClass] = Field(default_factory=list)
    pairs: list[TopoPair] = Field(default_factory=list, description="every GPU pair (derived from the sources above)")
    errors: dict[str, str] = Field(default_factory=dict, description="parts of the probe that failed, with why")
