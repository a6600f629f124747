"""Collective timing primitives shared by local confirmation runs and cluster mode.

Definitions follow nccl-tests (doc/PERFORMANCE.md,
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
algbw = S / t (bytes per second of the message), and for all-reduce
busbw = algbw * 2(n-1)/n, which compares with the hardware's peak link bandwidth
whatever the rank count. Units: bytes, seconds, GB/s = 1e9 bytes/s.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Sequence


def busbw_factor(op: str, n: int) -> float:
    """Factor from algbw to busbw for a collective over ``n`` ranks (nccl-tests PERFORMANCE.md)."""
    if n <= 1:
        return 0.0 if op in ("all_reduce", "all_gather", "reduce_scatter", "alltoall") else 1.0
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0  # broadcast, reduce, sendrecv


def bandwidths(size_bytes: int, seconds: float, n: int, op: str = "all_reduce") -> tuple[float, float]:
    """(algbw, busbw) in GB/s (1e9 bytes/s) for one collective of ``size_bytes`` taking ``seconds``."""
    if seconds <= 0:
        return 0.0, 0.0
    algbw = size_bytes / seconds / 1e9
    return algbw, algbw * busbw_factor(op, n)


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, min, max and the relative spread (max-min)/median of repeated measurements."""
    med = statistics.median(values)
    return {"median": med, "min": min(values), "max": max(values),
            "rel_spread": (max(values) - min(values)) / med if med else 0.0}


def time_allreduce(dist: Any, tensor: Any, iters: int, warmup: int, group: Any = None) -> list[float]:
    """Time ``iters`` all-reduces of ``tensor`` after ``warmup`` untimed ones; seconds per call.

    On CUDA tensors each call is timed with CUDA events on the current stream
    (device time, no host jitter); on CPU (gloo) with ``time.perf_counter`` around a
    blocking call. A barrier precedes the timed loop so ranks start together.
    ``dist`` is ``torch.distributed`` (passed in so this module never imports torch).
    """
    for _ in range(warmup):
        dist.all_reduce(tensor, group=group)
    if tensor.is_cuda:
        import torch

        torch.cuda.synchronize()
        dist.barrier(group=group)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for i in range(iters):
            starts[i].record()
            dist.all_reduce(tensor, group=group)
            ends[i].record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]
    dist.barrier(group=group)
    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        dist.all_reduce(tensor, group=group)
        out.append(time.perf_counter() - t0)
    return out
