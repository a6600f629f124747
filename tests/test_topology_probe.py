"""Topology probe on fake sysfs/proc trees (tmp_path) with fake command runners, plus the NVML worker streams."""
from __future__ import annotations

import ctypes
import json
import sys
import types
from pathlib import Path

import pytest

from gpudoctor.facts.model import Snapshot
from gpudoctor.probes import topology as P
from gpudoctor.probes.subproc import run_cmd
from tests.topology_helpers import build_tree, config_with_acs, fake_runner, stream, which_all

FIX = Path(__file__).parent / "fixtures" / "topology"

def test_probe_on_fake_tree_reads_every_hop(tmp_path):
    build_tree(tmp_path, acs_readable=False, uplink_width=8)
    run = fake_runner()
    t = P.probe_topology(None, roots=P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc")), run=run,
                         which=lambda n: None if n == "lspci" else which_all(n))
    assert t.matrix is not None and t.matrix.gpus == ["GPU0", "GPU1"] and t.matrix.info["NIC0"].nic_name == "mlx5_0"
    paths = {p.label: p for p in t.paths}
    assert paths["GPU0"].hops == ["0000:03:00.0", "0000:02:00.0", "0000:01:00.0", "0000:00:01.0"]
    assert paths["GPU0"].root_complex == "pci0000:00"
    assert paths["mlx5_0"].hops == ["0000:81:00.0", "0000:80:01.0"]
    devs = {d.bdf: d for d in t.pcie}
    assert devs["0000:01:00.0"].link_width == 8 and devs["0000:01:00.0"].link_width_max == 16
    assert devs["0000:03:00.0"].kind == "gpu" and devs["0000:03:00.0"].link_speed_gts == 32.0
    assert devs["0000:81:00.0"].kind == "nic" and devs["0000:81:00.0"].numa_node == 1
    assert devs["0000:02:00.0"].acs_state == "needs_root"  # 64-byte config: not root
    assert t.lspci_available is False
    assert t.nvml_pairs[0].common_ancestor == "PIX" and t.nvml_pairs[0].p2p["nvlink"] == "NS"
    assert [f.state for f in t.fabric] == ["not_supported", "not_supported"]
    assert t.ib_present and t.ib_ports[0].state == "ACTIVE" and t.ib_ports[0].rate_gbps == 200.0
    assert t.ib_ports[0].pci_bus_id == "0000:81:00.0" and t.ib_ports[0].netdevs == ["ib0"]
    assert {n.name: n.virtual for n in t.net_ifaces} == {"ib0": False, "lo": True}
    assert t.peermem_loaded is True and t.peermem_module == "nvidia_peermem"
    assert t.iommu.enabled is False and t.iommu.mode == "off" and t.iommu.cmdline_flags == ["intel_iommu=on"]
    assert [p.relation for p in t.pairs] == ["PIX"] and t.pairs[0].bandwidth_gbs == pytest.approx(63.01, abs=0.01)
    assert ["nvidia-smi", "topo", "-m"] in run.calls
    Snapshot.model_validate_json(Snapshot(gpudoctor_version="t", created_at="t", topology=t).model_dump_json())


def test_acs_from_root_readable_config_and_iommu_translated(tmp_path):
    build_tree(tmp_path, acs_readable=True, iommu_type="DMA-FQ", peermem=False)
    t = P.probe_topology(None, roots=P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc")), run=fake_runner(),
                         which=lambda n: None if n == "lspci" else which_all(n))
    dev = {d.bdf: d for d in t.pcie}["0000:02:00.0"]
    assert dev.acs_state == "enabled" and dev.acs_ctl["ReqRedir"] and dev.acs_ctl["SrcValid"]
    assert not dev.acs_ctl["TransBlk"] and dev.source == "sysfs (config space)"
    assert t.iommu.enabled and t.iommu.mode == "translated" and set(t.iommu.domain_types.values()) == {"DMA-FQ"}
    assert t.peermem_loaded is False


def test_acs_config_parser_edge_cases():
    assert P.acs_from_config(b"\0" * 256)[0] == "needs_root"
    assert P.acs_from_config(b"\0" * 4096)[0] == "absent"
    st, cap, ctl = P.acs_from_config(config_with_acs(0))
    assert st == "disabled" and cap["SrcValid"] and not any(ctl.values())
    loop = bytearray(4096)
    loop[0x100:0x104] = (0x0001 | 0x100 << 20).to_bytes(4, "little")  # next points to itself
    assert P.acs_from_config(bytes(loop))[0] == "absent"


def test_lspci_merge_gives_acs_and_needs_root(tmp_path):
    build_tree(tmp_path, acs_readable=False)
    lspci = (FIX / "lspci" / "005-plx-pex8725-acscap-acsctl-srcvalid.txt").read_text()
    lspci = lspci.replace("0000:02:08.0", "0000:02:00.0") + "\tCapabilities: [148 v1] Access Control Services\n" \
        "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+\n" \
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n" \
        "\n02:01.0 PCI bridge: PLX Technology, Inc. PEX 8725\n\tCapabilities: <access denied>\n"
    t = P.probe_topology(None, roots=P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc")),
                         run=fake_runner(lspci=lspci), which=which_all)
    devs = {d.bdf: d for d in t.pcie}
    assert t.lspci_available is True
    assert devs["0000:02:00.0"].acs_state == "enabled" and devs["0000:02:00.0"].source == "sysfs + lspci"
    assert devs["0000:02:01.0"].acs_state == "needs_root"


def test_missing_everything_is_recorded_not_raised(tmp_path):
    t = P.probe_topology(None, roots=P.Roots(str(tmp_path / "nosys"), str(tmp_path / "noproc")),
                         run=fake_runner(topo="garbage"), which=lambda n: None)
    assert t.matrix is None and t.matrix_error == "nvidia-smi not found"
    assert t.ib_present is False and t.ib_ports == [] and t.net_ifaces == []
    assert t.peermem_loaded is None and t.iommu.mode == "off"
    t2 = P.probe_topology(None, roots=P.Roots(str(tmp_path / "nosys"), str(tmp_path / "noproc")),
                          run=fake_runner(topo="garbage"), which=which_all)
    assert t2.matrix is None and "no `nvidia-smi topo -m` header" in t2.matrix_error


def test_fabric_crash_loses_only_fabric_facts(tmp_path):
    """The real worker, made to segfault in fabric mode: pairs and sysfs facts survive, the error names the mode."""
    build_tree(tmp_path, acs_readable=False)
    run = fake_runner(real_fabric_env={"GPUDOCTOR_NVML_WORKER_CRASH": "fabric"})
    t = P.probe_topology(None, roots=P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc")), run=run,
                         which=lambda n: None if n == "lspci" else which_all(n))
    assert t.fabric == []
    assert "fabric worker" in t.errors["nvml_fabric"] and "SIGSEGV" in t.errors["nvml_fabric"]
    assert "injected" in t.errors["nvml_fabric"]
    assert t.nvml_pairs and t.matrix is not None and t.paths


def test_real_worker_modes_without_nvml_report_failure():
    for mode in ("topology", "fabric"):
        res = run_cmd([sys.executable, str(P.WORKER), mode], timeout=60)
        lines = res.stdout.splitlines()
        assert res.ok, res.stderr
        assert any(json.loads(x)["t"] in ("fail", "done") for x in lines)
        if mode == "topology":
            bus, pairs, links, fail = P.assemble_topology(lines)
            assert fail or bus  # no driver here: a clean 'fail' line, never a traceback


def test_assemble_topology_and_fabric_streams():
    lines = stream(
        {"t": "gpu", "i": 0, "k": "pci_bus_id", "v": "00000000:18:00.0"},
        {"t": "pair", "a": 0, "b": 1, "k": "common_ancestor", "v": 50},
        {"t": "pair_err", "a": 0, "b": 1, "k": "p2p_atomics", "v": "NVMLError_NotSupported"},
        {"t": "nvlink", "i": 0, "link": 0, "k": "state", "v": 1},
        {"t": "nvlink", "i": 0, "link": 0, "k": "version", "v": 4},
        {"t": "nvlink", "i": 0, "link": 0, "k": "remote_type", "v": "switch"},
        {"t": "nvlink", "i": 0, "link": 0, "k": "err_replay", "v": 3},
        {"t": "nvlink", "i": 0, "link": 1, "k": "state", "v": 0}).splitlines() + ["not json"]
    bus, pairs, links, fail = P.assemble_topology(lines)
    assert bus == {0: "00000000:18:00.0"} and fail is None
    assert pairs[0].common_ancestor == "SYS" and "p2p_atomics" in pairs[0].errors
    assert [(x.link, x.active, x.version, x.remote_type, x.errors) for x in links] == [
        (0, True, 4, "switch", {"replay": 3}), (1, False, None, None, {})]
    fab, errs = P.assemble_fabric(stream(
        {"t": "fabric", "i": 0, "k": "state", "v": 2}, {"t": "fabric", "i": 0, "k": "status", "v": 0},
        {"t": "fabric", "i": 0, "k": "struct_version", "v": 3},
        {"t": "fabric", "i": 1, "k": "state", "v": 3}, {"t": "fabric", "i": 1, "k": "status", "v": 999},
        {"t": "fabric", "i": 1, "k": "status_name", "v": "Unknown Error"},
        {"t": "err", "i": 2, "k": "fabric", "v": "NVMLError_Unknown"}).splitlines())
    assert [(f.gpu, f.state, f.status) for f in fab] == [
        (0, "in_progress", "Success"),
        (1, "completed", "Unknown Error"),
    ]
    assert errs == {2: "NVMLError_Unknown"}


def _load_worker():
    import importlib.util

    spec = importlib.util.spec_from_file_location("nvml_worker_t", P.WORKER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fabric_struct_version_checked_against_size():
    """The installed bindings' v3/v2 structs match their version words; a wrong one is never used."""
    import pynvml

    w = _load_worker()
    got = list(w._fabric_struct(pynvml, ctypes))
    assert [v for v, _, _ in got] == [3, 2]
    for ver, cls, word in got:
        assert word >> 24 == ver and word & 0xFFFFFF == ctypes.sizeof(cls)

    class Bad(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint), ("x", ctypes.c_uint8 * 3)]

    fake = types.SimpleNamespace(c_nvmlGpuFabricInfo_v3_t=Bad, nvmlGpuFabricInfo_v3=0x3000028,
                                 c_nvmlGpuFabricInfo_v2_t=Bad, nvmlGpuFabricInfo_v2=0x02000024)
    assert list(w._fabric_struct(fake, ctypes)) == []


def test_recheck_nvlink_errors_reads_the_counters_again_and_never_raises():
    from gpudoctor.facts.model import NvLinkDetail, TopologyFacts
    from gpudoctor.probes.subproc import CmdResult

    facts = TopologyFacts(nvlinks=[NvLinkDetail(gpu=0, link=0, active=True, errors={"replay": 3}),
                                   NvLinkDetail(gpu=0, link=1, active=False)])
    after = stream({"t": "nvlink", "i": 0, "link": 0, "k": "state", "v": 1},
                   {"t": "nvlink", "i": 0, "link": 0, "k": "err_replay", "v": 9},
                   {"t": "nvlink", "i": 0, "link": 0, "k": "err_crc_flit", "v": 0}, {"t": "done"})
    calls = []

    def run(argv, timeout, env=None, input_text=None):
        calls.append(argv[-1])
        return CmdResult(argv, 0, after, "")

    P.recheck_nvlink_errors(facts, run=run)
    assert calls == ["topology"] and facts.nvlinks[0].errors_after == {"replay": 9, "crc_flit": 0}
    assert facts.nvlinks[1].errors_after is None and "nvlink_recheck" not in facts.errors

    def boom(argv, timeout, env=None, input_text=None):
        raise OSError("no fork")

    P.recheck_nvlink_errors(facts, run=boom)
    assert "OSError: no fork" in facts.errors["nvlink_recheck"]

    idle = TopologyFacts(nvlinks=[NvLinkDetail(gpu=0, link=0, active=False)])
    P.recheck_nvlink_errors(idle, run=boom)  # no active link: nothing is started
    assert idle.errors == {}
