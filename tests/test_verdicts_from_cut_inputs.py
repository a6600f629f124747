"""Verdicts on inputs that say less than they seem to (issue 14 item 5, a break-it pass of 2026-12-03): a
`nvidia-smi nvlink -e` is not a link state; collect_env's "Could not collect" GPU list is unknown, not "no GPU"; a
ROCm wheel on an NVIDIA host; a `-q` cut before the last of its "Attached GPUs"; a small archive cut short."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from typer.testing import CliRunner

from gpudoctor.cli.app import app

runner = CliRunner()


def _check(tmp_path: Path, name: str, body: str | bytes) -> tuple[int, dict]:
    p = tmp_path / name
    (p.write_bytes if isinstance(body, bytes) else p.write_text)(body)  # type: ignore[operator]
    res = runner.invoke(app, ["check", str(p), "--format", "json"])
    return res.exit_code, json.loads(res.stdout) if res.stdout.strip().startswith("{") else {}


def _status(doc: dict, rule: str) -> str:
    return next(o["status"] for o in doc["outcomes"] if o["rule_id"] == rule)


def test_nvlink_error_counters_are_not_read_as_active_links(tmp_path):
    """`nvidia-smi nvlink -e` lists "Link N: Replay Errors: n" under the same GPU headers as `-s`: no link state is
    in it, so TOP006 is not assessed (it used to pass on 36 'active' links per GPU)."""
    body = "".join(f"GPU {g}: NVIDIA A100-SXM4-80GB (UUID: GPU-6a1e2c3d-4b5f-6789-abcd-ef01234567{g:02d})\n" + "".join(
        f"\t Link {n}: Replay Errors: {1187 if (g, n) == (1, 3) else 0}\n\t Link {n}: Recovery Errors: 0\n"
        f"\t Link {n}: CRC Errors: {48213 if (g, n) == (1, 3) else 0}\n" for n in range(12)) for g in range(2))
    _, doc = _check(tmp_path, "nvlink-e.txt", body)
    assert _status(doc, "TOP006") == "not_assessed"
    assert all(not g["nvlinks"] for g in doc["snapshot"]["nvml"]["gpus"])
    # the link states of `nvlink -s` are still read
    s = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-0)\n" + "".join(f"\t Link {n}: 25 GB/s\n" for n in range(11)) + (
        "\t Link 11: <inactive>\nGPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n") + "".join(
        f"\t Link {n}: 25 GB/s\n" for n in range(12))
    _, doc = _check(tmp_path, "nvlink-s.txt", s)
    assert _status(doc, "TOP006") == "fail"


CE_ROCM = """PyTorch version: 2.3.0+rocm6.0
Is debug build: False
CUDA used to build PyTorch: N/A
ROCM used to build PyTorch: 6.0.32830-d62f6a171

OS: Ubuntu 22.04.4 LTS (x86_64)
Python platform: Linux-5.15.0-105-generic-x86_64-with-glibc2.35
Is CUDA available: False
CUDA runtime version: 12.2.140
GPU models and configuration: Could not collect
Nvidia driver version: 535.161.08
cuDNN version: Could not collect
HIP runtime version: 6.0.32830
"""


def test_a_rocm_wheel_on_an_nvidia_host_is_an_error(tmp_path):
    code, doc = _check(tmp_path, "ce.txt", CE_ROCM)
    trc2 = [f for f in doc["findings"] if f["rule_id"] == "TRC002"]
    assert code == 1 and trc2 and "ROCm" in trc2[0]["title"] and "cu" in trc2[0]["remedy"]


def test_could_not_collect_gpus_is_unknown_not_none(tmp_path):
    """A CUDA wheel whose collect_env could not run nvidia-smi: the GPU list is unknown (not "no GPU"), and a CUDA
    build that reports is_available()=False is a warning of its own."""
    ce = (CE_ROCM.replace("2.3.0+rocm6.0", "2.5.1+cu124").replace("CUDA used to build PyTorch: N/A",
                                                                 "CUDA used to build PyTorch: 12.4")
          .replace("ROCM used to build PyTorch: 6.0.32830-d62f6a171", "ROCM used to build PyTorch: N/A")
          .replace("Nvidia driver version: 535.161.08", "Nvidia driver version: Could not collect")
          .replace("HIP runtime version: 6.0.32830", "HIP runtime version: N/A"))
    code, doc = _check(tmp_path, "ce.txt", ce)
    assert _status(doc, "TRC002") == "not_assessed" and _status(doc, "CMP005") == "not_assessed"
    trc5 = [f for f in doc["findings"] if f["rule_id"] == "TRC005"]
    assert trc5 and trc5[0]["severity"] == "warning" and "not available" in trc5[0]["title"]


Q_HEAD = """==============NVSMI LOG==============

Timestamp                                 : Tue Mar  5 10:12:01 2024
Driver Version                            : 535.129.03
CUDA Version                              : 12.2

Attached GPUs                             : 8
"""
Q_GPU = """GPU 00000000:{bus}:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Persistence Mode                      : Enabled
    MIG Mode
        Current                           : Disabled
        Pending                           : Disabled
"""


def test_a_query_cut_before_its_last_gpus_does_not_pass_for_the_unseen_ones(tmp_path):
    text = Q_HEAD + "".join(Q_GPU.format(bus=b) for b in ("18", "2A", "3A"))
    _, doc = _check(tmp_path, "q.txt", text)
    assert doc["snapshot"]["nvml"]["gpu_count"] == 8 and len(doc["snapshot"]["nvml"]["gpus"]) == 3
    for rule in ("GPU007", "GPU009"):
        o = next(o for o in doc["outcomes"] if o["rule_id"] == rule)
        assert o["status"] == "not_assessed" and "3 of the 8" in o["reason"], o
    out = runner.invoke(app, ["check", str(tmp_path / "q.txt")]).stdout
    assert "only 3 of 8 GPUs in the inputs" in out
    # all eight listed: the same rules pass
    _, doc = _check(tmp_path, "q8.txt", Q_HEAD + "".join(Q_GPU.format(bus=f"{b:02X}") for b in range(8)))
    assert _status(doc, "GPU007") == "pass"


def test_a_small_archive_cut_short_is_diagnosed_as_far_as_it_decompresses(tmp_path):
    lines = "".join(f"[ {100 + i}.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
                    "fallen off the bus.\n" for i in range(200))
    whole = gzip.compress(lines.encode())
    code, doc = _check(tmp_path, "dmesg.txt.gz", whole[: len(whole) // 2])
    assert code == 2  # the input was cut: said on stderr, and the report still has what was read
    assert any(f["rule_id"] == "LOG001" and f["data"]["xid"] == 79 for f in doc["findings"])


def test_arch_list_check_uses_the_model_name_when_the_compute_capability_is_not_in_the_text(tmp_path):
    """collect_env lists GPUs by name only: an RTX 5090 (cc 12.0, from the GPU table) is not in the cu124 wheel's
    arch list (sm_50..sm_90), so TRC004 fails instead of 'not assessed'."""
    ce = (CE_ROCM.replace("2.3.0+rocm6.0", "2.6.0+cu124").replace("CUDA used to build PyTorch: N/A",
                                                                 "CUDA used to build PyTorch: 12.4")
          .replace("ROCM used to build PyTorch: 6.0.32830-d62f6a171", "ROCM used to build PyTorch: N/A")
          .replace("Is CUDA available: False", "Is CUDA available: True")
          .replace("GPU models and configuration: Could not collect",
                   "GPU models and configuration: \nGPU 0: NVIDIA GeForce RTX 5090\nGPU 1: NVIDIA GeForce RTX 5090\n")
          .replace("Nvidia driver version: 535.161.08", "Nvidia driver version: 570.86.16")
          .replace("HIP runtime version: 6.0.32830", "HIP runtime version: N/A"))
    code, doc = _check(tmp_path, "ce.txt", ce)
    trc4 = [f for f in doc["findings"] if f["rule_id"] == "TRC004"]
    assert code == 1 and len(trc4) == 2 and "from the model name" in trc4[0]["evidence"][0]
    # an H100 is in the cu124 list: passes
    code, doc = _check(tmp_path, "ce2.txt", ce.replace("GeForce RTX 5090", "H100 80GB HBM3"))
    assert _status(doc, "TRC004") == "pass"


def test_the_wheel_offered_for_an_old_driver_has_kernels_for_the_gpus():
    """suggest_variant skips wheels without kernels for the GPUs: on driver 450.51 (below the 11.x minor-version
    minimum) the only wheel that runs is cu102, which has no sm_80, so none is offered for an A100."""
    from gpudoctor.compat.tables import suggest_variant

    assert suggest_variant("450.51.06", None, ())[1] == "cu102"
    assert suggest_variant("450.51.06", None, ("8.0",)) is None
    from gpudoctor.compat.tables import variant_cuda
    from gpudoctor.compat.versions import vtuple

    _, variant, _ = suggest_variant("470.82.01", None, ("9.0",))
    assert vtuple(variant_cuda(variant)) >= (11, 8)  # an H100 needs a wheel with sm_90 kernels (CUDA 11.8+)


def test_a_cuda_build_that_sees_cuda_is_not_flagged_without_gpu_facts(tmp_path):
    """The look-alike of the CUDA-unavailable warning: is_available() True and no nvidia-smi facts is not a finding;
    the GPU comparison stays not assessed."""
    ce = (CE_ROCM.replace("2.3.0+rocm6.0", "2.5.1+cu124").replace("CUDA used to build PyTorch: N/A",
                                                                 "CUDA used to build PyTorch: 12.4")
          .replace("ROCM used to build PyTorch: 6.0.32830-d62f6a171", "ROCM used to build PyTorch: N/A")
          .replace("Is CUDA available: False", "Is CUDA available: True")
          .replace("Nvidia driver version: 535.161.08", "Nvidia driver version: Could not collect")
          .replace("HIP runtime version: 6.0.32830", "HIP runtime version: N/A"))
    _, doc = _check(tmp_path, "ce.txt", ce)
    assert not [f for f in doc["findings"] if f["rule_id"] == "TRC005"]
    assert _status(doc, "TRC005") == "not_assessed"


def test_a_cut_archive_of_nvidia_smi_q_is_not_a_missing_driver(tmp_path):
    """The GPU block the cut ran into is dropped whole (its counters would be under-counted), the header still says
    the driver runs: DRV001 passes, the GPUs are unknown, nothing says 'install the driver'."""
    import lzma

    text = (Path(__file__).parent / "fixtures" / "h200-text" / "nvidia-smi-q.txt").read_text()
    blob = lzma.compress(text.encode())
    code, doc = _check(tmp_path, "q.txt.xz", blob[: len(blob) * 2 // 3])
    assert code == 2 and _status(doc, "DRV001") == "pass"
    assert _status(doc, "GPU004") == "not_assessed"


def test_an_old_torch_on_a_newer_gpu_fails_without_an_arch_list(tmp_path):
    """collect_env prints no arch list and torch 1.13 is not in the wheel table, but CUDA 11.7 cannot target sm_90
    at all: TRC004 fails the H100s (as cuda-version-check does), one finding for the eight."""
    text = (Path(__file__).parent / "fixtures" / "collect-env-1.13-cu117-h100.txt").read_text()
    code, doc = _check(tmp_path, "ce.txt", text)
    found = [f for f in doc["findings"] if f["rule_id"] == "TRC004"]
    assert code == 1 and len(found) == 1 and "cu118" in found[0]["remedy"]


def test_a_cpu_wheel_is_fixed_by_swapping_the_variant_not_the_release(tmp_path):
    """torch 2.2.0+cpu with torchvision 0.17.0 on an R535 host: the fix keeps both versions and picks the CUDA
    variant the driver runs natively, instead of a jump of twelve releases."""
    text = (Path(__file__).parent / "fixtures" / "collect-env-2.2-cpu-wheel-a6000.txt").read_text()
    _, doc = _check(tmp_path, "ce.txt", text)
    f = next(f for f in doc["findings"] if f["rule_id"] == "TRC002")
    assert f["remedy"].startswith("pip install torch==2.2.0 torchvision==0.17.0 --index-url") and "cu12" in f["remedy"]
