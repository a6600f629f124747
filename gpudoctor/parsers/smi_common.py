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
                       r"Driver/library version mismatch|NVIDIA-SMI couldn't find libnvidia-ml\.so[^\n]*"
                       r"|nvidia-smi: (?:command )?not found", re.IGNORECASE)
#: what nvidia-smi prints *instead of* any table when NVML works but lists no GPU (driver loaded; a container
#: started without --gpus, all GPUs unbound or passed to VMs)
NO_DEVICES = re.compile(r"No devices were found", re.IGNORECASE)
#: nvidia-smi's whole output is one of those messages (optionally after the command line): a diagnosis in itself
#: the whole output when nvidia-smi cannot start; since R535 a version mismatch adds "NVML library version: 550.54"
WHOLE_MESSAGE = re.compile(r"\A(?:\s*[$#][^\n]*\n)?\s*(?:" + NO_DRIVER.pattern + r")[^\n]*"
                           r"(?:\n[ \t]*NVML library version: ?[\d.]+[ \t]*)?\s*\Z", re.IGNORECASE)


def _compute_mode(v: str | None) -> str | None:
    return None if v is None or na(v) else COMPUTE_MODES.get(v.strip().lower(), v.strip())


def _pstate(v: str | None) -> int | None:
    m = re.match(r"^\s*P(\d+)", v or "")
    return int(m.group(1)) if m else None


def _finish(nv: NvmlFacts) -> NvmlFacts:
    if nv.gpus:
        nv.available = True
        nv.gpu_count = len(nv.gpus)
    return nv


