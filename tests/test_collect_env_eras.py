"""collect_env from its first format (torch 1.0, 2018) to today's (2.8): one input per era, written from that era's
format strings (tests/fixtures/collect-env-eras/README.md); the facts each era holds are read, ROCm builds are
ROCm (never "CPU-only", never judged against NVIDIA driver tables), and what an era does not print stays unknown."""
import pytest

from gpudoctor.parsers import detect as D
from gpudoctor.parsers.collect_env import parse_collect_env
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate

ERAS = "collect-env-eras"


def _ce(fix, name):
    text = (fix / ERAS / name).read_text()
    assert D.COLLECT_ENV in D.detect(text)
    return parse_collect_env(text)


def _status(fix, *files):
    snap, errors = build_snapshot([str(fix / f) for f in files])
    assert not errors, errors
    rep = evaluate(snap)
    return {o.rule_id: o.status for o in rep.outcomes}, rep


def test_2018_yes_no_and_legacy_pip(fix):
    ce = _ce(fix, "1.0-cuda9-2x1080ti-legacy-pip.txt")
    t = ce.torch
    assert (t.version, t.cuda, t.nvcc_version, t.cuda_available) == ("1.0.0", "9.0.176", "9.0.176", True)
    assert t.torchvision_version == "0.2.1"  # "[pip] torchvision (0.2.1)", not "(0.2.1)"
    assert t.cudnn_version is None  # a list of candidate files is not torch's cuDNN
    assert ce.nvml.driver_version == "390.87" and [g.name for g in ce.nvml.gpus] == ["GeForce GTX 1080 Ti"] * 2
    assert ce.packages["pytorch"] == "1.0.0"  # the conda line


def test_cpu_only_no_cuda_fields_are_not_versions(fix):
    ce = _ce(fix, "1.4-cpu-no-cuda.txt")
    t = ce.torch
    assert t.version == "1.4.0+cpu" and "cuda" in t.model_fields_set and t.cuda is None  # known: CPU-only
    assert t.cuda_available is False and "nvcc_version" not in t.model_fields_set  # "No CUDA" is no nvcc version
    assert ce.nvml is None  # "Nvidia driver version: No CUDA": the driver is unknown, not "No CUDA"


def test_cpu_only_build_on_an_nvidia_host_fires_trc002(fix):
    st, rep = _status(fix, f"{ERAS}/1.4-cpu-no-cuda.txt", "h200-text/nvidia-smi-q.txt")
    assert st["TRC002"] == "fail"


@pytest.mark.parametrize("name,hip", [("1.10-rocm4.2.txt", "4.2.21155-37cb3a34"),
                                      ("2.4-rocm6.1-mi300x.txt", "6.1.40091-a8dbc0c19")])
def test_rocm_builds_are_rocm(fix, name, hip):
    ce = _ce(fix, name)
    t = ce.torch
    assert t.hip == hip and t.cuda is None and t.cuda_available is True
    assert ce.nvml is None  # the GPU line is torch's name of an AMD GPU; no NVIDIA driver: no NVML facts
    st, rep = _status(fix, f"{ERAS}/{name}")
    assert st["TRC002"] != "fail"  # not "CPU-only"
    assert st["TRC003"] == "not_applicable" and st["DRV001"] != "fail"  # no NVIDIA driver table applies
    assert not [f for f in rep.findings if f.severity == "error"]


def test_rocm_from_the_wheel_version_without_a_rocm_line():
    text = "PyTorch version: 1.9.0+rocm4.0.1\nIs debug build: False\nCUDA used to build PyTorch: N/A\n"
    t = parse_collect_env(text).torch
    assert t.hip == "4.0.1" and t.cuda is None


def test_windows_fullwidth_colons_one_gpu_on_the_key_line(fix):
    ce = _ce(fix, "2.1-cu121-windows-fullwidth-colons.txt")
    assert (ce.torch.version, ce.torch.cuda, ce.torch.nvcc_version) == ("2.1.0+cu121", "12.1", "12.1.105")
    assert ce.nvml.driver_version == "546.33" and [g.name for g in ce.nvml.gpus] == ["NVIDIA GeForce RTX 4090"]
    assert ce.host.os_name == "Microsoft Windows 11 专业版" and ce.host.kernel is None


def test_2_5_mig_devices_and_lscpu(fix):
    ce = _ce(fix, "2.5-cu124-a100-mig.txt")
    assert (ce.torch.version, ce.torch.cuda, ce.torch.hip) == ("2.5.1+cu124", "12.4", None)
    g0, g1 = ce.nvml.gpus
    assert g0.mig_mode_current is True and g1.mig_mode_current is None  # no MIG line: unknown (no instance yet?)
    assert ce.nvml.gpu_count == 2 and ce.cpu.sockets == 2 and ce.cpu.physical_cores == 64
    assert "mig 3g.20gb device 0" not in ce.keys
    assert ce.packages["nvidia-nccl-cu12"] == "2.21.5"
    # the wheel's cuDNN / NCCL packages are not what torch loaded (LD_LIBRARY_PATH may override): unknown
    assert ce.torch.cudnn_version is None and ce.torch.nccl_version is None
    st, rep = _status(fix, f"{ERAS}/2.5-cu124-a100-mig.txt")
    assert st["GPU007"] == "fail"


def test_today_xpu_and_allocator_lines(fix):
    ce = _ce(fix, "2.8-cu128-h100-xpu-line.txt")
    assert (ce.torch.version, ce.torch.cuda, ce.torch.cuda_available) == ("2.8.0+cu128", "12.8", True)
    assert "nvcc_version" not in ce.torch.model_fields_set  # "CUDA runtime version: Could not collect"
    assert ce.nvml.driver_version == "570.158.01" and ce.nvml.gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert ce.host.kernel == "6.8.0-63-generic" and ce.cpu.model == "Intel(R) Xeon(R) Platinum 8480+"
    st, _ = _status(fix, f"{ERAS}/2.8-cu128-h100-xpu-line.txt")
    assert st["TRC003"] == "pass"  # 12.8 on R570


def test_torch_not_importable(fix):
    ce = _ce(fix, "no-torch.txt")
    assert ce.torch.installed is False and ce.torch.version is None
    assert ce.nvml.driver_version == "535.104.05"


def test_issue_template_checklist_gives_only_what_it_states(fix):
    ce = _ce(fix, "1.1-issue-template-checklist.txt")
    t = ce.torch
    assert t.installed is True and t.version == "1.1.0"
    # "CUDA/cuDNN version: 10.0 / 7.5" is the user's words, not torch.version.cuda: unknown
    assert "cuda" not in t.model_fields_set and "cuda_available" not in t.model_fields_set
    assert ce.nvml is None  # "2x GTX 1080 Ti" is free text, not a GPU list
    st, _ = _status(fix, f"{ERAS}/1.1-issue-template-checklist.txt")
    assert st["TRC002"] in ("not_assessed", "not_applicable") and st["TRC003"] != "fail"


def test_checklist_without_a_version_is_not_not_installed():
    ce = parse_collect_env(" - PyTorch Version (e.g., 1.0): master\n - Python version: 3.7\n"
                           "Is CUDA available: Yes\n")
    assert ce.torch is None  # no version stated: torch unknown, not "not installed"
