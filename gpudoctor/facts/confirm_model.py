"""Confirmation-run facts: short real workloads whose results become facts (re-exported by
:mod:`gpudoctor.facts.model`). Times are seconds, bandwidths GB/s (1e9 bytes/s)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpudoctor.facts._base import _Model
from gpudoctor.facts.perf import PerfBaseline, SelfTestFacts


# --- confirmation runs (issue 9): short real workloads whose results become facts -----------------
class Stat(_Model):
    """Median and spread of repeated measurements (same unit as the field holding it)."""

    median: float
    min: float
    max: float
    p25: float
    p75: float
    rel_spread: float = Field(description="(max - min) / median")
    n: int
    mean: float | None = Field(None, description="arithmetic mean (what a loop timed end to end gives)")


class ConfirmDevice(_Model):
    rank: int
    index: int = Field(description="torch device index (after CUDA_VISIBLE_DEVICES)")
    name: str | None = None
    capability: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    total_memory_bytes: int | None = None


class AllReduceResult(_Model):
    """One message size and dtype of the all-reduce sweep (nccl-tests definitions; GB/s = 1e9 B/s)."""

    dtype: str
    size_bytes: int
    iters: int = 0
    time_s: Stat | None = Field(None, description="seconds per all-reduce, rank 0, device-event timing on GPU")
    algbw_gbs: float | None = Field(None, description="size / median time, GB/s")
    busbw_gbs: float | None = Field(None, description="algbw * 2(n-1)/n, GB/s")
    correct: bool | None = Field(None, description="every element of the reduced tensor right on every rank")
    max_abs_error: float | None = None
    error: str | None = None


class CopyResult(_Model):
    """Pinned host<->device copy bandwidth of one GPU, measured alone (GB/s = 1e9 B/s)."""

    rank: int
    device_index: int
    uuid: str | None = None
    pci_bus_id: str | None = None
    size_bytes: int
    h2d_gbs: Stat
    d2h_gbs: Stat


class StepTimes(_Model):
    """Per-step times of a training step, seconds: device events on GPU, wall clock on CPU (checklist C3)."""

    step_s: Stat
    forward_s: Stat
    backward_s: Stat = Field(description="includes DDP's gradient all-reduce overlapped with it")
    optimizer_s: Stat
    batch: int = Field(description="samples per step on one rank")
    window_step_s: float | None = Field(
        None, description="timed window (first step's start to last step's end) / steps, s: includes the gaps "
                          "between steps, as a loop timed end to end; throughput follows from it")


class RankMemory(_Model):
    rank: int
    peak_allocated_bytes: int | None = Field(None, description="torch.cuda.max_memory_allocated (checklist C4)")
    peak_reserved_bytes: int | None = None
    peak_rss_bytes: int | None = Field(None, description="CPU path: peak resident set size of the rank")


class DdpResult(_Model):
    """The DDP BERT smoke step and its scaling efficiency (checklist C2-C5, C8)."""

    model: str
    params: int
    grad_bytes: int = Field(description="fp32 gradient bytes all-reduced per step")
    precision: str
    optimizer: str
    world_size: int
    per_rank_batch: int
    global_batch: int
    batch_choice: str | None = Field(None, description="how the batch was chosen: 'given (--batch)', the tiny "
                                        "model's default, or 'auto: ...' with its memory estimate (GPU default)")
    seq_len: int
    warmup_steps: int
    timed_steps: int
    scaling: Literal["weak", "strong"] = Field(description="weak: per-GPU batch fixed; strong: global batch fixed")
    step: StepTimes = Field(description="world size n, rank 0")
    nosync_step_s: Stat | None = Field(None, description="step time under DDP no_sync (no gradient all-reduce)")
    single: StepTimes | None = Field(None, description="T1: the same model and settings on one device, no DDP")
    efficiency: float | None = Field(None, description="E = (throughput_n / throughput_1) / n from median times")
    efficiency_low: float | None = Field(None, description="E from the slow quartiles (p75 of Tn, p25 of T1)")
    efficiency_high: float | None = None
    grad_allreduce_s: Stat | None = Field(None, description="one all-reduce of the gradient size, fp32")
    samples_per_s: float | None = Field(None, description="global samples per second at world size n")
    loss_first: float | None = None
    loss_last: float | None = None
    loss_finite: bool = True
    params_max_abs_diff: float | None = Field(None, description="max |p_i - p_j| over ranks after the steps")
    memory: list[RankMemory] = Field(default_factory=list)


class RankStatus(_Model):
    """How one rank of a run ended, with its last phase and log tails (checklist C6)."""

    rank: int
    exitcode: int | None = None
    phase: str | None = None
    label: str | None = Field(None, description="what the rank was doing last, e.g. 'all-reduce bfloat16 64 MiB'")
    joined: bool = Field(False, description="got through the rendezvous")
    error: str | None = None
    nccl_warnings: list[str] = Field(default_factory=list, description="last 'NCCL WARN' lines of its NCCL log")
    log_tail: list[str] = Field(default_factory=list)


class ConfirmationRun(_Model):
    """One launch of the workers (the main run, or a transport re-run)."""

    name: str
    env: dict[str, str] = Field(default_factory=dict, description="variables set for this run only")
    status: Literal["ok", "failed", "hung", "error", "interrupted"]
    message: str | None = None
    culprit_rank: int | None = None
    seconds: float
    timeout_s: float
    orphans_killed: int = Field(0, description="processes of the run still alive after the launcher ended")
    log_dir: str | None = Field(None, description="this run's per-rank logs (kept when it failed)")
    ranks: list[RankStatus] = Field(default_factory=list)


class ConfirmationFacts(_Model):
    source: str = (
        "gpudoctor confirmation runs: torch.multiprocessing spawn in the target interpreter, 127.0.0.1 rendezvous"
    )
    status: Literal["ok", "failed", "hung", "error", "skipped", "not_applicable", "interrupted"] = Field(
        description="interrupted: Ctrl-C or SIGTERM ended the runs; what the ranks had measured is kept")
    reason: str | None = None
    interpreter: str | None = None
    torch_version: str | None = None
    nccl_version: str | None = None
    backend: str | None = None
    device: str | None = Field(None, description="cuda or cpu")
    world_size: int | None = None
    tasks: list[str] = Field(default_factory=list)
    seconds: float | None = None
    log_dir: str | None = Field(None, description="per-rank logs, kept when a run failed")
    devices: list[ConfirmDevice] = Field(default_factory=list)
    allreduce: list[AllReduceResult] = Field(default_factory=list)
    copies: list[CopyResult] = Field(default_factory=list)
    ddp: DdpResult | None = None
    runs: list[ConfirmationRun] = Field(default_factory=list, description="the main run first, then transport re-runs")
    transport_verdict: Literal["p2p", "shm", "either", "neither"] | None = Field(
        None, description="which NCCL transport the re-runs blame (None: no re-run)")
    selftest: SelfTestFacts | None = Field(None, description="GPU self-test: GEMM and device copies (issue 16)")
    baseline: PerfBaseline | None = Field(None, description="fleet baseline the figures are judged against")
