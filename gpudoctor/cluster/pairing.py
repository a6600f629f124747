"""Node-to-node test schedule and slow node / slow link attribution (pure functions, no torch).

Schedule: the circle method of a round-robin tournament. Each round is a perfect matching
(one node sits out per round when N is odd), so all N/2 pairs of a round run at the same
time and every round gives each node a new partner. Only R rounds are run, not all N-1:

    R = min(full, max(3, ceil(log2 N)))       (full = N-1 for even N, N for odd N)

A healthy node is misnamed only if every one of its R partners is slow; with a fraction p of
slow nodes that chance is about p**R, which is at most 1/N for p <= 1/2 and R >= log2 N, so
the expected number of healthy nodes misnamed in the cluster stays below one. The whole
test therefore takes O(log N) rounds of O(N) parallel pairs, instead of N(N-1)/2 serial
pairs. Small clusters (N <= 4) get every pair.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence


def full_rounds(n: int) -> int:
    """Rounds for every pair to meet once: N-1 (even N) or N (odd N, one bye per round)."""
    if n < 2:
        return 0
    return n - 1 if n % 2 == 0 else n


def default_rounds(n: int) -> int:
    """R = min(full_rounds(N), max(3, ceil(log2 N))); 0 when there is nothing to pair."""
    if n < 2:
        return 0
    return min(full_rounds(n), max(3, math.ceil(math.log2(n))))


def schedule(n: int, rounds: int | None = None) -> list[list[tuple[int, int]]]:
    """Pairs of node indices 0..n-1 for each round (circle method), each pair (low, high).

    ``rounds`` defaults to :func:`default_rounds`; it is capped at :func:`full_rounds`.
    """
    if n < 2:
        return []
    r = default_rounds(n) if rounds is None else min(max(rounds, 0), full_rounds(n))
    slots: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    m = len(slots)
    out = []
    for _ in range(r):
        pairs = []
        for i in range(m // 2):
            a, b = slots[i], slots[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        out.append(sorted(pairs))
        slots = [slots[0]] + [slots[-1]] + slots[1:-1]  # rotate all but the first
    return out


def attribute(pairs: Sequence[tuple[str, str, float | None]], slow_fraction: float,
              min_busbw: float | None = None):
    """Name slow nodes and slow links from pair results.

    ``pairs``: (node_a, node_b, busbw GB/s or None when the pair failed). The reference is
    the median over nodes of each node's best pair busbw (not the median of all pairs: in
    a small cluster one slow node is in most pairs and would drag that median down to its
    own speed). A pair is slow when it failed or its busbw is below ``slow_fraction`` x the
    reference, or below ``min_busbw`` (GB/s) when that is given. A node is slow when it was in at least two pairs and
    all of them were slow. A slow pair with no slow node at either end is a slow link when both ends have
    at least one pair that was not slow; otherwise it is unattributed (too few pairs to
    tell which end is at fault: e.g. N = 2).

    Returns (reference busbw or None, set of slow pair indices, slow nodes, slow links, unattributed).
    """
    best: dict[str, float] = {}
    for a, b, bw in pairs:
        for x in (a, b):
            if bw is not None and bw > 0:
                best[x] = max(best.get(x, 0.0), bw)
    median = statistics.median(best.values()) if best else None
    slow_idx = set()
    for i, (_, _, bw) in enumerate(pairs):
        if (bw is None or bw <= 0 or (median is not None and bw < slow_fraction * median)
                or (min_busbw is not None and bw < min_busbw)):
            slow_idx.add(i)
    total: dict[str, int] = defaultdict(int)
    slow: dict[str, int] = defaultdict(int)
    for i, (a, b, _) in enumerate(pairs):
        for x in (a, b):
            total[x] += 1
            slow[x] += i in slow_idx
    slow_nodes = sorted(x for x in total if total[x] >= 2 and slow[x] == total[x])
    links, unattributed = [], []
    for i in sorted(slow_idx):
        a, b, _ = pairs[i]
        if a in slow_nodes or b in slow_nodes:
            continue
        if slow[a] < total[a] and slow[b] < total[b]:
            links.append([a, b])
        else:
            unattributed.append([a, b])
    return median, slow_idx, slow_nodes, links, unattributed
