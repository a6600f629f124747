"""The confirmation workers' wire protocol, shared by the workers (target interpreter) and gpudoctor's process.

Standard library only, as :mod:`gpudoctor.confirm.worker` and :mod:`gpudoctor.confirm.gpuload`: the target
interpreter may lack pydantic. Every message is a JSON object checked with
:func:`gpudoctor.facts.protocol.check_message` against one TypedDict below: a field not declared here (a
misspelling such as ``timout_s``) is a :class:`~gpudoctor.facts.protocol.ProtocolError` on the side that
writes it and on the side that reads it, never a silently ignored key.

Files of a confirmation run (``RUNDIR``; times in seconds, sizes in bytes):
  - ``spec.json`` (:class:`Spec`): the plan, written by :mod:`gpudoctor.confirm.runner`, read by the launcher;
  - ``state-rank{r}.json`` (:class:`RankState`): a rank's current phase;
  - ``result-rank{r}.json`` (:class:`RankResult`): a rank's raw measurements;
  - ``result.json`` (:class:`LaunchResult`): how the launcher saw the run end.
The GPU load worker (self-test, burn-in) prints one :data:`LOAD_LINES` object per line, keyed by ``t``.
"""
from __future__ import annotations

import json
from typing import Any, TypedDict

from gpudoctor.facts.protocol import ProtocolError, check_message


# --------------------------------------------------------------------------------------------------
# spec.json: parent -> launcher -> ranks
class AllreduceCfg(TypedDict):
    sizes: list[int]
    dtypes: list[str]  #: torch dtype names (bfloat16, float16, float32)
    warmup: int
    iters: int


class CopyCfg(TypedDict):
    size_bytes: int
    warmup: int
    iters: int


class DdpCfgBase(TypedDict):
    model: str  #: builtin, hf or tiny
    config: dict[str, int]  #: plan.MODELS entry
    batch: Any  #: an int or "auto"
    seq: int
    warmup: int
    steps: int
    scaling: str  #: weak or strong
    baseline: bool
    lr: float


class DdpCfg(DdpCfgBase, total=False):
    batch_given: bool


class SpecBase(TypedDict):
    version: int
    device: str  #: cuda or cpu
    backend: str  #: nccl or gloo
    nproc: int  #: 0 = one rank per GPU the target torch sees
    tasks: list[str]
    timeout_s: float
    start_method: str
    allreduce: AllreduceCfg
    copy: CopyCfg
    ddp: DdpCfg


class Spec(SpecBase, total=False):
    deadline_unix: float  #: set by the runner at launch (time.time() + timeout_s)
    pg_timeout_s: float  #: process-group timeout; the launcher's default is timeout_s + 60
    rundir: str  #: set by the launcher for the ranks
    port: int  #: set by the launcher for the ranks


# --------------------------------------------------------------------------------------------------
# state-rank{r}.json
class RankStateBase(TypedDict):
    rank: int
    pid: int
    phase: str
    label: str
    step: int
    total: int
    joined: bool
    t: float  #: time.time() of the write


class RankState(RankStateBase, total=False):
    size_bytes: int  #: all-reduce phase: the size being reduced
    dtype: str
    failed_phase: str  #: error phase
    error: str
    traceback: list[str]


# --------------------------------------------------------------------------------------------------
# result-rank{r}.json
class DeviceInfo(TypedDict, total=False):
    index: int
    name: str
    capability: str
    total_memory_bytes: int
    uuid: str
    pci_bus_id: str


class CopyOut(TypedDict):
    size_bytes: int
    h2d_s: list[float]
    d2h_s: list[float]


class AllreduceEntry(TypedDict, total=False):
    dtype: str
    size_bytes: int
    iters: int
    times_s: list[float]
    correct: bool
    max_abs_error: float
    tolerance: float
    error: str


class StepsOut(TypedDict, total=False):
    window_step_s: Any  #: seconds per step over one window of steps (None where not measured)
    forward_s: list[float]
    backward_s: list[float]
    optimizer_s: list[float]
    step_s: list[float]
    losses: list[float]
    batch: int  #: the baseline's batch


class DdpOut(TypedDict, total=False):
    model: str
    params: int
    grad_bytes: int
    precision: str
    optimizer: str
    per_rank_batch: int
    global_batch: int
    seq: int
    warmup: int
    steps: int
    scaling: str
    batch_choice: str
    ddp: StepsOut
    params_max_abs_diff: float
    grad_allreduce_s: list[float]
    nosync: StepsOut
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    baseline: StepsOut


class RankResultBase(TypedDict):
    rank: int
    pid: int


class RankResult(RankResultBase, total=False):
    device: DeviceInfo
    cpu_threads: int
    copy: CopyOut
    allreduce: list[AllreduceEntry]
    ddp: DdpOut
    peak_rss_bytes: int


# --------------------------------------------------------------------------------------------------
# result.json
class Versions(TypedDict, total=False):
    python: str
    interpreter: str
    torch: str
    cuda: str
    nccl: str


class LaunchResultBase(TypedDict):
    status: str  #: ok, failed, hung or error


class LaunchResult(LaunchResultBase, total=False):
    message: str  #: status error: why the run could not start
    versions: Versions
    first_failed: int
    exitcodes: list[Any]
    world_size: int
    killed: list[int]
    pids: list[int]
    port: int
    elapsed_s: float
    traceback: str


# --------------------------------------------------------------------------------------------------
# GPU load worker lines (gpudoctor.confirm.gpuload), one JSON object per line
class GpuStatic(TypedDict, total=False):
    max_sm_mhz: int
    power_limit_w: float
    slowdown_temp_c: int
    shutdown_temp_c: int


class _PerGpu(TypedDict, total=False):
    t: str  #: the line's type (a key of LOAD_LINES)
    i: int  #: the torch device index


class _Timed(_PerGpu, total=False):
    s: float  #: seconds since the worker started


class GpuLine(_PerGpu, total=False):  #: "gpu": one GPU's identity and static NVML figures
    name: str
    uuid: str
    pci_bus_id: str
    capability: str
    gemm_dtype: str
    gemm_n: int
    static: GpuStatic
    nvml: bool


class RoundLine(_Timed, total=False):  #: "round": one timed group of calls
    kind: str  #: gemm (value in TFLOP/s) or copy (GB/s)
    value: float


class SampleLine(_Timed, total=False):  #: "sample": one NVML sample
    sm_mhz: int
    power_w: float
    temp_c: int
    reasons: list[str]
    util: int  #: %
    others: list[Any]  #: other processes on the GPU: {"pid", "used_mib", "name"}


class Remap(TypedDict, total=False):
    correctable: int
    uncorrectable: int
    pending: bool
    failure: bool


class CountersLine(_PerGpu, total=False):  #: "counters": error counters before and after the load
    when: str  #: before or after
    ecc: dict[str, int]  #: corrected / uncorrected (volatile)
    remap: Remap
    nvlink: dict[str, int]  #: error counters summed over links


class MarkLine(TypedDict, total=False):
    t: str  #: "mark"
    what: str  #: "timed": the rounds after it are the measured ones
    s: float


class ErrorLine(TypedDict, total=False):
    t: str  #: "error"
    i: Any  #: GPU index, or None for the whole worker
    error: str


class DoneLine(TypedDict, total=False):
    t: str  #: "done"
    seconds: float
    interrupted: bool


LOAD_LINES: dict[str, Any] = {"gpu": GpuLine, "round": RoundLine, "sample": SampleLine, "counters": CountersLine,
                              "mark": MarkLine, "error": ErrorLine, "done": DoneLine}


def check_load_line(obj: Any) -> dict[str, Any]:
    """``obj`` when it is a GPU load worker line of a known ``t`` with declared fields only; ProtocolError else."""
    kind = obj.get("t") if isinstance(obj, dict) else None
    if kind not in LOAD_LINES:
        raise ProtocolError(f"GPU load worker line of unknown type {kind!r}")
    return check_message(LOAD_LINES[kind], obj, f"{kind} line")


def parse_load_line(raw: str) -> dict[str, Any] | None:
    """One line of the GPU load worker's stdout: the checked object, or None for anything that is not a JSON
    object (a warning torch printed). An object outside the protocol becomes an ``error`` line of the whole
    worker (``i`` None) naming the field, so the run reports it as failed instead of dropping the field."""
    raw = raw.strip()
    if not raw.startswith("{"):
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict) or "t" not in obj:
        return None
    try:
        return check_load_line(obj)
    except ProtocolError as exc:
        return {"t": "error", "i": None, "error": f"protocol error (a gpudoctor bug): {exc}"}


__all__ = ["ProtocolError", "check_message", "check_load_line", "parse_load_line", "Spec", "RankState",
           "RankResult", "LaunchResult", "LOAD_LINES"]
