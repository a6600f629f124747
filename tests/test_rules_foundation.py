"""Every foundation rule both ways, on the real H200 snapshot edited per case."""
from __future__ import annotations

import pytest
from conftest import ids, outcome

from gpudoctor.compat.versions import arch_covers, visible_device_count, visible_devices
from gpudoctor.facts.model import GpuProcess
from gpudoctor.rules import evaluate

GIB = 1024 ** 3


# --- the real hosts -------------------------------------------------------------------------------
def test_healthy_h200_has_no_error_or_warning(h200_snap):
    rep = evaluate(h200_snap)
    assert ids(rep, "error") == [] and ids(rep, "warning") == []
    # the virtio disk reports rotational=1: said as 'cannot tell', never a warning
    assert [f.rule_id for f in rep.findings] == ["HST004"] and rep.findings[0].severity == "info"


def test_busy_h200_sw_power_cap_is_normal(h200_busy_snap):
    rep = evaluate(h200_busy_snap)
    assert "GPU002" not in ids(rep) and outcome(rep, "GPU002").status == "pass"
    assert outcome(rep, "PCI002").status == "pass"


def test_cpu_only_host(cpu_host_snap):
    rep = evaluate(cpu_host_snap)
    assert ids(rep, "error") == ["DRV001"]
    # without a driver the GPUs cannot be read: unknown ("not assessed"), never "none" or "pass"
    for rid in ("GPU001", "PCI001", "HST001"):
        assert outcome(rep, rid).status == "not_assessed" and "DRV001" in outcome(rep, rid).reason
    for rid in ("TRC002", "TRC004"):
        assert outcome(rep, rid).status == "not_applicable"   # a CPU-only torch build: nothing GPU to check


# --- DRV ------------------------------------------------------------------------------------------
def test_drv001_driver_loaded_no_gpus(h200_snap):
    h200_snap.nvml.gpus, h200_snap.nvml.gpu_count = [], 0
    rep = evaluate(h200_snap, only=["DRV001"])
    assert rep.findings[0].title.startswith("NVIDIA driver loaded but no GPU")


def test_drv001_nvml_probe_failed_is_not_assessed(h200_snap):
    h200_snap.nvml = None
    assert outcome(evaluate(h200_snap, only=["DRV001"]), "DRV001").status == "not_assessed"


# --- TRC ------------------------------------------------------------------------------------------
def test_trc001_torch_missing(h200_snap):
    h200_snap.torch.installed, h200_snap.torch.version = False, None
    rep = evaluate(h200_snap, only=["TRC001"])
    assert ids(rep) == ["TRC001"] and "cu130" in rep.findings[0].remedy


def test_trc002_cpu_build_on_gpu_host(h200_snap):
    h200_snap.torch.version, h200_snap.torch.cuda = "2.13.0+cpu", None
    assert ids(evaluate(h200_snap, only=["TRC002"])) == ["TRC002"]


@pytest.mark.parametrize("torch_cuda,driver_cuda,driver,expect", [
    ("13.0", "13.0", "580.159.04", None),          # the H200 host
    ("12.1", "13.0", "580.159.04", None),          # older runtime on newer driver: backward compatible
    ("12.4", "12.2", "535.104.05", "info"),         # same major, driver >= 525.60.13: minor-version compat
    ("12.1", "11.4", "470.82.01", "error"),         # corpus 008: torch 2.1 cu121 on driver 470
    ("13.0", "12.8", "570.124.06", "error"),        # new major on an old driver
    ("12.4", "12.0", "520.61.05", "error"),         # below the 12.x MVC floor
])
def test_trc003_runtime_vs_driver(h200_snap, torch_cuda, driver_cuda, driver, expect):
    h200_snap.torch.cuda = torch_cuda
    h200_snap.nvml.cuda_driver_version, h200_snap.nvml.driver_version = driver_cuda, driver
    rep = evaluate(h200_snap, only=["TRC003"])
    assert [f.severity for f in rep.findings] == ([expect] if expect else [])


def test_arch_covers():
    cu130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert arch_covers(cu130, (9, 0)) == ("native", "sm_90")
    assert arch_covers(cu130, (8, 9)) == ("native", "sm_86")       # sm_89 runs the sm_86 cubin
    assert arch_covers(cu130, (7, 0))[0] == "none"                  # Volta dropped from cu13x wheels
    assert arch_covers(cu130 + ["compute_120"], (12, 1)) == ("native", "sm_120")
    assert arch_covers(["sm_80", "compute_80"], (9, 0)) == ("ptx", "compute_80")
    assert arch_covers(["sm_90a"], (10, 0))[0] == "none"           # 'a' cubins are not forward compatible
    assert arch_covers(["sm_100f"], (10, 3)) == ("native", "sm_100f")


def test_trc004_fires_for_missing_arch(h200_snap):
    h200_snap.torch.arch_list = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"]  # a cu118-era list, no sm_90
    rep = evaluate(h200_snap, only=["TRC004"])
    assert [f.severity for f in rep.findings] == ["error"] and "sm_90" in rep.findings[0].evidence[0]
    h200_snap.torch.arch_list.append("compute_86")
    assert [f.severity for f in evaluate(h200_snap, only=["TRC004"]).findings] == ["warning"]


def test_trc005_device_count(h200_snap):
    assert ids(evaluate(h200_snap, only=["TRC005"])) == []
    h200_snap.torch.cuda_available, h200_snap.torch.device_count = False, 0
    h200_snap.torch.cuda_error = "CUDA driver initialization failed, you might not have a CUDA gpu."
    rep = evaluate(h200_snap, only=["TRC005"])
    assert ids(rep) == ["TRC005"] and "initialization failed" in " ".join(rep.findings[0].evidence)


def test_trc005_cuda_visible_devices_empty(h200_snap):
    h200_snap.env.variables["CUDA_VISIBLE_DEVICES"] = ""
    h200_snap.torch.cuda_available, h200_snap.torch.device_count = False, 0
    rep = evaluate(h200_snap, only=["TRC005"])
    assert rep.findings[0].title == "CUDA_VISIBLE_DEVICES hides every GPU"


def test_visible_device_count():
    assert visible_device_count(None, 8) == 8
    assert visible_device_count("", 8) == 0
    assert visible_device_count("0,1", 8) == 2
    assert visible_device_count("0,9,1", 8) == 1   # CUDA stops at the first invalid entry
    assert visible_device_count("GPU-5eee0356,1", 2) == 2   # UUIDs unknown: taken as valid
    uuids = ["GPU-ca26fb9a-58e3-c0d9-b11c-5fa064ed0dad", "GPU-5eee0356-0000-0000-0000-000000000001"]
    assert visible_device_count("GPU-5eee0356,0", 2, uuids) == 2   # a unique prefix names a GPU
    assert visible_device_count("GPU-00000000-0000-0000-0000-000000000000", 2, uuids) == 0
    assert visible_device_count("1,GPU-5eee", 2, uuids) == 1   # the same GPU twice: CUDA stops there
    assert visible_device_count("0,banana,1", 2, uuids) == 1
    assert visible_devices("0,1", 2, uuids) == (2, None)
    assert "past the last GPU index" in (visible_devices("2", 2, uuids)[1] or "")


def test_trc005_cuda_visible_devices_bad_uuid(h200_snap):
    """Measured on the H200 (docs/examples/h200-faults-2026-12-01): a UUID no GPU has hides every GPU."""
    h200_snap.env.variables["CUDA_VISIBLE_DEVICES"] = "GPU-00000000-0000-0000-0000-000000000000"
    h200_snap.torch.cuda_available, h200_snap.torch.device_count = False, 0
    rep = evaluate(h200_snap, only=["TRC005"])
    assert rep.findings[0].title == "CUDA_VISIBLE_DEVICES hides every GPU"
    assert "matches no GPU's UUID" in " ".join(rep.findings[0].evidence)


# --- GPU ------------------------------------------------------------------------------------------
def gpu(snap):
    return snap.nvml.gpus[0]


@pytest.mark.parametrize("temp,sev", [(38, None), (84, "warning"), (90, "error")])
def test_gpu001_temperature(h200_snap, temp, sev):
    gpu(h200_snap).temperature_c = temp
    assert [f.severity for f in evaluate(h200_snap, only=["GPU001"]).findings] == ([sev] if sev else [])


@pytest.mark.parametrize("mask,names,sev", [
    (0x1, ["GpuIdle"], None), (0x4, ["SwPowerCap"], None),
    (0x8, ["HwSlowdown"], "error"), (0x40, ["HwThermalSlowdown"], "error"),
    (0x84, ["SwPowerCap", "HwPowerBrakeSlowdown"], "error"), (0x20, ["SwThermalSlowdown"], "warning"),
])
def test_gpu002_clock_events(h200_snap, mask, names, sev):
    gpu(h200_snap).clock_event_reasons_mask, gpu(h200_snap).clock_event_reasons = mask, names
    assert [f.severity for f in evaluate(h200_snap, only=["GPU002"]).findings] == ([sev] if sev else [])


def test_gpu003_power_limit(h200_snap):
    assert ids(evaluate(h200_snap, only=["GPU003"])) == []
    gpu(h200_snap).power_limit_w = 500.0
    rep = evaluate(h200_snap, only=["GPU003"])
    assert ids(rep) == ["GPU003"] and rep.findings[0].remedy == "sudo nvidia-smi -i 0 -pl 700"


def test_gpu004_ecc(h200_snap):
    assert ids(evaluate(h200_snap, only=["GPU004"])) == []
    gpu(h200_snap).ecc_uncorrected_aggregate = 3
    assert [f.severity for f in evaluate(h200_snap, only=["GPU004"]).findings] == ["warning"]
    gpu(h200_snap).ecc_uncorrected_volatile = 2
    assert [f.severity for f in evaluate(h200_snap, only=["GPU004"]).findings] == ["error"]


def test_gpu005_remapped_rows(h200_snap):
    assert ids(evaluate(h200_snap, only=["GPU005"])) == []
    gpu(h200_snap).remapped_rows_pending = True
    assert [f.severity for f in evaluate(h200_snap, only=["GPU005"]).findings] == ["warning"]
    gpu(h200_snap).remapped_rows_failure = True
    assert [f.severity for f in evaluate(h200_snap, only=["GPU005"]).findings] == ["error"]


@pytest.mark.parametrize("mode,sev", [("Default", None), ("Exclusive_Process", "warning"), ("Prohibited", "error")])
def test_gpu006_compute_mode(h200_snap, mode, sev):
    gpu(h200_snap).compute_mode = mode
    assert [f.severity for f in evaluate(h200_snap, only=["GPU006"]).findings] == ([sev] if sev else [])


def test_gpu007_mig(h200_snap):
    assert ids(evaluate(h200_snap, only=["GPU007"])) == []
    gpu(h200_snap).mig_mode_pending = True
    assert [f.severity for f in evaluate(h200_snap, only=["GPU007"]).findings] == ["info"]
    gpu(h200_snap).mig_mode_current = True
    assert [f.severity for f in evaluate(h200_snap, only=["GPU007"]).findings] == ["warning"]


def test_gpu008_other_processes(h200_snap):
    assert ids(evaluate(h200_snap, only=["GPU008"])) == []
    gpu(h200_snap).processes = [GpuProcess(pid=4242, name="python3", used_memory_bytes=2 * GIB)]
    rep = evaluate(h200_snap, only=["GPU008"])
    assert "pid 4242 (python3), compute, 2048 MiB" in rep.findings[0].evidence[0]


def _four_gpus(snap, procs_per_gpu):
    base = snap.nvml.gpus[0]
    snap.nvml.gpus = [base.model_copy(update={"index": i, "processes": procs}) for i, procs in enumerate(procs_per_gpu)]
    snap.nvml.gpu_count = len(procs_per_gpu)
    return snap


def test_gpu008_tells_the_jobs_own_ranks_a_display_and_a_missing_set_device_apart(h200_snap):
    """An nvidia-smi taken while the job ran (one 'python' per GPU) is info, as is a display server's few MiB; the
    same pids on GPU 0 and on their own GPU (no torch.cuda.set_device) is one warning naming them; a stray process
    stays the plain warning."""
    def p(pid, name="python", kind="compute", mib=30000):
        return GpuProcess(pid=pid, name=name, kind=kind, used_memory_bytes=mib * 2**20)

    job = _four_gpus(h200_snap.model_copy(deep=True), [[p(100 + i)] for i in range(4)])
    got = evaluate(job, only=["GPU008"]).findings  # one finding for the four GPUs, each GPU's process listed
    assert len(got) == 1 and got[0].severity == "info" and "the job itself" in got[0].title
    assert got[0].subject == "GPUs 0-3" and got[0].data["gpus"] == [0, 1, 2, 3] and len(got[0].evidence) == 5
    desk = _four_gpus(h200_snap.model_copy(deep=True), [[p(1, "/usr/lib/xorg/Xorg", "graphics", 387),
                                                          p(2, "/usr/bin/gnome-shell", "graphics", 97)], [], [], []])
    got = evaluate(desk, only=["GPU008"]).findings
    assert [(f.severity, f.title) for f in got] == [("info", "GPU drives a display")]
    hub = _four_gpus(h200_snap.model_copy(deep=True), [[p(100), p(101, mib=900), p(102, mib=900), p(103, mib=900)],
                                                       [p(101)], [p(102)], [p(103)]])
    got = evaluate(hub, only=["GPU008"]).findings
    assert len(got) == 1 and got[0].severity == "warning" and "set_device" in got[0].title
    assert got[0].data["pids"] == [101, 102, 103] and got[0].data["also_on"] == [1, 2, 3]
    stray = _four_gpus(h200_snap.model_copy(deep=True), [[p(100), p(555, "vllm_server")], [p(101)], [p(102)],
                                                         [p(103)]])
    got = evaluate(stray, only=["GPU008"]).findings
    assert [(f.severity, f.title, f.subject) for f in got] == [("warning", "Other processes hold GPU memory",
                                                                "GPUs 0-3")]


def test_gpu009_persistence(h200_snap):
    assert ids(evaluate(h200_snap, only=["GPU009"])) == []
    gpu(h200_snap).persistence_mode = False
    assert [f.severity for f in evaluate(h200_snap, only=["GPU009"]).findings] == ["info"]


# --- PCI ------------------------------------------------------------------------------------------
def test_pci001_width(h200_snap):
    assert ids(evaluate(h200_snap, only=["PCI001"])) == []
    gpu(h200_snap).pcie_width_current = 8
    assert "x8, max x16" in evaluate(h200_snap, only=["PCI001"]).findings[0].evidence[0]


def test_pci002_generation_idle_is_not_judged(h200_snap):
    gpu(h200_snap).pcie_gen_current = 1           # idle downshift (GpuIdle active, 0% utilisation)
    rep = evaluate(h200_snap, only=["PCI002"])
    assert rep.findings == [] and outcome(rep, "PCI002").status == "not_assessed"


def test_pci002_generation_low_under_load(h200_busy_snap):
    gpu(h200_busy_snap).pcie_gen_current = 3
    rep = evaluate(h200_busy_snap, only=["PCI002"])
    assert ids(rep) == ["PCI002"] and "Gen3 while busy" in rep.findings[0].evidence[0]


# --- HST ------------------------------------------------------------------------------------------
def test_hst001_cores_per_gpu(h200_snap):
    assert ids(evaluate(h200_snap, only=["HST001"])) == []   # 16 cores, 1 GPU
    h200_snap.cpu.usable_cores, h200_snap.cpu.cgroup_quota_cores = 2.0, 2.0
    assert ids(evaluate(h200_snap, only=["HST001"])) == ["HST001"]


def test_hst001_counts_smt_threads_as_half(h200_snap):
    h200_snap.nvml.gpus = h200_snap.nvml.gpus * 2
    h200_snap.cpu.logical_cores, h200_snap.cpu.physical_cores, h200_snap.cpu.usable_cores = 16, 8, 12.0
    rep = evaluate(h200_snap, only=["HST001"])
    assert ids(rep) == ["HST001"] and rep.findings[0].data["cores_per_gpu"] == 3.0


def test_hst002_ram_per_gpu_uses_cgroup_limit(h200_snap):
    assert ids(evaluate(h200_snap, only=["HST002"])) == []
    h200_snap.memory.cgroup_limit_bytes = 8 * GIB
    assert ids(evaluate(h200_snap, only=["HST002"])) == ["HST002"]


@pytest.mark.parametrize("size,gpus,sev", [(128 * GIB, 1, None), (64 * 2**20, 1, "warning"),
                                            (64 * 2**20, 2, "error"), (None, 1, "warning")])
def test_hst003_dev_shm(h200_snap, size, gpus, sev):
    h200_snap.memory.shm_total_bytes = size
    h200_snap.nvml.gpus = h200_snap.nvml.gpus * gpus
    assert [f.severity for f in evaluate(h200_snap, only=["HST003"]).findings] == ([sev] if sev else [])


def test_hst004_rotational(h200_snap):
    h200_snap.storage.virtual_disk = False
    assert [f.severity for f in evaluate(h200_snap, only=["HST004"]).findings] == ["warning"]
    h200_snap.storage.rotational = False
    assert evaluate(h200_snap, only=["HST004"]).findings == []
    h200_snap.storage.rotational = None
    assert outcome(evaluate(h200_snap, only=["HST004"]), "HST004").status == "not_applicable"


# --- NCL ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env,rid,subject", [
    ({"NCCL_ALGO": "Tree"}, "NCL001", "NCCL_ALGO"),
    ({"NCCL_PROTO": "LL"}, "NCL001", "NCCL_PROTO"),
    ({"NCCL_MIN_NRINGS": "4"}, "NCL002", "NCCL_MIN_NRINGS"),
    ({"NCCL_SOCKET_IFNAM": "eth0"}, "NCL003", "NCCL_SOCKET_IFNAM"),
    ({"NCCL_ASYNC_ERROR_HANDLING": "1"}, "NCL004", "NCCL_ASYNC_ERROR_HANDLING"),
    ({"NCCL_P2P_DISABLE": "1"}, "NCL005", "NCCL_P2P_DISABLE"),
    ({"NCCL_SHM_DISABLE": "1"}, "NCL005", "NCCL_SHM_DISABLE"),
    ({"CUDA_LAUNCH_BLOCKING": "1"}, "NCL006", "CUDA_LAUNCH_BLOCKING"),
])
def test_ncl_rules_fire(h200_snap, env, rid, subject):
    h200_snap.env.variables.update(env)
    rep = evaluate(h200_snap)
    hits = [f for f in rep.findings if f.rule_id.startswith("NCL")]
    assert [(f.rule_id, f.subject) for f in hits] == [(rid, subject)]


@pytest.mark.parametrize("nccl,severity,says", [
    ("2.21.5", "info", "older than 2.22.3"), (None, "info", "not in the inputs"), ("2.27.3", "warning", "no longer"),
    ("2.18.1", "info", "changes nothing")])
def test_ncl005_a_frameworks_cumem_workaround_is_judged_by_the_nccl_in_use(h200_snap, nccl, severity, says):
    """vLLM / verl set NCCL_CUMEM_ENABLE=0 for NCCL 2.19-2.22.2 (NVIDIA/nccl#1234): not a leftover until NCCL has the
    fix; NCCL_CUMEM_ENABLE=1 (forcing cuMem on) stays a plain debugging-variable warning."""
    h200_snap.torch.nccl_version = nccl
    h200_snap.env.variables["NCCL_CUMEM_ENABLE"] = "0"
    f, = evaluate(h200_snap, only=["NCL005"]).findings
    assert f.severity == severity and says in " ".join(f.evidence) and "NVLS" in " ".join(f.evidence)
    h200_snap.env.variables["NCCL_CUMEM_ENABLE"] = "1"
    f, = evaluate(h200_snap, only=["NCL005"]).findings
    assert f.severity == "warning" and "workaround" not in " ".join(f.evidence)


def test_ncl003_suggests_the_closest_name(h200_snap):
    h200_snap.env.variables["NCCL_SOCKET_IFNAM"] = "eth0"
    assert evaluate(h200_snap, only=["NCL003"]).findings[0].data["suggestion"] == "NCCL_SOCKET_IFNAME"


@pytest.mark.parametrize("env", [{"NCCL_VERSION": "2.28.3-1"}, {"NCCL_DEBUG": "WARN"}, {"NCCL_P2P_DISABLE": "0"},
                                 {"NCCL_SOCKET_IFNAME": "eth0"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"},
                                 {"CUDA_LAUNCH_BLOCKING": "0"}])
def test_ncl_rules_quiet(h200_snap, env):
    h200_snap.env.variables.update(env)
    assert [f for f in evaluate(h200_snap).findings if f.rule_id.startswith("NCL")] == []


def test_latest_h200_scan_with_confirmation_runs_is_healthy():
    """The full `gpudoctor scan --json` of the H200 host (schema 1.2, with topology and confirmation runs),
    re-evaluated offline: still only the virtual-disk note; the runs and the GPU checks pass."""
    import json

    from conftest import H200

    from gpudoctor.facts.model import Snapshot

    doc = json.loads((H200 / "scan-full-1.2.json").read_text())
    assert [f["rule_id"] for f in doc["findings"]] == ["HST004"]
    rep = evaluate(Snapshot.model_validate(doc["snapshot"]))
    assert [(f.rule_id, f.severity) for f in rep.findings] == [("HST004", "info")]
    st = {o.rule_id: o.status for o in rep.outcomes}
    for rid in ("DRV001", "TRC003", "TRC004", "TRC005", "GPU002", "PCI001", "CMP001", "CNF001", "CNF004", "CNF005"):
        assert st[rid] == "pass", rid
    c = rep.snapshot.confirmation
    assert c.status == "ok" and c.copies[0].h2d_gbs.median > 40      # Gen5 x16: 55 GB/s measured
    assert c.ddp.params == 109_514_298 and c.ddp.step.step_s.median < 0.1


def test_h200_scan_with_auto_batch_reports_and_renders_it():
    """The 12:36 H200 scan (schema 1.3): the DDP step ran at the auto batch (128 x 128 on 149 GB free), the
    report says so, and at world size 1 it shows no gradient all-reduce figure (nothing moved)."""
    import io
    import json

    from conftest import H200
    from rich.console import Console

    from gpudoctor.facts.model import Snapshot
    from gpudoctor.reports.confirm_view import render_confirmation

    doc = json.loads((H200 / "scan-full-1.3.json").read_text())
    assert doc["schema_version"] == "1.3"
    rep = evaluate(Snapshot.model_validate(doc["snapshot"]))
    assert [(f.rule_id, f.severity) for f in rep.findings] == [("HST004", "info")]
    d = rep.snapshot.confirmation.ddp
    assert (d.per_rank_batch, d.seq_len, d.world_size) == (128, 128, 1) and d.batch_choice.startswith("auto")
    assert 0.05 < d.step.step_s.median < 0.06 and d.step.step_s.p75 / d.step.step_s.p25 < 1.01  # 56 ms, steady
    buf = io.StringIO()
    render_confirmation(rep.snapshot.confirmation, Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    assert "batch 128/rank (auto) x seq 128" in text and "fits 40% of every GPU's free memory" in text
    assert "gradient all-reduce" not in text


def test_h200_two_gpu_scan_is_healthy_and_its_runs_agree():
    """The 2 x H200 (NV18) scan of 2026-11-29, re-evaluated: the NVLink error counters (hundreds of CRC counts since
    the driver loaded, on a link that carried 332 GB/s busbw in the same scan) are a note, not a warning; every
    confirmation check passes; busbw, scaling efficiency and DDP sync are what the host showed."""
    import json

    from conftest import FIX


    doc = json.loads((FIX / "h200x2" / "scan.json").read_text())
    assert ("TOP006", "warning") in [(f["rule_id"], f["severity"]) for f in doc["findings"]]  # what the old rule said
    from gpudoctor.facts.load import parse_document

    rep = evaluate(parse_document(json.dumps(doc), "scan.json"))  # as `gpudoctor check` loads it
    assert sorted({(f.rule_id, f.severity) for f in rep.findings}) == [("HST004", "info"), ("TOP006", "info")]
    st = {o.rule_id: o.status for o in rep.outcomes}
    assert all(st[f"CNF00{i}"] == "pass" for i in range(1, 7))
    c = rep.snapshot.confirmation
    best = max(a.busbw_gbs for a in c.allreduce if a.size_bytes >= 256 * 2**20)
    assert c.world_size == 2 and 300 < best < 450                    # NV18: 450 GB/s line rate, 332 measured
    assert all(a.correct for a in c.allreduce)
    assert 0.9 < c.ddp.efficiency <= 1.05 and c.ddp.params_max_abs_diff == 0.0
    # NVML reported nvmlNvlinkVersion_t 6 on these links: NVLink 4.0, 18 x 25 GB/s per direction
    from gpudoctor.rules import REGISTRY
    from gpudoctor.rules.confirmation import link_class
    from gpudoctor.rules.engine import Ctx

    label, rate, _ = link_class(Ctx(rep.snapshot, REGISTRY["CNF003"]), c)
    assert label.startswith("NVLink4 x18") and rate == 450.0
    nv = [k for k in rep.snapshot.topology.link_classes if k.name == "NV#"]
    assert nv and "unknown" not in (nv[0].basis or "") and "NVLink 4" in (nv[0].basis or "")
