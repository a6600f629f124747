"""From the workers' raw JSON to typed facts: statistics, bandwidths, scaling efficiency, verdicts.

Parent side (gpudoctor's own process): pure functions, no torch, no subprocess. Times are
seconds, bandwidths GB/s (1e9 bytes/s), as in nccl-tests (doc/PERFORMANCE.md).
"""
from __future__ import annotations

import re
import signal
from collections.abc import Iterable, Sequence

from gpudoctor.confirm.collectives import bandwidths, spread
from gpudoctor.facts.confirmation import attribute_loss, transport_verdict  # noqa: F401 (re-exported)
from gpudoctor.facts.model import (
    AllReduceResult,
    ConfirmDevice,
    CopyResult,
    DdpResult,
    RankMemory,
    RankStatus,
    Stat,
    StepTimes,
)

# Errors a rank raises because *another* rank died or hung: symptoms, not causes.
PEER_SYMPTOM = re.compile(r"Connection closed by peer|remote worker|Connection reset|Broken pipe|"
                          r"communicator was aborted|NCCL communicator .*abort|Socket Timeout|"
                          r"Timed out after|wait timeout|Watchdog caught collective operation timeout", re.I)
NCCL_WARN = re.compile(r"NCCL WARN\b")


def _quantile(sorted_vals: Sequence[float], q: float) -> float:
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def stat(values: Iterable[float]) -> Stat | None:
    """Median, min, max, quartiles and relative spread (max-min)/median; None for no values."""
    vals = sorted(float(v) for v in values)
    if not vals:
        return None
    s = spread(vals)
    return Stat(median=s["median"], min=s["min"], max=s["max"], p25=_quantile(vals, 0.25), p75=_quantile(vals, 0.75),
                rel_spread=s["rel_spread"], n=len(vals), mean=sum(vals) / len(vals))


def allreduce_results(raw: list[dict], world_size: int) -> list[AllReduceResult]:
    """Sweep entries -> results with algbw/busbw from the median time (nccl-tests definitions)."""
    out = []
    for e in raw or []:
        st = stat(e.get("times_s") or [])
        algbw = busbw = None
        if st is not None and st.median > 0:
            algbw, busbw = bandwidths(e["size_bytes"], st.median, world_size, "all_reduce")
        out.append(AllReduceResult(dtype=e["dtype"], size_bytes=e["size_bytes"], iters=e.get("iters", 0), time_s=st,
                                   algbw_gbs=algbw, busbw_gbs=busbw, correct=e.get("correct"),
                                   max_abs_error=e.get("max_abs_error"), error=e.get("error")))
    return out


def copy_results(rank_results: dict[int, dict]) -> list[CopyResult]:
    """Per-GPU pinned copy bandwidth, GB/s per timed copy -> Stat."""
    out = []
    for rank in sorted(rank_results):
        r = rank_results[rank]
        c, dev = r.get("copy"), r.get("device") or {}
        if not c:
            continue
        size = c["size_bytes"]
        h2d = stat(size / t / 1e9 for t in c["h2d_s"] if t > 0)
        d2h = stat(size / t / 1e9 for t in c["d2h_s"] if t > 0)
        if h2d is None or d2h is None:
            continue
        out.append(CopyResult(rank=rank, device_index=dev.get("index", rank), uuid=dev.get("uuid"),
                              pci_bus_id=dev.get("pci_bus_id"), size_bytes=size, h2d_gbs=h2d, d2h_gbs=d2h))
    return out


def devices(rank_results: dict[int, dict]) -> list[ConfirmDevice]:
    return [ConfirmDevice(rank=r, **rank_results[r]["device"]) for r in sorted(rank_results)
            if rank_results[r].get("device")]


def step_times(raw: dict, batch: int) -> StepTimes | None:
    parts = {k: stat(raw.get(k) or []) for k in ("step_s", "forward_s", "backward_s", "optimizer_s")}
    if any(v is None for v in parts.values()):
        return None
    return StepTimes(batch=batch, window_step_s=raw.get("window_step_s"),
                     **{k: v for k, v in parts.items() if v is not None})


def efficiency(tn: Stat, t1: Stat, n: int, global_batch: int, batch1: int) -> tuple[float, float, float]:
    """Scaling efficiency E = (throughput_n / throughput_1) / n, throughput = samples per second.

    Weak scaling (per-GPU batch b fixed: global_batch = n*b, batch1 = b) gives E = T1/Tn; strong
    scaling (global batch B fixed: batch1 = B) gives E = T1/(n*Tn) -- the checklist's (T1/Tn)/n
    with T the time for the same work (C2). Returns (E from medians, E low, E high) where low/high
    pair the slow quartile of one side with the fast quartile of the other.
    """
    def e(tn_s: float, t1_s: float) -> float:
        return (global_batch / tn_s) / (batch1 / t1_s) / n

    return e(tn.median, t1.median), e(tn.p75, t1.p25), e(tn.p25, t1.p75)


def ddp_result(rank_results: dict[int, dict], world_size: int) -> DdpResult | None:
    """Rank 0's DDP timings plus every rank's memory; E when a single-device baseline ran."""
    r0 = (rank_results.get(0) or {}).get("ddp")
    if not r0:
        return None
    step = step_times(r0["ddp"], r0["per_rank_batch"])
    if step is None:
        return None
    losses = [x for x in r0["ddp"].get("losses") or []]
    finite = all(isinstance(x, (int, float)) and x == x and abs(x) != float("inf") for x in losses)
    single = None
    eff: tuple[float | None, float | None, float | None] = (None, None, None)
    if r0.get("baseline"):
        single = step_times(r0["baseline"], r0["baseline"]["batch"])
        if single is not None:
            eff = efficiency(step.step_s, single.step_s, world_size, r0["global_batch"], r0["baseline"]["batch"])
    memory = []
    for rank in sorted(rank_results):
        d = rank_results[rank].get("ddp") or {}
        memory.append(RankMemory(rank=rank, peak_allocated_bytes=d.get("peak_allocated_bytes"),
                                 peak_reserved_bytes=d.get("peak_reserved_bytes"),
                                 peak_rss_bytes=rank_results[rank].get("peak_rss_bytes")))
    nosync = stat((r0.get("nosync") or {}).get("step_s") or [])
    return DdpResult(
        model=r0["model"],
        params=r0["params"],
        grad_bytes=r0["grad_bytes"],
        precision=r0["precision"],
        optimizer=r0["optimizer"],
        world_size=world_size,
        per_rank_batch=r0["per_rank_batch"],
        global_batch=r0["global_batch"],
        batch_choice=r0.get("batch_choice"),
        seq_len=r0["seq"],
        warmup_steps=r0["warmup"],
        timed_steps=r0["steps"],
        scaling=r0["scaling"],
        step=step,
        nosync_step_s=nosync,
        single=single,
        efficiency=eff[0],
        efficiency_low=eff[1],
        efficiency_high=eff[2],
        grad_allreduce_s=stat(r0.get("grad_allreduce_s") or []),
        samples_per_s=r0["global_batch"] / step.step_s.median if step.step_s.median > 0 else None,
        loss_first=losses[0] if losses else None,
        loss_last=losses[-1] if losses else None,
        loss_finite=finite and bool(losses),
        params_max_abs_diff=r0.get("params_max_abs_diff"),
        memory=memory,
    )


# --- how a run ended ---------------------------------------------------------------------------------
def nccl_warnings(text: str, limit: int = 8) -> list[str]:
    """The last ``limit`` 'NCCL WARN' lines of an NCCL log (host/pid prefixes kept, whitespace trimmed)."""
    lines = [ln.strip() for ln in text.splitlines() if NCCL_WARN.search(ln)]
    return lines[-limit:]


def log_tail(text: str, limit: int = 12) -> list[str]:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return [ln[:400] for ln in lines[-limit:]]


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def culprit(ranks: list[RankStatus], first_failed: int | None, killed: Sequence[int] = ()) -> int | None:
    """The rank that caused a failure: one that died without recording an error (exit, crash, a kill
    that was not the launcher's clean-up in ``killed``), else one whose error is not a symptom of a
    lost peer, else the launcher's first failure."""
    dead = [r for r in ranks if r.exitcode not in (None, 0) and r.phase != "error" and r.rank not in killed]
    if dead:
        return dead[0].rank
    own = [r for r in ranks if r.error and not PEER_SYMPTOM.search(r.error)]
    if own:
        return own[0].rank
    return first_failed


def run_message(status: str, ranks: list[RankStatus], timeout_s: float, culprit_rank: int | None,
                port: int | None = None) -> str:
    """One sentence naming what failed or hung (which rank, which collective or phase)."""
    by = {r.rank: r for r in ranks}
    if status == "hung":
        not_started = [r.rank for r in ranks if not r.joined and r.phase in (None, "start")]
        waiting = [r.rank for r in ranks if not r.joined and r.phase == "rendezvous"]
        if not_started or waiting:
            where = f"127.0.0.1:{port}" if port else "127.0.0.1"
            if not_started and waiting:
                return (f"rank {_ranks(not_started)} never joined the rendezvous on {where} within {timeout_s:.0f} s; "
                        f"rank {_ranks(waiting)} waited for it")
            if not_started:
                return f"rank {_ranks(not_started)} never started (still importing torch after {timeout_s:.0f} s)"
            return (
                f"the rendezvous on {where} did not complete within {timeout_s:.0f} s (ranks {_ranks(waiting)} waiting)"
            )
        labels: dict[str, list[int]] = {}
        for rk in ranks:
            labels.setdefault(rk.label or rk.phase or "?", []).append(rk.rank)
        if len(labels) == 1:
            label, rs = next(iter(labels.items()))
            return f"hung: {label} did not complete within {timeout_s:.0f} s (ranks {_ranks(rs)})"
        parts = "; ".join(f"rank {_ranks(rs)}: {label}" for label, rs in labels.items())
        return f"hung after {timeout_s:.0f} s with the ranks at different points ({parts})"
    if status == "failed":
        r = by.get(culprit_rank) if culprit_rank is not None else None
        if r is None:
            return "a rank failed"
        where = r.label or r.phase or "?"
        if r.phase == "error":
            where = r.label.replace("failed during ", "") if r.label else "?"
        if r.exitcode is not None and r.exitcode < 0 and r.phase != "error":
            return f"rank {r.rank} was killed by {_signal_name(r.exitcode)} during {where}"
        if r.error:
            return f"rank {r.rank} failed during {where}: {r.error}"
        return f"rank {r.rank} exited with code {r.exitcode} during {where}"
    return status


def _ranks(rs: list[int]) -> str:
    return ", ".join(str(r) for r in rs)
