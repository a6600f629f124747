"""TOP rules, both ways, on real captures (topo matrices, lspci excerpts, the H200 scan) and fake sysfs trees."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.facts.model import (
    EnvFacts,
    FabricInfo,
    GpuFacts,
    IbPort,
    NetIface,
    NvLinkState,
    NvmlFacts,
    NvmlPair,
    Snapshot,
)
from gpudoctor.facts.topology import finish
from gpudoctor.parsers.offline import load_path
from gpudoctor.parsers.topology_text import topology_from_text
from gpudoctor.probes import topology as P
from gpudoctor.rules import evaluate
from gpudoctor.rules.nccl_env import _socket_if_match, multi_node
from tests.topology_helpers import build_tree, fake_runner, which_all

FIX = Path(__file__).parent / "fixtures"
TOPO = FIX / "topology"
TOP_IDS = [f"TOP{i:03d}" for i in range(1, 15)]


def text(rel: str) -> str:
    return (TOPO / rel).read_text(encoding="utf-8")


def h200() -> Snapshot:
    return load_path(str(FIX / "h200" / "scan.json"))


def bare(topo=None, nvml=None, env=None, virt=None) -> Snapshot:
    """A snapshot of a bare-metal host (H200 scan's host/memory facts, virtualization cleared)."""
    s = h200()
    s.host.virtualization = virt
    s.nvml = nvml
    s.topology = topo
    s.env = EnvFacts(variables=env or {})
    return s


def run(snap, rid):
    rep = evaluate(snap, only=[rid])
    (o,) = rep.outcomes
    assert not (o.reason or "").startswith("rule error"), o.reason
    return o, rep.findings


def a100s(n=2, active=12, down=0):
    return NvmlFacts(available=True, driver_version="535.104.05", gpu_count=n, gpus=[
        GpuFacts(index=i, name="NVIDIA A100-SXM4-80GB", pcie_gen_max=4, pcie_width_max=16,
                 nvlinks=[NvLinkState(link=k, active=k < active, version=4) for k in range(active + down)])
        for i in range(n)])


def tree(tmp_path, **kw):
    build_tree(tmp_path, **kw)
    return P.probe_topology(None, roots=P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc")), run=fake_runner(),
                            which=lambda n: None if n == "lspci" else which_all(n))


# ---------------------------------------------------------------- the H200 single-GPU VM: nothing fires

def test_h200_vm_single_gpu_no_topology_findings():
    s = h200()
    s.topology = topology_from_text(text("h200-topo-m.txt"))
    s.topology.ib_present, s.topology.lspci_available = False, False
    rep = evaluate(s, only=TOP_IDS)
    assert rep.findings == []
    st = {o.rule_id: o.status for o in rep.outcomes}
    for rid in ("TOP001", "TOP002", "TOP004", "TOP005", "TOP006", "TOP008", "TOP011", "TOP012", "TOP013"):
        assert st[rid] == "not_applicable", rid
    assert "fail" not in st.values()


# ---------------------------------------------------------------- TOP001 no NVLink

@pytest.mark.parametrize("rel", ["cases/001-topo.txt", "cases/027-topo.txt", "topo/008-4x2080ti-all-pix-tabs.txt",
                                 "topo/014-8xa6000-nv4-bridge-pairs-2nic.txt"])
def test_top001_fires_on_pcie_only_or_split_nvlink(rel):
    o, f = run(bare(topology_from_text(text(rel))), "TOP001")
    assert o.status == "fail" and f[0].data["allreduce_ms_min"] > 5
    assert f[0].data["link_assumed"] is True  # no GPU link facts in a paste: says it assumed Gen4 x16


@pytest.mark.parametrize("rel", ["topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt", "cases/011-topo.txt"])
def test_top001_quiet_when_nvlink_connects_all(rel):
    assert run(bare(topology_from_text(text(rel))), "TOP001")[0].status == "pass"


def test_top001_uses_nvml_link_and_p2p_status():
    topo = topology_from_text(text("topo/003-2x5090-phb-tabs-legend.txt"))
    topo.nvml_pairs = [NvmlPair(a=0, b=1, common_ancestor="PHB", p2p={"read": "CNS", "write": "CNS"})]
    nv = NvmlFacts(available=True, driver_version="x", gpus=[GpuFacts(index=i, pcie_gen_max=5, pcie_width_max=16)
                                                              for i in range(2)])
    o, f = run(bare(finish(topo, nv), nv), "TOP001")
    assert f[0].data["link_gbs"] == pytest.approx(63.01, abs=0.01) and not f[0].data["link_assumed"]
    assert f[0].data["allreduce_ms_min"] == pytest.approx(438e6 / 63.01e9 * 1e3, rel=1e-3)
    assert any("P2P not available" in e for e in f[0].evidence)


# ---------------------------------------------------------------- TOP002 SYS pairs

def test_top002_fires_on_sys_pairs_and_keeps_numa():
    o, f = run(bare(topology_from_text(text("topo/014-8xa6000-nv4-bridge-pairs-2nic.txt"))), "TOP002")
    assert o.status == "fail" and len(f[0].data["pairs"]) == 16 and "GPU4 1" in f[0].evidence[1]


@pytest.mark.parametrize("rel", ["topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt", "cases/011-topo.txt",
                                 "topo/007-4xv100pcie-pix-phb-tabs.txt"])
def test_top002_quiet(rel):
    assert run(bare(topology_from_text(text(rel))), "TOP002")[0].status == "pass"


# ---------------------------------------------------------------- TOP003 hops below capability

def test_top003_narrow_uplink_fires(tmp_path):
    o, f = run(bare(tree(tmp_path, acs_readable=False, uplink_width=8)), "TOP003")
    assert o.status == "fail"
    ev = " ".join(e for x in f for e in x.evidence)
    assert "0000:01:00.0: link x8, capable of x16" in ev


def test_top003_full_width_passes(tmp_path):
    assert run(bare(tree(tmp_path, acs_readable=False)), "TOP003")[0].status == "pass"


def test_top003_idle_generation_is_not_judged_but_busy_is(tmp_path):
    topo = tree(tmp_path, acs_readable=False)
    gpu = next(d for d in topo.pcie if d.bdf == "0000:03:00.0")
    gpu.link_speed_gts = 2.5
    s = h200()
    s.host.virtualization = None
    s.topology = topo
    s.nvml.gpus[0].utilization_gpu_pct, s.nvml.gpus[0].clock_event_reasons = 0, ["GpuIdle"]
    o, f = run(s, "TOP003")
    assert o.status == "not_assessed" and "idle" in o.reason and f == []
    s.nvml.gpus[0].utilization_gpu_pct, s.nvml.gpus[0].clock_event_reasons = 97, ["SwPowerCap"]
    o, f = run(s, "TOP003")
    assert o.status == "fail" and "Gen1" in f[0].evidence[0] and "busy" in f[0].evidence[0]


def test_top003_lspci_riser_downgrade_is_judged_under_load_only():
    s = bare(topology_from_text(lspci_text=text("lspci/003-4090-riser-lnkcap-lnksta-gen1-downgraded.txt")))
    o, f = run(s, "TOP003")
    assert o.status == "not_assessed" and "under load" in o.reason and f == []


# ---------------------------------------------------------------- TOP004 ACS

def test_top004_acs_enabled_on_gpu_path_is_error(tmp_path):
    o, f = run(bare(tree(tmp_path, acs_readable=True)), "TOP004")
    assert o.status == "fail" and all(x.severity == "error" for x in f)
    assert {x.data["bdf"] for x in f} == {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0", "0000:02:01.0"}


def test_top004_case_003_lspci_line():
    o, f = run(bare(topology_from_text(lspci_text=text("cases/003-lspci.txt"))), "TOP004")
    assert o.status == "fail" and "ReqRedir+" in f[0].evidence[0]


def test_top004_grep_excerpt_counts_redirecting_ports_only():
    o, f = run(bare(topology_from_text(lspci_text=text("lspci/001-acsctl-grep-mixed-srcvalid-tabs.txt"))), "TOP004")
    assert len(f) == 5  # the SrcValid+-only port does not redirect


def test_top004_needs_root_is_not_a_pass(tmp_path):
    o, f = run(bare(tree(tmp_path, acs_readable=False)), "TOP004")
    assert o.status == "not_assessed" and "needs root" in o.reason


def test_top004_topo_only_asks_for_lspci():
    o, _ = run(bare(topology_from_text(text("cases/001-topo.txt"))), "TOP004")
    assert o.status == "not_assessed" and "lspci" in o.reason


def test_top004_vm_and_acs_off(tmp_path):
    topo = tree(tmp_path, acs_readable=True)
    assert run(bare(topo, virt="KVM"), "TOP004")[0].status == "not_applicable"
    for d in topo.pcie:
        if d.acs_state == "enabled":
            d.acs_state = "disabled"
    assert run(bare(topo), "TOP004")[0].status == "pass"


# ---------------------------------------------------------------- TOP005 IOMMU

def test_top005_translated_fires_passthrough_passes(tmp_path):
    o, f = run(bare(tree(tmp_path / "a", acs_readable=False, iommu_type="DMA")), "TOP005")
    assert o.status == "fail" and "intel_iommu=on" in f[0].evidence[1]
    assert run(bare(tree(tmp_path / "b", acs_readable=False, iommu_type="identity")), "TOP005")[0].status == "pass"
    assert run(bare(tree(tmp_path / "c", acs_readable=False, iommu_type="DMA"), virt="KVM"),
               "TOP005")[0].status == "not_applicable"


# ---------------------------------------------------------------- TOP006 NVLink

def test_top006_a100_case_017_all_links_up_passes():
    assert run(bare(topology_from_text(text("topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt")), a100s()),
               "TOP006")[0].status == "pass"


def test_top006_link_down_and_missing_links_fire():
    o, f = run(bare(topology_from_text(text("topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt")),
                    a100s(active=11, down=1)), "TOP006")
    assert o.status == "fail" and "links down: 11" in f[0].evidence[0] and "expected 12" in f[0].evidence[1]


def test_top006_error_counters_are_a_note():
    topo = topology_from_text(text("topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt"))
    from gpudoctor.facts.model import NvLinkDetail

    topo.nvlinks = [NvLinkDetail(gpu=0, link=k, active=True, version=4, errors={"crc_flit": 5 if k == 2 else 0})
                    for k in range(12)]
    o, f = run(bare(topo, a100s()), "TOP006")
    assert [x.severity for x in f] == ["info"] and "link 2 crc_flit=5" in f[0].evidence[0]


def test_top006_pcie_gpus_without_nvlink_not_applicable():
    nv = NvmlFacts(available=True, driver_version="x", gpus=[GpuFacts(index=i, name="NVIDIA A10") for i in range(2)])
    assert run(bare(topology_from_text(text("cases/027-topo.txt")), nv), "TOP006")[0].status == "not_applicable"


# ---------------------------------------------------------------- TOP007 fabric

def _fab(*states, status="Success"):
    topo = topology_from_text(text("topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt"))
    topo.fabric = [
        FabricInfo(gpu=i, state=s, status=status if s == "completed" else None) for i, s in enumerate(states)
    ]
    return bare(topo, a100s())


def test_top007_fabric():
    o, f = run(_fab("completed", "in_progress"), "TOP007")
    assert o.status == "fail" and "802" in f[0].evidence[0]
    assert run(_fab("completed", "completed"), "TOP007")[0].status == "pass"
    assert run(_fab("completed", "completed", status="Unknown Error"), "TOP007")[0].status == "fail"
    assert run(_fab("not_supported", "not_supported"), "TOP007")[0].status == "not_applicable"


# ---------------------------------------------------------------- TOP008 / TOP009 / TOP012 RDMA

def test_top008_ib_ports(tmp_path):
    topo = tree(tmp_path, acs_readable=False)
    assert run(bare(topo), "TOP008")[0].status == "pass"
    topo.ib_ports.append(IbPort(device="mlx5_1", port=1, state="ACTIVE", phys_state="LinkUp", rate_gbps=100.0,
                                rate_text="100 Gb/sec (4X EDR)", link_layer="InfiniBand", hca_type="MT4123"))
    topo.ib_ports.append(IbPort(device="mlx5_2", port=1, state="INIT", phys_state="LinkUp",
                                link_layer="InfiniBand", hca_type="MT4123"))
    o, f = run(bare(topo), "TOP008")
    ev = [x.evidence[0] for x in f]
    assert any("mlx5_1" in e and "200 Gb/s" in e for e in ev) and any("no subnet manager" in e for e in ev)


def test_top009_ib_disable(tmp_path):
    topo = tree(tmp_path, acs_readable=False)
    multi = {"NCCL_IB_DISABLE": "1", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8"}
    assert [x.severity for x in run(bare(topo, env=multi), "TOP009")[1]] == ["warning"]
    assert [x.severity for x in run(bare(topo, env={"NCCL_IB_DISABLE": "1", "SLURM_NNODES": "1"}),
                                    "TOP009")[1]] == ["info"]
    assert run(bare(topo, env={}), "TOP009")[0].status == "pass"
    assert multi_node({"SLURM_JOB_NUM_NODES": "4"}) is True and multi_node({}) is None


def test_top012_peermem_and_memlock(tmp_path):
    s = bare(tree(tmp_path / "a", acs_readable=False, peermem=False))
    s.nvml = a100s()
    s.nvml.kernel_module = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05"
    o, f = run(s, "TOP012")
    assert [x.severity for x in f] == ["warning"] and "nvidia_peermem" in f[0].evidence[0]
    s = bare(tree(tmp_path / "b", acs_readable=False, peermem=True))
    s.memory.memlock_soft_bytes = 8192 * 1024  # corpus case 010: ulimit -l 8192
    o, f = run(s, "TOP012")
    assert o.status == "fail" and "8192 KiB" in f[0].evidence[0]
    s.memory.memlock_soft_bytes = "unlimited"
    assert run(s, "TOP012")[0].status == "pass"


def test_top012_open_kernel_module_is_info(tmp_path):
    s = bare(tree(tmp_path, acs_readable=False, peermem=False))
    s.nvml = h200().nvml  # the H200's open kernel module line
    o, f = run(s, "TOP012")
    assert [x.severity for x in f] == ["info"] and "DMA-BUF" in f[0].evidence[0]


# ---------------------------------------------------------------- TOP010 socket ifname

@pytest.mark.parametrize("spec,status,sev", [("eth0", "fail", "error"), ("^docker,lo", "pass", None),
                                             ("=ib0", "pass", None), ("ib,eth", "fail", "warning"),
                                             ("=ib", "fail", "error"), ("^ib,lo", "fail", "error")])
def test_top010_socket_ifname(spec, status, sev):
    topo = topology_from_text(text("cases/001-topo.txt"))
    topo.net_ifaces = [NetIface(name="ib0"), NetIface(name="lo", virtual=True)]
    o, f = run(bare(topo, env={"NCCL_SOCKET_IFNAME": spec}), "TOP010")
    assert o.status == status and [x.severity for x in f] == ([sev] if sev else [])


def test_socket_ifname_semantics():
    assert _socket_if_match("^=eth0", ["eth0", "eth1"]) == (True, ["eth1"], [])
    assert _socket_if_match("en", ["ens5", "enp1s0", "lo"])[1] == ["ens5", "enp1s0"]


# ---------------------------------------------------------------- TOP011 NIC locality

def test_top011_case_011_gpus_4_to_7_have_no_local_nic():
    o, f = run(bare(topology_from_text(text("cases/011-topo.txt")), env={"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8"}),
               "TOP011")
    assert f[0].severity == "warning" and f[0].data["gpus"] == ["GPU4", "GPU5", "GPU6"]  # GPU7's row was cut off
    o, f = run(bare(topology_from_text(text("cases/011-topo.txt"))), "TOP011")
    assert f[0].severity == "info"


def test_top011_quiet_and_not_applicable():
    assert run(bare(topology_from_text(text("topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt"))),
               "TOP011")[0].status == "pass"
    assert run(bare(topology_from_text(text("topo/008-4x2080ti-all-pix-tabs.txt"))),
               "TOP011")[0].status == "not_applicable"


def test_top011_from_sysfs_numa(tmp_path):
    topo = tree(tmp_path, acs_readable=False)
    topo.matrix = None
    nv = a100s()
    nv.gpus[0].numa_node = nv.gpus[1].numa_node = 0  # GPUs on node 0, mlx5_0 on node 1
    o, f = run(bare(topo, nv), "TOP011")
    assert f[0].data["gpus"] == ["GPU0", "GPU1"]


# ---------------------------------------------------------------- TOP013 disagreement, NCL007 P2P off from the matrix

def test_top013_sources(tmp_path):
    topo = tree(tmp_path, acs_readable=False)  # topo -m PIX, NVML common ancestor PIX
    assert run(bare(topo), "TOP013")[0].status == "pass"
    topo.nvml_pairs[0].common_ancestor = "PXB"
    o, f = run(bare(topo), "TOP013")
    assert o.status == "fail" and "topo PIX, NVML common ancestor PXB" in f[0].evidence[0]
    assert run(bare(topology_from_text(text("cases/001-topo.txt"))), "TOP013")[0].status == "not_assessed"


def test_ncl007_from_the_topo_matrix_case_017_p2p_level_loc_on_nvlink():
    """NCL007 (which absorbed TOP014) judges the topo -m matrix when NVML's NVLink state is absent."""
    env = {"NCCL_P2P_LEVEL": text("cases/017-env.txt").split()[-1]}  # "... set by environment to LOC"
    assert env["NCCL_P2P_LEVEL"] == "LOC"
    o, f = run(bare(topology_from_text(text("topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt")), env=env), "NCL007")
    assert o.status == "fail" and "NCCL_P2P_LEVEL=LOC: P2P transport disabled" in f[0].evidence
    assert run(bare(topology_from_text(text("topo/008-4x2080ti-all-pix-tabs.txt")), env=env),
               "NCL007")[0].status == "pass"


def test_env_probe_collects_job_size_variables():
    from gpudoctor.facts.env import collect_env

    got = collect_env({"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8", "SLURM_NNODES": "2", "HOME": "/root"})
    assert got == {"WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8", "SLURM_NNODES": "2"}
    assert multi_node(got) is True


def _links_with(before, after):
    from gpudoctor.facts.model import NvLinkDetail

    return [NvLinkDetail(gpu=0, link=k, active=True, version=4, errors={"crc_flit": before if k == 2 else 0},
                         errors_after=None if after is None else {"crc_flit": after if k == 2 else 0})
            for k in range(12)]


def test_top006_counters_that_rose_during_the_runs_warn():
    topo = topology_from_text(text("topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt"))
    topo.nvlinks = _links_with(5, 41)
    o, f = run(bare(topo, a100s()), "TOP006")
    assert [x.severity for x in f] == ["warning"] and f[0].title == "NVLink errors rose under load"
    assert "link 2 crc_flit 5 -> 41 (+36)" in f[0].evidence[0] and f[0].data["rose"] == {"link 2 crc_flit": 36}


def test_top006_counters_unchanged_after_the_runs_are_a_note_that_says_so():
    topo = topology_from_text(text("topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt"))
    topo.nvlinks = _links_with(5, 5)
    o, f = run(bare(topo, a100s()), "TOP006")
    assert [x.severity for x in f] == ["info"] and "unchanged after the confirmation runs" in f[0].evidence[1]
