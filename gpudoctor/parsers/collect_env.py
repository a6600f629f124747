"""Parse ``python -m torch.utils.collect_env`` output (torch 1.1 to 2.x layouts, and vLLM's sectioned
variant with padded "Key   : value" lines) into facts. Pure: text in, dict / facts out; no I/O.

``parse_collect_env(text)`` returns a dict with the keys found (absent = not in the text):
torch_version, torch_cuda ("CUDA used to build PyTorch"), rocm, debug_build, cuda_available (bool),
nvcc_version ("CUDA runtime version" = the system nvcc that collect_env ran, not torch's runtime),
driver_version, gpus (list of names, in order), cudnn (a single version) or cudnn_candidates (paths of
"Probably one of the following"; system libraries, never the wheel's), python_version, os,
cuda_module_loading, pip / conda ({package: version}), env ({NAME: value} from vLLM's
"Environment Variables" section), plus the message facts of :mod:`gpudoctor.parsers.torch_messages`
found in embedded warnings (driver_cuda, cuda_error, ...).

``to_facts(parsed)`` turns that dict into (TorchFacts, NvmlFacts) for the rules. Another parser for
text dumps (``gpudoctor check`` on pasted output) may reuse or absorb this module.
"""
from __future__ import annotations

import re
from typing import Optional

from gpudoctor.facts.model import GpuFacts, NvmlFacts, TorchFacts
from gpudoctor.parsers.torch_messages import parse_messages

_KV = re.compile(r"^(?P<k>[A-Za-z][A-Za-z0-9 _./()-]*?)\s*:\s?(?P<v>.*)$")
_GPU = re.compile(r"^GPU (\d+): (.+?)\s*(?:\(UUID: [^)]*\))?$")
_PKG = re.compile(r"^\[(pip3?|conda)\]\s+(\S+?)(?:==|\s+)(\S+)")
_ENV = re.compile(r"^([A-Z][A-Z0-9_]+)=(.*)$")

KEYS = {
    "PyTorch version": "torch_version",
    "Is debug build": "debug_build",
    "CUDA used to build PyTorch": "torch_cuda",
    "ROCM used to build PyTorch": "rocm",
    "OS": "os",
    "Python version": "python_version",
    "Is CUDA available": "cuda_available",
    "CUDA runtime version": "nvcc_version",
    "CUDA_MODULE_LOADING set to": "cuda_module_loading",
    "Nvidia driver version": "driver_version",
    "cuDNN version": "cudnn",
}
_NONE = {"", "N/A", "Could not collect", "None"}


def _bool(v: str) -> Optional[bool]:
    v = v.strip().lower()
    return True if v in ("true", "yes") else False if v in ("false", "no") else None


def parse_collect_env(text: str) -> dict:
    """Facts from collect_env output (see the module docstring). Never raises on odd input."""
    out: dict = {}
    lines = text.replace("\r\n", "\n").split("\n")
    section = None
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        i += 1
        stripped = line.strip()
        if stripped.startswith("=====") and i < len(lines):
            # vLLM layout: ===== / title / =====
            title = lines[i].strip()
            if i + 1 < len(lines) and lines[i + 1].strip().startswith("====="):
                section = title
                i += 2
                continue
        pk = _PKG.match(stripped)
        if stripped.endswith("Could not collect") and stripped.startswith("["):
            continue
        if pk and not stripped.endswith("Could not collect"):
            bucket = "conda" if pk.group(1) == "conda" else "pip"
            out.setdefault(bucket, {})[pk.group(2).lower()] = pk.group(3)
            continue
        if section == "Environment Variables":
            ev = _ENV.match(stripped)
            if ev:
                out.setdefault("env", {})[ev.group(1)] = ev.group(2)
            continue
        g = _GPU.match(stripped)
        if g and "gpus" in out:
            out["gpus"].append(g.group(2))
            continue
        kv = _KV.match(line)
        if not kv:
            continue
        key, val = kv.group("k").strip(), kv.group("v").strip()
        name = KEYS.get(key)
        if name is None and key == "GPU models and configuration":
            out["gpus"] = []
            g = _GPU.match(val)
            if g:
                out["gpus"].append(g.group(2))
            continue
        if name is None:
            continue
        if name == "cudnn" and val.startswith("Probably one of the following"):
            cands = []
            while i < len(lines) and lines[i].strip().startswith("/"):
                cands.append(lines[i].strip())
                i += 1
            out["cudnn_candidates"] = cands
            continue
        if name in ("cuda_available", "debug_build"):
            b = _bool(val)
            if b is not None:
                out[name] = b
            continue
        if val in _NONE or (name == "cuda_module_loading" and not val):
            continue
        out.setdefault(name, val)
    if "gpus" in out and not out["gpus"]:
        del out["gpus"]
    for k, v in parse_messages(text).items():
        out.setdefault(k, v)
    return out


def _cudnn_int(v: Optional[str]) -> Optional[int]:
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", v or "")
    if not m:
        return None
    a, b, c = (int(x) for x in m.groups())
    return a * 10000 + b * 100 + c if a >= 9 else a * 1000 + b * 100 + c


def to_facts(parsed: dict, source: str = "parsed from pasted text") -> tuple[Optional[TorchFacts], Optional[NvmlFacts]]:
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
        nv = NvmlFacts(source=f"{source} (driver line / CUDA warning; compute capability from the text or gpudoctor's GPU table)",
                       available=True, driver_version=parsed.get("driver_version"),
                       cuda_driver_version=parsed.get("driver_cuda"), gpu_count=len(gpus), gpus=gpus)
    return torch, nv
