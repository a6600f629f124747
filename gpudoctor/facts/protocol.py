"""The NVML worker's wire protocol: one JSON object per line, shared by the worker and the parent.

Standard library only: the worker (``gpudoctor/probes/nvml_worker.py``, run by path) loads this file by path.
The parent (:func:`gpudoctor.probes.nvml.assemble`) refuses a GPU field not in :data:`GPU_KEYS`, and so does the
worker's ``put``: a misspelled field (``temprature_c``) is an error at the first run, never silently lost.

:func:`check_message` is the generic form, used by the confirmation workers' protocol
(:mod:`gpudoctor.confirm.protocol`): the keys of a JSON object against a TypedDict, nested TypedDicts included.
"""
from __future__ import annotations

import re
import sys
from typing import Any, Literal, TypedDict


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


class PairMsg(TypedDict):
    """``topology`` mode: a fact of GPUs ``a`` < ``b`` (common_ancestor, p2p_read, p2p_write, ...)."""
    t: Literal["pair", "pair_err"]  #: pair_err: ``v`` is the NVML error
    a: int
    b: int
    k: str
    v: Any


class NvlinkMsg(TypedDict):
    """``topology`` mode: a fact of NVLink ``link`` of GPU ``i`` (state, version, remote_type, err_replay, ...)."""
    t: Literal["nvlink"]
    i: int
    link: int
    k: str
    v: Any


class FabricMsg(TypedDict):
    """``fabric`` mode: a field of GPU ``i``'s NVSwitch fabric info (state, status, clique_id, ...)."""
    t: Literal["fabric"]
    i: int
    k: str
    v: Any



#: the GpuFacts fields the worker may send ("gpu" messages); a test keeps it equal to the model's fields
GPU_KEYS = frozenset({
    "clock_event_reasons", "clock_event_reasons_mask", "compute_capability", "compute_mode", "ecc_mode_current",
    "ecc_uncorrected_aggregate", "ecc_uncorrected_volatile", "index", "memory_total_bytes", "memory_used_bytes",
    "mig_mode_current", "mig_mode_pending", "name", "numa_node", "nvlinks", "pci_bus_id", "pcie_gen_current",
    "pcie_gen_gpu_max", "pcie_gen_max", "pcie_replay_counter", "pcie_width_current", "pcie_width_max",
    "persistence_mode", "power_default_limit_w", "power_draw_w", "power_limit_w", "processes", "pstate",
    "remapped_rows_correctable", "remapped_rows_failure", "remapped_rows_pending", "remapped_rows_uncorrectable",
    "retired_pages_dbe", "retired_pages_pending", "retired_pages_sbe",
    "temperature_c", "temperature_shutdown_c", "temperature_slowdown_c", "utilization_gpu_pct", "uuid",
})


class ProtocolError(ValueError):
    """A worker message outside the protocol (a gpudoctor bug: the probe fails with this message)."""


def check_gpu_key(key: str) -> str:
    """``key`` when it is a GPU field of the protocol; ProtocolError otherwise."""
    if key not in GPU_KEYS:
        raise ProtocolError(f"unknown GPU field {key!r} from the NVML worker")
    return key


_LIST_OF = re.compile(r"^(?:list|List)\[(\w+)\]$")


def _typeddict(name: Any, namespace: dict[str, Any]) -> Any:
    """The TypedDict an annotation names (a class or, under postponed annotations, its name), else None."""
    cls = namespace.get(name) if isinstance(name, str) else name
    return cls if isinstance(cls, type) and issubclass(cls, dict) and hasattr(cls, "__total__") else None


def check_message(cls: Any, obj: Any, where: str = "") -> Any:
    """``obj`` when it is a JSON object whose keys are all declared by the TypedDict ``cls`` and hold every key
    ``cls`` requires, recursively for fields annotated with another TypedDict (or a ``list[...]`` of one) of the
    same module; ProtocolError naming the first unknown or missing key otherwise. Values are not type-checked."""
    where = where or cls.__name__
    if not isinstance(obj, dict):
        raise ProtocolError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    fields: dict[str, Any] = dict(cls.__annotations__)  # a TypedDict's annotations include its bases' fields
    unknown = sorted(set(obj) - set(fields))
    if unknown:
        raise ProtocolError(f"{where}: unknown field {unknown[0]!r} (a misspelling? fields: {', '.join(fields)})")
    missing = sorted(set(getattr(cls, "__required_keys__", ())) - set(obj))
    if missing:
        raise ProtocolError(f"{where}: missing field {missing[0]!r}")
    namespace = vars(sys.modules[cls.__module__])
    for key, ann in fields.items():
        ann = getattr(ann, "__forward_arg__", ann)  # TypedDict keeps a postponed annotation as a ForwardRef
        if obj.get(key) is None:
            continue
        m = _LIST_OF.match(ann) if isinstance(ann, str) else None
        inner = _typeddict(m.group(1) if m else ann, namespace)
        if inner is None:
            continue
        if m and not isinstance(obj[key], list):
            raise ProtocolError(f"{where}.{key}: expected a JSON list, got {type(obj[key]).__name__}")
        for n, item in enumerate(obj[key] if m else [obj[key]]):
            check_message(inner, item, f"{where}.{key}" + (f"[{n}]" if m else ""))
    return obj
