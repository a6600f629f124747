"""Facts from well-known PyTorch / CUDA error and warning messages (pure: text -> dict).

Recognized (each key appears only when its message is in the text):
- ``driver_cuda``: "The NVIDIA driver on your system is too old (found version 11040)" -> "11.4"
  (cudaDriverGetVersion encoding 1000*major + 10*minor; torch/csrc c10/cuda/CUDAFunctions.cpp)
- ``gpu_name``, ``cc``, ``arch_list``: "<GPU> with CUDA capability sm_61 is not compatible with the current
  PyTorch installation. The current PyTorch install supports CUDA capabilities sm_50 sm_70 ..."; without it, the
  name and capability of "Found GPU0 <GPU> which is of cuda capability 6.0" (torch/cuda/__init__.py)
- ``nvcc_version``, ``torch_cuda``: torch.utils.cpp_extension "The detected CUDA version (10.1) mismatches
  the version that was used to compile PyTorch (11.3)"
- ``cuda_error``: the first CUDA initialisation error line (error 804 forward compatibility, driver too
  old, ...); ``cuda_error_code``: its CUDA error number when one is given ("Error 804: ...")
- ``torchvision_error``: "operator torchvision::nms does not exist"
"""
from __future__ import annotations

import re

from gpudoctor.facts.model import GpuFacts, NvmlFacts, TorchFacts

_FOUND = re.compile(r"driver on your system is too old \(found version (\d+)\)")
_ARCH = re.compile(
    r"^(?P<gpu>.+?) with CUDA capability sm_(?P<sm>\d+) is not compatible with the current PyTorch"
    r" installation\.?\s*(?:\n\s*)?The current PyTorch install supports CUDA capabilities"
    r"(?P<list>(?:\s+(?:sm|compute)_\d+[af]?)+)",
    re.M,
)
# torch 2.8+ _check_capability: "Found GPU%d %s which is of cuda capability %d.%d.\n Minimum and Maximum cuda
# capability supported by this version of PyTorch is\n (%d.%d) - (%d.%d)" (older: "... minimum cuda capability ... is
# %d.%d", torch 1.x-2.7 old_gpu_warn)
_FOUND_GPU = re.compile(r"Found GPU(?P<i>\d+) (?P<gpu>[^\n]+?) which is of cuda capability (?P<cc>\d+\.\d+)")
_NVCC = re.compile(
    r"The detected CUDA version \(([\d.]+)\) mismatches the version that was used to compile\s+PyTorch \(([\d.]+)\)"
)
_ERRNUM = re.compile(r"\bError (\d{3}): ([^\n]+)")
_CUDA_ERR_LINE = re.compile(
    r"^.*(?:CUDA initialization: |Unexpected error from cudaGetDeviceCount\(\)|RuntimeError: .*CUDA).*$", re.M
)
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
    m = _FOUND_GPU.search(text) if "gpu_name" not in out else None
    if m:
        out["gpu_name"], out["cc"] = m.group("gpu").strip(), m.group("cc")
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


def _cudnn_int(v: str | None) -> int | None:
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", v or "")
    if not m:
        return None
    a, b, c = (int(x) for x in m.groups())
    return a * 10000 + b * 100 + c if a >= 9 else a * 1000 + b * 100 + c


def to_facts(parsed: dict, source: str = "parsed from pasted text") -> tuple[TorchFacts | None, NvmlFacts | None]:
    """(TorchFacts, NvmlFacts) from :func:`parse_collect_env` / ``parse_messages`` output; a part is
    None when the text says nothing about it. A GPU's compute capability comes from the text when it
    gives one (arch warning), else from gpudoctor's GPU table (``rules/compat_gpus.toml``)."""
    from gpudoctor.compat.tables import find_gpu

    torch = None
    if any(k in parsed for k in ("torch_version", "torch_cuda", "arch_list", "nvcc_version", "cuda_error",
                                 "torchvision_error")):
        pip = parsed.get("pip", {})
        torch = TorchFacts(
            source=f"{source} (collect_env / error messages)", interpreter="(from text)",
            installed=True, version=parsed.get("torch_version") or pip.get("torch"),
            cuda=parsed.get("torch_cuda"), cuda_available=parsed.get("cuda_available"),
            cuda_error=parsed.get("cuda_error"), arch_list=list(parsed.get("arch_list", [])),
            cudnn_version=_cudnn_int(parsed.get("cudnn")), nvcc_version=parsed.get("nvcc_version"),
            torchvision_version=pip.get("torchvision"), torchaudio_version=pip.get("torchaudio"),
            torchvision_error=parsed.get("torchvision_error"))
    nv = None
    names = list(parsed.get("gpus", []))
    if parsed.get("gpu_name") and not names:
        names = [parsed["gpu_name"]]
    if parsed.get("driver_version") or parsed.get("driver_cuda") or names:
        gpus = []
        for idx, name in enumerate(names):
            cc = parsed.get("cc") if parsed.get("gpu_name") == name else None
            if cc is None:
                model = find_gpu(name)
                cc = model.cc if model else None
            gpus.append(GpuFacts(index=idx, name=name, compute_capability=cc))
        nv = NvmlFacts(
            source=f"{source} (driver line / CUDA warning; compute capability from the text or gpudoctor's GPU table)",
            available=True,
            driver_version=parsed.get("driver_version"),
            cuda_driver_version=parsed.get("driver_cuda"),
            gpu_count=len(gpus),
            gpus=gpus,
        )
    return torch, nv


def facts_from_texts(texts) -> tuple[TorchFacts | None, NvmlFacts | None]:
    """(TorchFacts, NvmlFacts) from pasted texts: collect_env outputs (parsed by the one collect_env
    parser, :mod:`gpudoctor.parsers.collect_env`) completed by the facts stated in error messages
    (CUDA init warnings, arch-list errors, nvcc/torch CUDA mismatch). GPUs without a compute
    capability get it from gpudoctor's GPU table."""
    from gpudoctor.compat.tables import find_gpu
    from gpudoctor.parsers import ParseError
    from gpudoctor.parsers.collect_env import parse_collect_env

    torch = nv = None
    msgs: dict = {}
    for t in texts:
        try:
            ce = parse_collect_env(t)
        except ParseError:
            ce = None
        if ce is not None:
            torch = torch or ce.torch
            nv = nv or ce.nvml
        for k, v in parse_messages(t).items():
            msgs.setdefault(k, v)
    mt, mn = to_facts(msgs)
    if torch is None:
        torch = mt
    elif mt is not None:
        for f in ("cuda", "arch_list", "cuda_error", "torchvision_error", "nvcc_version"):
            if not getattr(torch, f) and getattr(mt, f):
                setattr(torch, f, getattr(mt, f))
    if nv is None:
        nv = mn
    elif mn is not None:
        if not nv.cuda_driver_version and mn.cuda_driver_version:
            nv.cuda_driver_version = mn.cuda_driver_version
        if not nv.gpus and mn.gpus:
            nv.gpus, nv.gpu_count = mn.gpus, len(mn.gpus)
    for g in (nv.gpus if nv else []):
        if g.compute_capability is None and g.name:
            model = find_gpu(g.name)
            if model:
                g.compute_capability = model.cc
    return torch, nv
