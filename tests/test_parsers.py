"""Parsers against real outputs: the facts listed in each capture's .facts.md (tests/fixtures/corpus/raw) and
the H200 captures; and format detection by content."""
import pytest

from gpudoctor.parsers import ParseError, collect_env, dmesg, host_text, nccl_log, nvidia_smi
from gpudoctor.parsers import detect as D

RAW = "corpus/raw"


def read(fix, rel):
    return (fix / rel).read_text()


def test_collect_env_2019(fix):
    ce = collect_env.parse_collect_env(read(fix, f"{RAW}/collect_env/001-torch1.1-src-8x1080ti-centos.txt"))
    assert ce.torch.version == "1.1.0a0+c297f26" and ce.torch.cuda == "9.2.88" and ce.torch.nvcc_version == "9.2.148"
    assert ce.torch.cuda_available is True  # 'Yes'
    assert ce.nvml.driver_version == "410.78" and [g.name for g in ce.nvml.gpus] == ["GeForce GTX 1080 Ti"] * 8
    assert ce.torch.cudnn_version is None and ce.host.os_name.startswith("CentOS Linux release 7.6.1810")
    assert "hip" not in ce.torch.model_fields_set  # no ROCM line in 2019


def test_collect_env_cudnn_candidates_not_a_version(fix):
    ce = collect_env.parse_collect_env(
        read(fix, f"{RAW}/collect_env/003-torch1.13-cu117-t4-cudnn-multi-candidates.txt")
    )
    assert ce.torch.version == "1.13.0+cu117" and ce.torch.cuda == "11.7" and ce.torch.cudnn_version is None
    assert "nvcc_version" not in ce.torch.model_fields_set  # 'Could not collect'
    assert ce.nvml.driver_version == "520.61.05" and [g.name for g in ce.nvml.gpus] == ["Tesla T4"]


def test_collect_env_vllm_sectioned(fix):
    ce = collect_env.parse_collect_env(read(fix, f"{RAW}/collect_env/005-vllm-sectioned-torch2.8-cu128-4xa30-full.txt"))
    assert ce.torch.version == "2.8.0+cu128" and ce.torch.cuda == "12.8" and ce.torch.nvcc_version == "12.8.93"
    assert ce.nvml.driver_version == "535.274.02" and len(ce.nvml.gpus) == 4
    assert ce.cpu.sockets == 2 and ce.cpu.logical_cores == 96 and ce.cpu.numa_nodes == 2 and ce.cpu.physical_cores == 48
    assert ce.env.variables["NCCL_VERSION"] == "2.25.1-1" and ce.packages["nvidia-nccl-cu12"] == "2.27.3"
    assert D.TOPO in D.detect(read(fix, f"{RAW}/collect_env/005-vllm-sectioned-torch2.8-cu128-4xa30-full.txt"))


def test_collect_env_h200(fix):
    ce = collect_env.parse_collect_env(read(fix, "h200-text/collect_env.txt"))
    assert ce.torch.version == "2.11.0+cu130" and ce.torch.cuda == "13.0" and ce.host.virtualization == "KVM"
    assert ce.torch.torchvision_version == "0.26.0"


def test_smi_q_mig_header(fix):
    nv = nvidia_smi.parse_query(read(fix, f"{RAW}/smi-q/001-a100pcie-mig-enabled-header.txt"))
    g = nv.gpus[0]
    assert (nv.driver_version, nv.cuda_driver_version, nv.gpu_count) == ("460.73.01", "11.2", 1)
    assert g.pci_bus_id == "00000000:86:00.0" and g.name == "A100-PCIE-40GB"
    assert g.mig_mode_current is True and g.mig_mode_pending is True and g.persistence_mode is True
    assert "ecc_uncorrected_volatile" not in g.model_fields_set  # absent, not empty


def test_smi_q_throttle_reasons_old_label(fix):
    nv = nvidia_smi.parse_query(read(fix, f"{RAW}/smi-q/003-d-performance-full-idle-active-p0.txt"))
    g = nv.gpus[0]
    assert g.pstate == 0 and g.clock_event_reasons == ["GpuIdle"] and g.clock_event_reasons_mask == 0x1


def test_smi_q_section_excerpt(fix):
    nv = nvidia_smi.parse_query(read(fix, f"{RAW}/smi-q/005-remapped-rows-pending-snippet.txt"))
    g = nv.gpus[0]
    assert (g.remapped_rows_correctable, g.remapped_rows_uncorrectable, g.remapped_rows_pending) == (0, 4, True)
    assert "remapped_rows_failure" not in g.model_fields_set and nv.driver_version is None


def test_smi_text_and_xml_agree(fix):
    q = nvidia_smi.parse_query(read(fix, "h200-text/nvidia-smi-q.txt")).gpus[0]
    x = nvidia_smi.parse_xml(read(fix, "h200-text/nvidia-smi-q.xml")).gpus[0]
    for f in ("name", "pci_bus_id", "pcie_gen_max", "pcie_width_current", "memory_total_bytes", "compute_mode",
              "ecc_uncorrected_volatile", "remapped_rows_pending", "power_default_limit_w", "clock_event_reasons_mask"):
        assert getattr(q, f) == getattr(x, f), f
    assert q.memory_total_bytes == 143771 * 2**20 and q.power_limit_w == 700.0


def test_smi_q_busy(fix):
    g = nvidia_smi.parse_query(read(fix, "h200-text/nvidia-smi-q-busy.txt")).gpus[0]
    assert g.clock_event_reasons == ["SwPowerCap"] and g.utilization_gpu_pct == 100 and g.pcie_replay_counter == 5
    assert [(p.pid, p.name, p.used_memory_bytes) for p in g.processes] == [(883, "python3", 1002 * 2**20)]


def test_smi_table(fix):
    nv = nvidia_smi.parse_table(read(fix, "h200-text/nvidia-smi-busy.txt"))
    g = nv.gpus[0]
    assert (nv.driver_version, nv.cuda_driver_version) == ("580.159.04", "13.0")
    assert (g.temperature_c, g.power_draw_w, g.power_limit_w, g.utilization_gpu_pct) == (60, 689.0, 700.0, 100)
    assert g.mig_mode_current is False and g.compute_mode == "Default" and g.processes[0].pid == 883
    assert nvidia_smi.parse_table(read(fix, "h200-text/nvidia-smi.txt")).gpus[0].processes == []


def test_smi_table_no_driver():
    nv = nvidia_smi.parse_table("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                                "Make sure that the latest NVIDIA driver is installed and running.\n")
    assert nv.available is False and "couldn't communicate" in nv.error


def test_smi_list_and_nvlink(fix):
    assert nvidia_smi.parse_list(read(fix, "h200-text/nvidia-smi-L.txt")).gpus[0].uuid.startswith("GPU-5eee")
    nv = nvidia_smi.parse_nvlink_status(read(fix, "corpus/017-a100-nvswitch-0-nvls-and-p2p-level-loc/nvlink-s.txt"))
    assert [len(g.nvlinks) for g in nv.gpus] == [12, 12]  # the paste is cut after GPU 2 Link 0: GPU 2 dropped
    assert all(link.active and link.speed_gbps == 25.0 for g in nv.gpus for link in g.nvlinks)
    inact = nvidia_smi.parse_nvlink_status("GPU 0: X (UUID: GPU-1)\n\t Link 0: <inactive>\n")
    assert inact.gpus[0].nvlinks[0].active is False


def test_xml_entities_refused():
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><nvidia_smi_log>&b;</nvidia_smi_log>'
    )
    with pytest.raises(ParseError):
        nvidia_smi.parse_xml(bomb)
    with pytest.raises(ParseError):
        nvidia_smi.parse_xml("<nvidia_smi_log><gpu id='0'>")  # truncated


def test_df_and_ulimit(fix):
    rows = host_text.parse_df(read(fix, "h200-text/devshm.txt"))
    assert rows[0].mount == "/dev/shm" and rows[0].size_bytes == 128 * 2**30
    k = host_text.parse_df("Filesystem     1K-blocks  Used Available Use% Mounted on\nshm 65536 0 65536 0% /dev/shm\n")
    assert host_text.shm_facts(k).shm_total_bytes == 64 * 2**20
    m = host_text.parse_ulimit(read(fix, "h200-text/ulimit.txt"))
    assert m.memlock_soft_bytes == "unlimited" and m.nofile_soft == 20000
    b = host_text.parse_ulimit("max locked memory           (kbytes, -l) 8192\nopen files                  (-n) 1024\n")
    assert b.memlock_soft_bytes == 8192 * 1024 and b.nofile_soft == 1024


def test_dmesg_join_and_nccl(fix):
    k = dmesg.parse_kernel_log(read(fix, "corpus/012-h100-node-7-of-8-gpus-probe-failed/dmesg.txt"))
    assert k.messages[0].endswith("is not supported by the NVIDIA 580.126.09 driver release.")
    n = nccl_log.parse_nccl_log(read(fix, "h200-errors/nccl-info-1rank.txt"))
    assert (n.version, n.cuda_driver_version, n.ib_device_found, n.net, n.nranks, n.nvls_channels) == \
        ("2.28.9+cuda13.0", "13.0", False, "Socket", 1, 0)
    assert n.init_complete


CASES_DETECT = {
    "h200-text/nvidia-smi.txt": D.SMI, "h200-text/nvidia-smi-q.txt": D.SMI_Q, "h200-text/nvidia-smi-q.xml": D.SMI_XML,
    "h200-text/nvidia-smi-topo-m.txt": D.TOPO, "h200-text/collect_env.txt": D.COLLECT_ENV, "h200-text/devshm.txt": D.DF,
    "h200-text/ulimit.txt": D.ULIMIT, "h200-text/nvidia-smi-L.txt": D.SMI_L, "h200-text/lscpu.txt": D.LSCPU,
    "corpus/021-dmesg-gpu-fallen-off-bus-no-xid/dmesg.txt": D.DMESG, "h200-errors/nccl-info-1rank.txt": D.NCCL,
    f"{RAW}/lspci/003-4090-riser-lnkcap-lnksta-gen1-downgraded.txt": D.LSPCI,
    "corpus/017-a100-nvswitch-0-nvls-and-p2p-level-loc/nvlink-s.txt": D.NVLINK,
    f"{RAW}/smi-q/005-remapped-rows-pending-snippet.txt": D.SMI_Q,
    "h200-errors/rendezvous-timeout.txt": D.ERRORS,
    "h200-text/nvidia-smi-csv.txt": D.SMI_CSV, "h200-text/nvidia-smi-csv-samples.csv": D.SMI_CSV,
    "h200-text/meminfo.txt": D.MEMINFO, "h200-text/compute-apps-busy.txt": D.APPS_CSV,
}


@pytest.mark.parametrize("rel,kind", sorted(CASES_DETECT.items()))
def test_detect_by_content(fix, rel, kind):
    assert D.detect(read(fix, rel))[0] == kind


def test_detect_ignores_file_name(fix, tmp_path):
    from gpudoctor.parsers.offline import build_snapshot

    p = tmp_path / "collect_env.txt"  # a misleading name
    p.write_text(read(fix, "h200-text/nvidia-smi-q.txt"))
    snap, _ = build_snapshot([str(p)])
    assert snap.inputs[0].kinds == [D.SMI_Q] and snap.torch is None


def test_raw_topology_not_parsed_here_without_issue3(fix):
    from gpudoctor.parsers.offline import build_snapshot

    snap, errors = build_snapshot([str(fix / f"{RAW}/topo/001-8x4090-all-sys-2nic-tabs.txt")])
    assert not errors and snap.inputs[0].kinds[0] == D.TOPO
    try:
        import gpudoctor.parsers.topo  # noqa: F401
    except ImportError:
        assert "parser not available" in snap.inputs[0].note


def test_smi_query_csv_h200(fix):
    """The real `nvidia-smi --query-gpu=... --format=csv` of the H200 host: one GPU, units stripped, mask decoded."""
    nv = nvidia_smi.parse_query_csv(read(fix, "h200-text/nvidia-smi-csv.txt"))
    (g,) = nv.gpus
    assert nv.driver_version == "580.159.04" and nv.available and nv.gpu_count == 1
    assert (g.index, g.name, g.pci_bus_id) == (0, "NVIDIA H200", "00000000:00:06.0")
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (5, 5, 16, 16)
    assert (g.temperature_c, g.power_draw_w, g.power_limit_w) == (38, 128.34, 700.0)
    assert g.clock_event_reasons == ["GpuIdle"] and g.clock_event_reasons_mask == 1
    assert (g.ecc_uncorrected_volatile, g.persistence_mode, g.compute_mode, g.mig_mode_current) == (
        0,
        True,
        "Default",
        False,
    )
    assert "memory_total_bytes" not in g.model_fields_set  # not queried: unknown, not zero


def test_smi_query_csv_time_series(fix):
    """397 samples of one GPU without an index column (rows keyed by timestamp): one GPU, the last values,
    the clock event reasons of every sample (idle and, at full load, SW power cap)."""
    nv = nvidia_smi.parse_query_csv(read(fix, "h200-text/nvidia-smi-csv-samples.csv"))
    (g,) = nv.gpus
    assert g.clock_event_reasons == ["GpuIdle", "SwPowerCap"] and g.power_draw_w == 127.77


def test_smi_query_csv_keys_aliases_and_nounits():
    text = ("index, clocks_throttle_reasons.active, memory.total [MiB], pcie.link.gen.current\n"
            "0, 0x0000000000000000, 81559, 4\n1, 0x0000000000000008, 81559, 1\n"
            "0, 0x0000000000000040, 81559, 4\n")  # a second sample: GPU 0 hit HW thermal slowdown
    a, b = nvidia_smi.parse_query_csv(text).gpus
    assert (a.index, a.clock_event_reasons, a.memory_total_bytes) == (0, ["HwThermalSlowdown"], 81559 * 2**20)
    assert (b.index, b.clock_event_reasons, b.pcie_gen_current) == (1, ["HwSlowdown"], 1)
    with pytest.raises(ParseError):
        nvidia_smi.parse_query_csv("pid, process_name\n")
    with pytest.raises(ParseError):
        nvidia_smi.parse_query_csv("index, name\n")


def test_meminfo(fix):
    m = host_text.parse_meminfo(read(fix, "h200-text/meminfo.txt"))
    assert m.total_bytes == 131981020 * 1024 and m.available_bytes == 131460312 * 1024
    with pytest.raises(ParseError):
        host_text.parse_meminfo("MemFree: 12 kB\n")


def test_check_reads_query_csv_and_meminfo_and_fires_gpu_rules(tmp_path, fix):
    """Offline check on CSV samples: a HW slowdown in one sample is an error (GPU002); a x8 link of a x16 slot a
    PCI001 warning; RAM from /proc/meminfo."""
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    csv = tmp_path / "samples.csv"
    csv.write_text("timestamp, index, pci.bus_id, clocks_event_reasons.active, pcie.link.width.current, "
                   "pcie.link.width.max\n"
                   "2026/11/29 10:00:00.000, 0, 00000000:18:00.0, 0x0000000000000000, 8, 16\n"
                   "2026/11/29 10:00:01.000, 0, 00000000:18:00.0, 0x0000000000000008, 8, 16\n")
    snap, errors = build_snapshot([str(csv), str(fix / "h200-text/meminfo.txt")])
    assert errors == [] and snap.memory.total_bytes == 131981020 * 1024
    found = {f.rule_id for f in evaluate(snap).findings}
    assert {"GPU002", "PCI001"} <= found


def test_smi_query_csv_survives_windows_editors_pastes_and_commas(fix):
    """CRLF line ends, a byte-order mark, a pasted command line or other text before the header, and a GPU name
    with a comma (nvidia-smi does not quote) - all from the real H200 capture."""
    real = read(fix, "h200-text/nvidia-smi-csv.txt")
    meminfo = read(fix, "h200-text/meminfo.txt")
    variants = {"crlf": real.replace("\n", "\r\n"), "bom": "\ufeff" + real,
                "pasted": "$ nvidia-smi --query-gpu=index,name --format=csv\n" + real, "after meminfo": meminfo + real}
    for label, text in variants.items():
        assert D.SMI_CSV in D.detect(text), label
        (g,) = nvidia_smi.parse_query_csv(text).gpus
        assert (g.name, g.pcie_width_current, g.clock_event_reasons) == ("NVIDIA H200", 16, ["GpuIdle"]), label
    header, row = real.strip().split("\n")
    renamed = row.replace("NVIDIA H200", "NVIDIA H200 NVL, rev 2")
    (g,) = nvidia_smi.parse_query_csv(header + "\n" + renamed + "\n" + header + "\n").gpus  # a repeated header too
    assert g.name == "NVIDIA H200 NVL, rev 2" and g.pci_bus_id == "00000000:00:06.0"


def test_top006_not_assessed_when_the_inputs_say_nothing_about_nvlink(tmp_path):
    """2 x H200 known from `nvidia-smi -L` only: 'expected 18 NVLinks, 0 active' would be a false error."""
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    p = tmp_path / "L.txt"
    p.write_text("GPU 0: NVIDIA H200 (UUID: GPU-ab231fe6-3275-fe46-8e60-7a2d390594c2)\n"
                 "GPU 1: NVIDIA H200 (UUID: GPU-8727ea3b-6787-261c-f5da-31ad1fce64f5)\n")
    snap, errors = build_snapshot([str(p)])
    rep = evaluate(snap)
    assert errors == [] and not [f for f in rep.findings if f.rule_id == "TOP006"]
    assert next(o for o in rep.outcomes if o.rule_id == "TOP006").status == "not_assessed"


def test_compute_apps_csv_attached_to_the_gpu_and_gpu008_fires(fix, tmp_path):
    """The real busy capture (pid 883 python3 1002 MiB, no GPU column) with the one-GPU --query-gpu CSV: attached
    to GPU 0, GPU008 warns. With two GPUs and no GPU column the rows are not guessed: a note says why."""
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    ((uuid, bus, proc),) = nvidia_smi.parse_compute_apps_csv(read(fix, "h200-text/compute-apps-busy.txt"))
    assert (uuid, bus, proc.pid, proc.name, proc.used_memory_bytes) == (None, None, 883, "python3", 1002 * 2**20)
    snap, errors = build_snapshot(
        [str(fix / "h200-text/compute-apps-busy.txt"), str(fix / "h200-text/nvidia-smi-csv.txt")]
    )
    f = [x for x in evaluate(snap).findings if x.rule_id == "GPU008"]
    assert errors == [] and len(f) == 1 and "pid 883 (python3)" in f[0].evidence[0]
    two = tmp_path / "L.txt"
    two.write_text("GPU 0: NVIDIA H200 (UUID: GPU-ab231fe6-3275-fe46-8e60-7a2d390594c2)\n"
                   "GPU 1: NVIDIA H200 (UUID: GPU-8727ea3b-6787-261c-f5da-31ad1fce64f5)\n")
    snap, _ = build_snapshot([str(fix / "h200-text/compute-apps-busy.txt"), str(two)])
    assert all(g.processes == [] for g in snap.nvml.gpus)
    assert any("not attached to a GPU" in (i.note or "") for i in snap.inputs)
    apps = tmp_path / "apps.csv"
    apps.write_text("gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
                    "GPU-8727ea3b-6787-261c-f5da-31ad1fce64f5, 4242, python3 train.py --lr 1e-4, --bs 8, 70000 MiB\n")
    snap, _ = build_snapshot([str(apps), str(two)])
    assert [p.pid for p in snap.nvml.gpus[1].processes] == [4242] and snap.nvml.gpus[0].processes == []
    assert snap.nvml.gpus[1].processes[0].name == "python3 train.py --lr 1e-4, --bs 8"
