"""What the nvidia-smi parsers share: source labels, compute-mode and P-state readers, the no-driver message."""
from __future__ import annotations

import re

from gpudoctor.facts.model import NvmlFacts
from gpudoctor.parsers._text import na

MIB = 1024 * 1024
SOURCE_TABLE = "nvidia-smi (table)"
SOURCE_Q = "nvidia-smi -q"
SOURCE_XML = "nvidia-smi -q -x"
SOURCE_NVLINK = "nvidia-smi nvlink -s"

COMPUTE_MODES = {"default": "Default", "e. process": "Exclusive_Process", "exclusive_process": "Exclusive_Process",
                 "e. thread": "Exclusive_Thread", "exclusive_thread": "Exclusive_Thread", "prohibited": "Prohibited"}
NO_DRIVER = re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver[^\n]*"
                       r"|No devices were found|Failed to initialize NVML[^\n]*|NVML library version mismatch|"
                       r"Driver/library version mismatch", re.IGNORECASE)


def _compute_mode(v: str | None) -> str | None:
    return None if na(v) else COMPUTE_MODES.get(v.strip().lower(), v.strip())


def _pstate(v: str | None) -> int | None:
    m = re.match(r"^\s*P(\d+)", v or "")
    return int(m.group(1)) if m else None


def _finish(nv: NvmlFacts) -> NvmlFacts:
    if nv.gpus:
        nv.available = True
        nv.gpu_count = len(nv.gpus)
    return nv


