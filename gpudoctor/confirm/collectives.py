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
from collections.abc import Sequence
from typing import Any


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


LARGE_BYTES = 256 * 1024 ** 2


def timed_calls(iters: int, size_bytes: int) -> int:
    """Timed all-reduce calls for one message size: ``iters`` (``--iters``); from 256 MiB on, half of it (at least
    3) to bound the run time, but never more than asked (``--iters 1`` runs 1 call at every size). The count run
    is recorded per size and shown in the report's "calls" column."""
    if size_bytes < LARGE_BYTES:
        return iters
    return min(iters, max(3, iters // 2))


def timing_groups(iters: int, groups: int = 5) -> list[int]:
    """Split ``iters`` timed calls into at most ``groups`` back-to-back groups (sizes differ by at most 1)."""
    g = max(1, min(groups, iters))
    return [iters // g + (1 if i < iters % g else 0) for i in range(g)]


def time_allreduce(dist: Any, tensor: Any, iters: int, warmup: int, group: Any = None,
                   groups: int = 5) -> list[float]:
    """Time ``iters`` all-reduces of ``tensor`` after ``warmup`` untimed ones; seconds per call, one
    value per group.

    The calls run back to back in up to ``groups`` groups; each group is timed as a whole and divided
    by its call count, the way nccl-tests times its ``-n`` iterations with one event pair
    (common.cu, ``startColl``/``completeColl`` loop): per-call timing would add an event record and a
    host round trip to every call and, for small messages, measure host launch latency instead of
    the collective. The spread over groups is what the report shows. On CUDA tensors the groups are
    timed with CUDA events on the current stream (device time); on CPU (gloo, blocking calls) with
    ``time.perf_counter``. A barrier precedes the timed calls so ranks start together.
    ``dist`` is ``torch.distributed`` (passed in so this module never imports torch).
    Returns a list of ``len(timing_groups(iters, groups))`` floats (seconds per call); [] when iters < 1.
    """
    for _ in range(warmup):
        dist.all_reduce(tensor, group=group)
    sizes = timing_groups(iters, groups) if iters > 0 else []
    if tensor.is_cuda:
        import torch

        torch.cuda.synchronize()
        dist.barrier(group=group)
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(len(sizes) + 1)]
        marks[0].record()
        for i, k in enumerate(sizes):
            for _ in range(k):
                dist.all_reduce(tensor, group=group)
            marks[i + 1].record()
        torch.cuda.synchronize()
        return [marks[i].elapsed_time(marks[i + 1]) / 1e3 / k for i, k in enumerate(sizes)]
    dist.barrier(group=group)
    out = []
    for k in sizes:
        t0 = time.perf_counter()
        for _ in range(k):
            dist.all_reduce(tensor, group=group)
        out.append((time.perf_counter() - t0) / k)
    return out
