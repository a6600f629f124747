"""collect_env / error-message parsers on real pasted outputs (facts from each case's .facts.md / expected.md)."""
from gpudoctor.parsers.collect_env import parse_collect_env, to_facts
from gpudoctor.parsers.torch_messages import cuda_version_from_int, parse_messages

from .conftest import CORPUS, case_text

RAW = CORPUS / "raw-collect_env"


def test_old_format_1_1_source_build():
    d = parse_collect_env((RAW / "001-torch1.1-src-8x1080ti-centos.txt").read_text())
    assert d["torch_version"] == "1.1.0a0+c297f26" and d["debug_build"] is False
    assert d["torch_cuda"] == "9.2.88" and d["nvcc_version"] == "9.2.148"
    assert d["driver_version"] == "410.78" and d["gpus"] == ["GeForce GTX 1080 Ti"] * 8
    assert d["cuda_available"] is True and "cudnn" not in d
    assert d["pip"]["torchvision"] == "0.2.2.post3"


def test_cudnn_candidates_are_not_a_version():
    d = parse_collect_env((RAW / "003-torch1.13-cu117-t4-cudnn-multi-candidates.txt").read_text())
    assert d["torch_version"] == "1.13.0+cu117" and d["torch_cuda"] == "11.7"
    assert "nvcc_version" not in d and d["driver_version"] == "520.61.05" and d["gpus"] == ["Tesla T4"]
    assert "cudnn" not in d and len(d["cudnn_candidates"]) == 7
    assert d["cudnn_candidates"][2] == "/usr/local/cuda-11.8/targets/x86_64-linux/lib/libcudnn.so.8.7.0"
    torch, nv = to_facts(d)
    assert torch.cudnn_version is None and nv.gpus[0].compute_capability == "7.5"


def test_vllm_sectioned_layout():
    d = parse_collect_env((RAW / "005-vllm-sectioned-torch2.8-cu128-4xa30-full.txt").read_text())
    assert d["torch_version"] == "2.8.0+cu128" and d["torch_cuda"] == "12.8" and d["nvcc_version"] == "12.8.93"
    assert d["driver_version"] == "535.274.02" and d["gpus"] == ["NVIDIA A30"] * 4
    assert d["pip"]["nvidia-nccl-cu12"] == "2.27.3" and d["pip"]["torchvision"] == "0.23.0+cu128"
    assert d["env"]["CUDA_VERSION"] == "12.8.1" and d["env"]["NCCL_VERSION"] == "2.25.1-1"
    assert "conda" not in d


def test_h200_capture():
    d = parse_collect_env((RAW / "h200-sxm-1gpu-collect_env.txt").read_text())
    assert d["torch_version"] == "2.11.0+cu130" and d["nvcc_version"] == "13.0.88" and d["driver_version"] == "580.159.04"
    assert d["gpus"] == ["NVIDIA H200"] and "cuda_module_loading" not in d


def test_case_008_driver_cuda_from_warning():
    d = parse_collect_env(case_text("008-torch21-cu121-on-driver-470", "collect_env.txt"))
    assert d["torch_version"] == "2.1.0+cu121" and d["torch_cuda"] == "12.1"
    assert d["driver_cuda"] == "11.4" and "too old" in d["cuda_error"]
    torch, nv = to_facts(d)
    assert nv.cuda_driver_version == "11.4" and nv.driver_version is None and nv.gpus == []


def test_messages():
    assert cuda_version_from_int(11040) == "11.4" and cuda_version_from_int(12010) == "12.1"
    m = parse_messages(case_text("020-torch-arch-list-missing-sm61", "error.txt"))
    assert m["gpu_name"] == "GeForce GTX 1070 Ti" and m["cc"] == "6.1"
    assert m["arch_list"] == ["sm_50", "sm_70", "sm_80", "sm_86"]
    m = parse_messages(case_text("015-cpp-extension-nvcc-10.1-vs-torch-cu113", "error.txt"))
    assert m == {"nvcc_version": "10.1", "torch_cuda": "11.3"}
    m = parse_messages(case_text("024-vllm-docker-error-804-forward-compat-geforce", "error.txt"))
    assert m["cuda_error_code"] == 804 and "forward compatibility" in m["cuda_error"]
    assert parse_messages("RuntimeError: operator torchvision::nms does not exist")["torchvision_error"].endswith("does not exist")
    assert parse_messages("nothing here") == {}
