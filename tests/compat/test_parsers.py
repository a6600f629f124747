"""collect_env / error-message parsers on real pasted outputs (facts from each case's .facts.md / expected.md).

collect_env has one parser (gpudoctor.parsers.collect_env, shared with `gpudoctor check`); error messages
are read by gpudoctor.parsers.torch_messages; facts_from_texts combines both."""
from gpudoctor.parsers.collect_env import parse_collect_env
from gpudoctor.parsers.torch_messages import cuda_version_from_int, facts_from_texts, parse_messages

from .conftest import CORPUS, case_text

RAW = CORPUS / "raw-collect_env"


def test_old_format_1_1_source_build():
    ce = parse_collect_env((RAW / "001-torch1.1-src-8x1080ti-centos.txt").read_text())
    assert ce.torch.version == "1.1.0a0+c297f26" and ce.torch.cuda == "9.2.88"
    assert ce.torch.nvcc_version == "9.2.148"
    assert ce.nvml.driver_version == "410.78" and [g.name for g in ce.nvml.gpus] == ["GeForce GTX 1080 Ti"] * 8
    assert ce.torch.cuda_available is True and ce.torch.cudnn_version is None
    assert ce.packages["torchvision"] == "0.2.2.post3"


def test_cudnn_candidates_are_not_a_version():
    text = (RAW / "003-torch1.13-cu117-t4-cudnn-multi-candidates.txt").read_text()
    ce = parse_collect_env(text)
    assert ce.torch.version == "1.13.0+cu117" and ce.torch.cuda == "11.7"
    assert ce.torch.nvcc_version is None and ce.nvml.driver_version == "520.61.05"
    assert [g.name for g in ce.nvml.gpus] == ["Tesla T4"] and ce.torch.cudnn_version is None
    torch, nv = facts_from_texts([text])
    assert nv.gpus[0].compute_capability == "7.5"          # from gpudoctor's GPU table


def test_vllm_sectioned_layout():
    ce = parse_collect_env((RAW / "005-vllm-sectioned-torch2.8-cu128-4xa30-full.txt").read_text())
    assert ce.torch.version == "2.8.0+cu128" and ce.torch.cuda == "12.8" and ce.torch.nvcc_version == "12.8.93"
    assert ce.nvml.driver_version == "535.274.02" and [g.name for g in ce.nvml.gpus] == ["NVIDIA A30"] * 4
    assert ce.packages["nvidia-nccl-cu12"] == "2.27.3" and ce.packages["torchvision"] == "0.23.0+cu128"


def test_h200_capture():
    ce = parse_collect_env((RAW / "h200-sxm-1gpu-collect_env.txt").read_text())
    assert ce.torch.version == "2.11.0+cu130" and ce.torch.nvcc_version == "13.0.88"
    assert ce.nvml.driver_version == "580.159.04" and [g.name for g in ce.nvml.gpus] == ["NVIDIA H200"]


def test_case_008_driver_cuda_from_warning():
    torch, nv = facts_from_texts([case_text("008-torch21-cu121-on-driver-470", "collect_env.txt")])
    assert torch.version == "2.1.0+cu121" and torch.cuda == "12.1"
    assert nv.cuda_driver_version == "11.4" and "too old" in torch.cuda_error


def test_messages():
    assert cuda_version_from_int(11040) == "11.4" and cuda_version_from_int(12010) == "12.1"
    m = parse_messages(case_text("020-torch-arch-list-missing-sm61", "error.txt"))
    assert m["gpu_name"] == "GeForce GTX 1070 Ti" and m["cc"] == "6.1"
    assert m["arch_list"] == ["sm_50", "sm_70", "sm_80", "sm_86"]
    m = parse_messages(case_text("015-cpp-extension-nvcc-10.1-vs-torch-cu113", "error.txt"))
    assert m == {"nvcc_version": "10.1", "torch_cuda": "11.3"}
    m = parse_messages(case_text("024-vllm-docker-error-804-forward-compat-geforce", "error.txt"))
    assert m["cuda_error_code"] == 804 and "forward compatibility" in m["cuda_error"]
    assert parse_messages("RuntimeError: operator torchvision::nms does not exist")["torchvision_error"].endswith(
        "does not exist"
    )
    assert parse_messages("nothing here") == {}
