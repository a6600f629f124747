"""TRC003 / TRC004 and the CMP rules, each made to fire and kept quiet, on real cases and captures."""

import pytest

from gpudoctor.facts.model import GpuFacts, LibPathFacts, NvmlFacts, SharedLibrary
from gpudoctor.parsers.offline import load_path
from gpudoctor.probes.libpath import scan_dirs

from .conftest import CORPUS, FIX, case_text, run, snapshot_from_texts

RAW = CORPUS / "raw-collect_env"
A30 = (RAW / "005-vllm-sectioned-torch2.8-cu128-4xa30-full.txt").read_text()
ADA = case_text("006-vllm-tp2-stall-rtx6000ada-acs-iommu", "collect_env.txt")


def h200():
    snap = load_path(str(FIX / "h200" / "scan.json"))
    snap.libpath = LibPathFacts(ld_library_path=snap.env.variables["LD_LIBRARY_PATH"].split(":"), libraries=[])
    return snap


@pytest.mark.parametrize("rule_id", ["TRC003", "TRC004", "CMP001", "CMP002", "CMP003", "CMP004", "CMP005"])
def test_h200_capture_passes(rule_id):
    out, findings = run(h200(), rule_id)
    assert out.status == "pass" and findings == []


# ------------------------------------------------------------------ TRC003 runtime vs driver
def test_trc003_case_008_cu121_on_driver_470_fails():
    snap = snapshot_from_texts(case_text("008-torch21-cu121-on-driver-470", "collect_env.txt"))
    out, f = run(snap, "TRC003")
    assert out.status == "fail" and f[0].severity == "error"
    text = " ".join(f[0].evidence) + f[0].remedy
    assert "CUDA 12.1" in text and "11.4" in text
    assert "525.60.13" in f[0].remedy and "cu118" in f[0].remedy       # the fixes the thread names


def test_trc003_a30_cu128_on_535_runs_under_mvc():
    out, f = run(snapshot_from_texts(A30), "TRC003")
    assert out.status == "fail" and [x.severity for x in f] == ["info"]
    assert "minor-version compatibility" in f[0].title and "525.60.13" in " ".join(f[0].evidence)


def test_trc003_ada_cu121_on_535_is_native():
    out, f = run(snapshot_from_texts(ADA), "TRC003")
    assert out.status == "pass"


def test_trc003_cu130_wheel_on_535_fails():
    snap = h200()
    snap.nvml.driver_version, snap.nvml.cuda_driver_version = "535.183.01", "12.2"
    out, f = run(snap, "TRC003")
    assert f and f[0].severity == "error" and "580.65.06" in f[0].remedy


# ------------------------------------------------------------------ TRC004 arch list
def test_trc004_case_020_sm61_missing_fails():
    snap = snapshot_from_texts(case_text("020-torch-arch-list-missing-sm61", "error.txt"))
    snap.torch.cuda = "11.1"      # the cu111 nightly of the thread
    out, f = run(snap, "TRC004")
    assert out.status == "fail" and f[0].severity == "error" and "sm_61" in " ".join(f[0].evidence)


def test_trc004_uses_the_wheel_table_when_torch_gave_no_arch_list():
    out, f = run(snapshot_from_texts(A30), "TRC004")                 # A30 8.0 in the 2.8 cu128 list
    assert out.status == "pass"
    out, f = run(snapshot_from_texts(ADA), "TRC004")                 # sm_89 served by the sm_86 cubin
    assert out.status == "pass"
    snap = snapshot_from_texts(A30.replace("NVIDIA A30", "Tesla V100-SXM2-32GB").replace("2.8.0+cu128", "2.11.0+cu128"))
    out, f = run(snap, "TRC004")                                     # 2.11 cu128 dropped Volta
    assert out.status == "fail" and "official 2.11 cu128 wheel" in " ".join(f[0].evidence)


def test_trc004_ptx_only_is_a_warning_and_an_error_under_mvc():
    snap = h200()
    snap.torch.arch_list = ["sm_80", "compute_80"]                   # a source build: TORCH_CUDA_ARCH_LIST="8.0+PTX"
    out, f = run(snap, "TRC004")
    assert [x.severity for x in f] == ["warning"] and "PTX" in f[0].title
    snap.torch.cuda, snap.torch.version = "12.8", "2.8.0+cu128"
    snap.nvml.driver_version, snap.nvml.cuda_driver_version = "535.274.02", "12.2"
    out, f = run(snap, "TRC004")
    assert [x.severity for x in f] == ["error"] and "cannot JIT" in f[0].title


# ------------------------------------------------------------------ CMP001 torchvision / torchaudio
def test_cmp001_a30_pairs_match():
    out, f = run(snapshot_from_texts(A30), "CMP001")
    assert out.status == "pass"


def test_cmp001_nms_operator_missing_fires():
    snap = h200()
    snap.torch.torchvision_version = "0.25.0+cu130"                  # torchvision of torch 2.10 under torch 2.11
    snap.torch.torchvision_error = "RuntimeError: operator torchvision::nms does not exist"
    out, f = run(snap, "CMP001")
    assert out.status == "fail" and "torchvision::nms" in " ".join(f[0].evidence)
    assert "0.26" in " ".join(f[0].evidence)


def test_cmp001_version_pair_alone_fires():
    snap = h200()
    snap.torch.torchaudio_version = "2.10.0+cu130"
    out, f = run(snap, "CMP001")
    assert [x.subject for x in f] == ["torchaudio"]


def test_cmp001_cuda_major_mismatch_fires():
    snap = h200()
    snap.torch.torchvision_version = "0.26.0+cu126"
    out, f = run(snap, "CMP001")
    assert f and "CUDA major" in " ".join(f[0].evidence)


# ------------------------------------------------------------------ CMP002 nvcc vs torch CUDA
def test_cmp002_case_015_nvcc_10_1_vs_cu113():
    snap = snapshot_from_texts(case_text("015-cpp-extension-nvcc-10.1-vs-torch-cu113", "collect_env.txt"),
                               case_text("015-cpp-extension-nvcc-10.1-vs-torch-cu113", "error.txt"))
    out, f = run(snap, "CMP002")
    assert out.status == "fail" and f[0].severity == "warning" and "10.1" in f[0].evidence[0]
    assert "not affected" in " ".join(f[0].evidence)
    # the runtime is fine: no TRC rule may call it broken
    import gpudoctor.rules as r
    rep = r.evaluate(snap)
    assert not [x for x in rep.findings if x.rule_id.startswith("TRC") and x.severity == "error"]


def test_cmp002_matching_nvcc_is_quiet_and_minor_mismatch_is_info():
    assert run(snapshot_from_texts(A30), "CMP002")[0].status == "pass"  # 12.8.93 vs 12.8
    assert (
        run(snapshot_from_texts((RAW / "001-torch1.1-src-8x1080ti-centos.txt").read_text()), "CMP002")[0].status
        == "pass"
    )
    snap = h200()
    snap.torch.nvcc_version = "13.2"
    out, f = run(snap, "CMP002")
    assert [x.severity for x in f] == ["info"]


# ------------------------------------------------------------------ CMP003 LD_LIBRARY_PATH shadowing
CUDA118_LIB = "/usr/local/cuda-11.8/targets/x86_64-linux/lib"   # the cuDNN 8.7.0 of corpus raw collect_env 003


def t4_snapshot(torch_cudnn: int | None):
    snap = snapshot_from_texts((RAW / "003-torch1.13-cu117-t4-cudnn-multi-candidates.txt").read_text())
    snap.torch.cudnn_version = torch_cudnn
    snap.libpath = LibPathFacts(ld_library_path=[CUDA118_LIB], libraries=[
        SharedLibrary(kind="cudnn", path=f"{CUDA118_LIB}/libcudnn.so.8.7.0", directory=CUDA118_LIB, version="8.7.0")])
    return snap


def test_cmp003_torch_loaded_the_system_cudnn():
    out, f = run(t4_snapshot(8700), "CMP003")       # torch 1.13 cu117 bundles 8.5.0.96 but reports 8.7.0
    assert out.status == "fail" and "8.5.0.96" in " ".join(f[0].evidence)


def test_cmp003_quiet_when_torch_loaded_its_own():
    assert run(t4_snapshot(8500), "CMP003")[0].status == "pass"


def test_cmp003_other_soname_major_is_ignored():
    snap = t4_snapshot(8500)
    snap.libpath.libraries[0] = SharedLibrary(
        kind="cudnn",
        path="/usr/local/cuda-10.2/targets/x86_64-linux/lib/libcudnn.so.7.6.5",
        directory="/usr/local/cuda-10.2/targets/x86_64-linux/lib",
        version="7.6.5",
    )
    assert run(snap, "CMP003")[0].status == "pass"


def test_libpath_scan_reads_versions_from_names_and_symlinks(tmp_path):
    d = tmp_path / "lib"
    d.mkdir()
    (d / "libcudnn.so.8.7.0").write_text("")
    (d / "libcudnn.so.8").symlink_to("libcudnn.so.8.7.0")
    (d / "libcudnn_ops_infer.so.8.7.0").write_text("")
    (d / "libnccl.so.2.18.3").write_text("")
    (d / "libnccl.so.2").symlink_to("libnccl.so.2.18.3")
    (d / "libcuda.so.550.54.15").write_text("")
    (d / "libcuda.so.1").symlink_to("libcuda.so.550.54.15")
    e = tmp_path / "only-link"
    e.mkdir()
    (e / "libnccl.so").symlink_to(d / "libnccl.so.2.18.3")
    libs = scan_dirs([str(d), str(tmp_path / "missing"), str(e)])
    got = {(x.directory == str(d), x.kind, x.version) for x in libs}
    assert got == {
        (True, "cudnn", "8.7.0"),
        (True, "nccl", "2.18.3"),
        (True, "cuda", "550.54.15"),
        (False, "nccl", "2.18.3"),
    }


# ------------------------------------------------------------------ CMP004 driver vs GPU architecture
def test_cmp004_h100_on_driver_470_fails():
    snap = h200()
    snap.nvml.driver_version = "470.182.03"             # corpus 008's GKE driver under a Hopper GPU
    out, f = run(snap, "CMP004")
    assert out.status == "fail" and "520.61.05" in f[0].remedy


def test_cmp004_real_hosts_pass():
    assert run(snapshot_from_texts(A30), "CMP004")[0].status == "pass"
    assert run(snapshot_from_texts(ADA), "CMP004")[0].status == "pass"


# ------------------------------------------------------------------ CMP005 forward compatibility
def test_cmp005_case_024_error_804():
    snap = snapshot_from_texts(case_text("024-vllm-docker-error-804-forward-compat-geforce", "error.txt"))
    out, f = run(snap, "CMP005")
    assert out.status == "fail" and f[0].severity == "error" and "804" in f[0].evidence[0]


def _compat(gpu_name: str):
    nv = NvmlFacts(available=True, driver_version="525.147.05", cuda_driver_version="12.0", gpu_count=1,
                   gpus=[GpuFacts(index=0, name=gpu_name)])
    lib = "/usr/local/cuda/compat"
    snap = snapshot_from_texts("", libpath=LibPathFacts(ld_library_path=[lib], libraries=[
        SharedLibrary(kind="cuda", path=f"{lib}/libcuda.so.550.54.15", directory=lib, version="550.54.15")]))
    snap.nvml = nv
    return snap


def test_cmp005_compat_libs_on_geforce_fire_and_on_datacenter_inform():
    out, f = run(_compat("NVIDIA GeForce RTX 4090"), "CMP005")
    assert [x.severity for x in f] == ["error"]
    out, f = run(_compat("NVIDIA A100-SXM4-80GB"), "CMP005")
    assert [x.severity for x in f] == ["info"]


def test_cmp005_toolkit_stubs_dir_is_not_a_driver():
    """Measured on the H200 (LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64/stubs first): torch initialised CUDA
    normally, yet CMP005 said 'not assessed' over the stub's unknown version. The stub is never loaded."""
    stubs = "/usr/local/cuda-13.0/lib64/stubs"
    snap = _compat("NVIDIA H200")
    snap.libpath = LibPathFacts(ld_library_path=[stubs], libraries=[
        SharedLibrary(kind="cuda", path=f"{stubs}/libcuda.so", directory=stubs, version=None)])
    out, f = run(snap, "CMP005")
    assert out.status == "pass" and not f
    snap.libpath.libraries.append(SharedLibrary(kind="cuda", path="/opt/compat/libcuda.so", directory="/opt/compat"))
    assert run(snap, "CMP005")[0].status == "not_assessed"   # a real libcuda of unknown version stays unknown
