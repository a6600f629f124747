"""Facts from well-known PyTorch / CUDA error and warning messages (pure: text -> dict).

Recognized (each key appears only when its message is in the text):
- ``driver_cuda``: "The NVIDIA driver on your system is too old (found version 11040)" -> "11.4"
  (cudaDriverGetVersion encoding 1000*major + 10*minor; torch/csrc c10/cuda/CUDAFunctions.cpp)
- ``gpu_name``, ``cc``, ``arch_list``: "<GPU> with CUDA capability sm_61 is not compatible with the current
  PyTorch installation. The current PyTorch install supports CUDA capabilities sm_50 sm_70 ..."
- ``nvcc_version``, ``torch_cuda``: torch.utils.cpp_extension "The detected CUDA version (10.1) mismatches
  the version that was used to compile PyTorch (11.3)"
- ``cuda_error``: the first CUDA initialisation error line (error 804 forward compatibility, driver too
  old, ...); ``cuda_error_code``: its CUDA error number when one is given ("Error 804: ...")
- ``torchvision_error``: "operator torchvision::nms does not exist"
"""
from __future__ import annotations

import re

_FOUND = re.compile(r"driver on your system is too old \(found version (\d+)\)")
_ARCH = re.compile(r"^(?P<gpu>.+?) with CUDA capability sm_(?P<sm>\d+) is not compatible with the current PyTorch"
                   r" installation\.?\s*(?:\n\s*)?The current PyTorch install supports CUDA capabilities(?P<list>(?:\s+(?:sm|compute)_\d+[af]?)+)",
                   re.M)
_NVCC = re.compile(r"The detected CUDA version \(([\d.]+)\) mismatches the version that was used to compile\s+PyTorch \(([\d.]+)\)")
_ERRNUM = re.compile(r"\bError (\d{3}): ([^\n]+)")
_CUDA_ERR_LINE = re.compile(r"^.*(?:CUDA initialization: |Unexpected error from cudaGetDeviceCount\(\)|RuntimeError: .*CUDA).*$", re.M)
_TV = re.compile(r"operator torchvision::\w+ does not exist")


def cuda_version_from_int(n: int) -> str:
    """cudaDriverGetVersion-style integer -> 'major.minor' (11040 -> '11.4', 12010 -> '12.1')."""
    return f"{n // 1000}.{(n % 1000) // 10}"


def parse_messages(text: str) -> dict:
    """Facts found in ``text`` (see the module docstring); an empty dict when none is recognized."""
    out: dict = {}
    m = _FOUND.search(text)
    if m:
        out["driver_cuda"] = cuda_version_from_int(int(m.group(1)))
    m = _ARCH.search(text)
    if m:
        sm = m.group("sm")
        out["gpu_name"] = m.group("gpu").strip()
        out["cc"] = f"{int(sm[:-1])}.{sm[-1]}"
        out["arch_list"] = m.group("list").split()
    m = _NVCC.search(text)
    if m:
        out["nvcc_version"], out["torch_cuda"] = m.group(1), m.group(2)
    m = _ERRNUM.search(text)
    if m:
        out["cuda_error_code"] = int(m.group(1))
    m = _CUDA_ERR_LINE.search(text)
    if m:
        out["cuda_error"] = m.group(0).strip()[:2000]
    m = _TV.search(text)
    if m:
        line = next((ln for ln in text.splitlines() if m.group(0) in ln), m.group(0))
        out["torchvision_error"] = line.strip()[:1000]
    return out
