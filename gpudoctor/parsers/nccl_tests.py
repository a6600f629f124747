"""nccl-tests output (all_reduce_perf, all_gather_perf, ... of NVIDIA/nccl-tests) -> :class:`NcclTestsRun` list.

Read from the printing code of nccl-tests (src/common.cu before 2.14, src/util.cu after):

- the header ``# nThread %d nGpus %d minBytes %ld maxBytes %ld step: ...``;
- one line per rank ``#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s`` (the bus id was
  ``[0x%02x]`` before 2.15, and older builds print no ``Group``): the host and the GPU model of every rank;
- the table rows ``%12li  %12li  %8s  %6s  %6s`` (size in bytes, count, type, redop, root) followed by
  time / algbw / busbw / #wrong for the out-of-place then the in-place run (``-a``/per-iteration builds add
  i_min, i_max, i_p99, i_cv% after each #wrong; ``#wrong`` is ``N/A`` with ``-c 0``);
- the footer ``# Out of bounds values : %d OK|FAILED`` and ``# Avg bus bandwidth    : %g``;
- since 2.17 ``# Collective test concluded: %s`` naming the binary.

busbw is algbw x the collective's factor (2(n-1)/n for all-reduce), comparable with a GPU's link rate whatever
the rank count (nccl-tests doc/PERFORMANCE.md). GB/s = 1e9 bytes/s.
"""
from __future__ import annotations

import re

from gpudoctor.facts.model import NcclTestsRow, NcclTestsRun

_HEADER = re.compile(r"^# nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+)", re.M)
_RANK = re.compile(r"^#\s+Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+"
                   r"\[([^\]]*)\]\s+(.+?)\s*$")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([a-z0-9_]+)\s+([a-z]+)\s+(-?\d+)\s+(.+)$")
_AVG = re.compile(r"^# Avg bus bandwidth\s*:\s*([0-9.eE+-]+)", re.M)
_OOB = re.compile(r"^# Out of bounds values\s*:\s*(\d+)", re.M)
_CONCLUDED = re.compile(r"^# Collective test concluded:\s*(\S+)", re.M)
_BINARY = re.compile(r"\b(all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather|"
                     r"hypercube)_perf\b")
MAX_ROWS = 4096  #: per run: a sweep from 8 B to 16 GiB by x2 is 32 rows


def _float(tok: str) -> float | None:
    try:
        return float(tok)
    except ValueError:
        return None


def _row(m: re.Match, per_iter: bool) -> NcclTestsRow | None:
    rest = m.group(6).split()
    group = 8 if per_iter else 4
    if len(rest) < 3:
        return None
    places = [rest[i:i + group] for i in range(0, min(len(rest), 2 * group), group)]
    busbw = [b for b in (_float(p[2]) for p in places if len(p) >= 3) if b is not None]
    algbw = [a for a in (_float(p[1]) for p in places if len(p) >= 2) if a is not None]
    wrong = [int(p[3]) for p in places if len(p) >= 4 and p[3].isdigit()]
    return NcclTestsRow(size_bytes=int(m.group(1)), count=int(m.group(2)), dtype=m.group(3), redop=m.group(4),
                        algbw_gbs=max(algbw) if algbw else None, busbw_gbs=max(busbw) if busbw else None,
                        wrong=sum(wrong) if wrong else None)


def parse_nccl_tests(text: str) -> list[NcclTestsRun]:
    """Every nccl-tests run in ``text`` (a run starts at its ``# nThread`` header, or at the first table row of a
    paste without one), in order; rows keep the larger of the out-of-place and in-place figures."""
    runs: list[NcclTestsRun] = []
    cur: NcclTestsRun | None = None
    per_iter = False
    binary = _BINARY.search(text)
    for line in text.splitlines():
        if line.startswith("# nThread "):
            h = _HEADER.match(line)
            cur = NcclTestsRun(collective=binary.group(1) if binary else None,
                               gpus_per_process=int(h.group(2)) if h else None)
            runs.append(cur)
            per_iter = False
            continue
        if line.startswith("#"):
            if cur is None:
                cur = NcclTestsRun(collective=binary.group(1) if binary else None)
                runs.append(cur)
            r = _RANK.match(line)
            if r:
                cur.ranks.append(int(r.group(1)))
                if r.group(2) not in cur.hosts:
                    cur.hosts.append(r.group(2))
                cur.gpus.append(r.group(5))
            elif "i_min" in line:
                per_iter = True
            elif (a := _AVG.match(line)) is not None:
                cur.avg_busbw_gbs = _float(a.group(1))
            elif (o := _OOB.match(line)) is not None:
                cur.out_of_bounds = int(o.group(1))
            elif (c := _CONCLUDED.match(line)) is not None:
                b = _BINARY.search(c.group(1))
                cur.collective = b.group(1) if b else cur.collective
            continue
        m = _ROW.match(line)
        if m and cur is not None and len(cur.rows) < MAX_ROWS:
            row = _row(m, per_iter)
            if row is not None:
                cur.rows.append(row)
    return [r for r in runs if r.rows or r.avg_busbw_gbs is not None or r.ranks]
