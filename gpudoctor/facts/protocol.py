"""The NVML worker's wire protocol: one JSON object per line, shared by the worker and the parent.

Standard library only: the worker (``gpudoctor/probes/nvml_worker.py``, run by path) loads this file by path.
The parent (:func:`gpudoctor.probes.nvml.assemble`) refuses a GPU field not in :data:`GPU_KEYS`, and so does the
worker's ``put``: a misspelled field (``temprature_c``) is an error at the first run, never silently lost.
"""
from __future__ import annotations

from typing import Any, Literal, TypedDict, Union


class StepMsg(TypedDict):
    t: Literal["step"]
    name: str  #: the NVML call about to be made (names the culprit if the process dies)


class FailMsg(TypedDict):
    t: Literal["fail"]
    error: str  #: NVML unusable (library missing, init failed)


class SysMsg(TypedDict):
    t: Literal["sys"]
    k: Literal["driver_version", "nvml_version", "cuda_driver_version", "gpu_count"]
    v: Any


class GpuMsg(TypedDict):
    t: Literal["gpu"]
    i: int  #: GPU index
    k: str  #: one of GPU_KEYS
    v: Any


class UnsupportedMsg(TypedDict):
    t: Literal["unsupported"]
    i: int
    k: str  #: the query NVML answered "Not Supported"


class ErrMsg(TypedDict):
    t: Literal["err"]
    i: int
    k: str
    v: str  #: the NVML error, one line


class DoneMsg(TypedDict):
    t: Literal["done"]


NvmlMessage = Union[StepMsg, FailMsg, SysMsg, GpuMsg, UnsupportedMsg, ErrMsg, DoneMsg]  # noqa: UP007 (py3.8 workers)

#: the GpuFacts fields the worker may send ("gpu" messages); a test keeps it equal to the model's fields
GPU_KEYS = frozenset({
    "clock_event_reasons", "clock_event_reasons_mask", "compute_capability", "compute_mode", "ecc_mode_current",
    "ecc_uncorrected_aggregate", "ecc_uncorrected_volatile", "index", "memory_total_bytes", "memory_used_bytes",
    "mig_mode_current", "mig_mode_pending", "name", "numa_node", "nvlinks", "pci_bus_id", "pcie_gen_current",
    "pcie_gen_gpu_max", "pcie_gen_max", "pcie_replay_counter", "pcie_width_current", "pcie_width_max",
    "persistence_mode", "power_default_limit_w", "power_draw_w", "power_limit_w", "processes", "pstate",
    "remapped_rows_correctable", "remapped_rows_failure", "remapped_rows_pending", "remapped_rows_uncorrectable",
    "temperature_c", "temperature_shutdown_c", "temperature_slowdown_c", "utilization_gpu_pct", "uuid",
})


class ProtocolError(ValueError):
    """A worker message outside the protocol (a gpudoctor bug: the probe fails with this message)."""


def check_gpu_key(key: str) -> str:
    """``key`` when it is a GPU field of the protocol; ProtocolError otherwise."""
    if key not in GPU_KEYS:
        raise ProtocolError(f"unknown GPU field {key!r} from the NVML worker")
    return key
