"""Where the matches of one signature came from: ranks, hosts, GPUs and line numbers (issue 14, root cause first).

A multi-rank log repeats the same failure on many ranks; the finding says on which ranks, hosts and GPUs, how often
and between which lines, instead of listing the first three copies. The origin is read from the line's prefix where
it carries one:

* torchrun's ``--tee`` output: every line of rank N starts ``[rankN]:`` (torch.distributed.elastic's log line prefix);
* NCCL's debug lines: ``[timestamp] host:pid:tid [cudaDev] NCCL INFO|WARN ...`` (NVIDIA/nccl src/debug.cc: the
  optional NCCL_DEBUG_TIMESTAMP_FORMAT stamp, then ``"%s:%d:%d "`` hostname, pid, tid, then ``"[%d] "`` the CUDA
  device of the calling thread);
* c10d's ProcessGroupNCCL messages: ``[Rank N]`` or ``[PG ID 0 PG GUID 0(default_pg) Rank N]`` (its log prefix);
* kernel log lines: ``NVRM: Xid (PCI:0000:3b:00): ...`` and ``NVRM: GPU at PCI:0000:3b:00`` (the GPU's PCI address).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from gpudoctor.facts.model import SignatureHit
from gpudoctor.parsers._text import int_ranges

MAX_LINES = 3
MAX_DISTINCT = 4096  # ranks / hosts / GPUs kept per signature
_TEE = re.compile(r"\[rank(\d+)\]:[ \t]*")
_NCCL = re.compile(r"(?:\[[^\]\n]{1,64}\][ \t]*)?([^\s:\[\]]+):\d+:\d+[ \t]+\[(\d+)\][ \t]")
_C10D = re.compile(r"\[(?:PG [^\]\n]{0,120}?)?Rank (\d+)\]")
_PCI = re.compile(r"NVRM: (?:Xid \(PCI:|GPU at PCI:)([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)")


def origin(line: str) -> tuple[int | None, str | None, str | None]:
    """(rank, host, GPU) that a log line names in its prefix; None for each it does not name.

    The GPU is ``cuda:N@host`` for an NCCL line (the calling thread's device on that host) or the PCI address of a
    kernel line."""
    rank: int | None = None
    pos = 0
    m = _TEE.match(line)
    if m:
        rank, pos = int(m.group(1)), m.end()
    host = gpu = None
    n = _NCCL.match(line, pos)
    if n:
        host, gpu = n.group(1), f"cuda:{n.group(2)}@{n.group(1)}"
    if rank is None and "Rank " in line:
        c = _C10D.search(line)
        if c:
            rank = int(c.group(1))
    if gpu is None and "NVRM: " in line:
        p = _PCI.search(line)
        if p:
            gpu = p.group(1).lower()
    return rank, host, gpu


class Spread:
    """The origins and first/last offsets of one signature's matches in one text (offsets are character indexes)."""

    __slots__ = ("ranks", "hosts", "gpus", "first", "last")

    def __init__(self) -> None:
        self.ranks: dict[int, None] = {}
        self.hosts: dict[str, None] = {}
        self.gpus: dict[str, None] = {}
        self.first = self.last = -1

    def add(self, t: str, start: int, line_start: int) -> None:
        if self.first < 0:
            self.first = start
        self.last = start
        end = t.find("\n", line_start, line_start + 400)  # the line itself: a later line's "[Rank N]" is not its
        rank, host, gpu = origin(t[line_start:end if end >= 0 else line_start + 400])
        for seen, v in ((self.ranks, rank), (self.hosts, host), (self.gpus, gpu)):
            if v is not None and len(seen) < MAX_DISTINCT:
                seen[v] = None  # type: ignore[index]


def line_numbers(t: str, offsets: Iterable[int], base: int = 0) -> dict[int, int]:
    """1-based line number (plus ``base`` lines before ``t``) of each character offset, in one pass over ``t``."""
    out: dict[int, int] = {}
    line, pos = base + 1, 0
    for off in sorted(set(offsets)):
        line += t.count("\n", pos, off)
        pos = off
        out[off] = line
    return out


def finish(hit: SignatureHit, spread: Spread, t: str, base: int, numbers: dict[int, int]) -> None:
    """Copy ``spread`` into ``hit`` (line numbers from :func:`line_numbers`)."""
    hit.ranks = sorted(spread.ranks)
    hit.hosts = list(spread.hosts)
    hit.gpus = list(spread.gpus)
    if spread.first >= 0:
        hit.first_line, hit.last_line = numbers[spread.first], numbers[spread.last]
        hit.first_time = time_at(t, spread.first)


#: how far above a match a stamped line is looked for: a traceback under its glog line ("[rank9]:[E1204 14:02:10 ...]
#: ... Traceback ... RuntimeError: ..."), a Python logging record's continuation lines
_TIME_BACK_LINES = 40
_TIME_BACK_CHARS = 8192
#: any of line_time's stamps (one scan of the window above a match finds the nearest)
_ANY_STAMP = re.compile(r"\b\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d|[IWEF]\d{4} \d\d:\d\d:\d\d"
                        r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}\d{1,2} \d\d:\d\d:\d\d")


#: a line that continues the record above it (a traceback's lines, a chained exception's header, an indented or
#: empty line, torch's [rankN]: prefix before them): the stamp of the record's first line is the match's time
_CONTINUATION = re.compile(r"(?:\[[A-Za-z_]\w*?\d+\]:)?(?:[ \t]|$|Traceback \(|During handling|The above exception"
                           r"|[\w.]*(?:Error|Exception|Warning)\b)")


def time_at(t: str, offset: int) -> str | None:
    """:func:`line_time` of the line of ``t`` holding ``offset``, else of the nearest line above it that has one
    (within _TIME_BACK_LINES lines and _TIME_BACK_CHARS characters); each line's head is tried with one regex."""
    end = t.find("\n", offset)
    end = len(t) if end < 0 else end
    floor = max(0, offset - _TIME_BACK_CHARS)
    for _ in range(_TIME_BACK_LINES):
        start = t.rfind("\n", floor, end) + 1
        if start == 0 and floor > 0:
            return None
        head = t[start:min(end, start + 80)]
        if _ANY_STAMP.search(head):
            stamp = line_time(head)
            if stamp is not None:
                return stamp
        if start <= floor or (end < offset and not _CONTINUATION.match(head)):
            return None  # an unstamped line above that is no part of the match's record: another event
        end = start - 1
    return None


def merge_hits(hits: Iterable[SignatureHit]) -> list[SignatureHit]:
    """Combine hits of the same signature from several files or chunks (counts summed, first lines kept, ranks /
    hosts / GPUs united, the first line of the first and the last line of the last)."""
    by_id: dict[str, SignatureHit] = {}
    for h in hits:
        if h.id not in by_id:
            by_id[h.id] = h.model_copy(deep=True)
            continue
        cur = by_id[h.id]
        cur.count += h.count
        for line in h.lines:
            if len(cur.lines) < MAX_LINES and line not in cur.lines:
                cur.lines.append(line)
        for f in h.files:
            if f not in cur.files:
                cur.files.append(f)
        cur.ranks = sorted(set(cur.ranks) | set(h.ranks))[:MAX_DISTINCT]
        cur.hosts += [x for x in h.hosts if x not in cur.hosts][:max(0, MAX_DISTINCT - len(cur.hosts))]
        cur.gpus += [x for x in h.gpus if x not in cur.gpus][:max(0, MAX_DISTINCT - len(cur.gpus))]
        for g in [h.groups, *h.group_variants]:
            if g and g != cur.groups and g not in cur.group_variants and len(cur.group_variants) < 4:
                cur.group_variants.append(g)
        cur.from_prose = cur.from_prose and h.from_prose  # a log line of the same message outweighs the prose
        # folded only when every part was: a part whose lines no other signature read keeps the wrapper its own
        cur.wrapped_by = sorted(set(cur.wrapped_by) | set(h.wrapped_by)) if cur.wrapped_by and h.wrapped_by else []
        if cur.first_line is None:
            cur.first_line = h.first_line
        if h.first_time is not None and (cur.first_time is None or h.first_time < cur.first_time):
            cur.first_time = h.first_time  # the earliest over files: when the failure first showed
        if h.last_line is not None:
            cur.last_line = h.last_line
    return sorted(by_id.values(), key=lambda h: h.id)


def _names(items: list[str], limit: int = 8) -> str:
    head = ", ".join(items[:limit])
    return head + (f" … ({len(items)} in all)" if len(items) > limit else "")


def describe(hit: SignatureHit) -> str:
    """'on ranks 3, 7 (hosts nodeA, nodeB; GPUs cuda:3@nodeA), 14 matches in train.log, lines 120–9021'."""
    who = []
    if hit.ranks:
        who.append(f"rank{'s' * (len(hit.ranks) > 1)} {int_ranges(hit.ranks)}")
    extra = []
    if hit.hosts:
        extra.append(f"host{'s' * (len(hit.hosts) > 1)} {_names(hit.hosts)}")
    if hit.gpus:
        extra.append(f"GPU{'s' * (len(hit.gpus) > 1)} {_names(hit.gpus)}")
    if who and extra:
        who[0] += f" ({'; '.join(extra)})"
    elif extra:
        who = ["; ".join(extra)]
    parts = [f"on {who[0]}" if who else ""]
    parts.append(f"{hit.count} match{'es' * (hit.count != 1)}" + (f" in {', '.join(hit.files)}" if hit.files else ""))
    if hit.first_line is not None and hit.last_line is not None:
        if len(hit.files) > 1:
            parts.append(f"first at {hit.files[0]}:{hit.first_line}, last at {hit.files[-1]}:{hit.last_line}")
        elif hit.first_line == hit.last_line:
            parts.append(f"line {hit.first_line}")
        else:
            parts.append(f"lines {hit.first_line}–{hit.last_line}")
    return ", ".join(p for p in parts if p)


_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                       "Dec"), 1)}
#: wall-clock stamps a log line may carry, most specific first: ISO 8601 / Python logging / torchrun's error summary
#: ("2024-05-14 10:22:31,123", "2024-05-14T10:22:31.5", "2024-05-14_10:22:31"), glog as torch's C++ logs it
#: ("[rank0]:[E1204 14:02:10.123456 ...", month and day), syslog / journald ("Dec  4 14:02:10"), dmesg -T
#: ("[Fri Dec  4 10:01:02 2026]"). dmesg's seconds since boot are no wall clock and are not read.
_ISO = re.compile(r"\b\d{4}-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?")
_GLOG = re.compile(r"(?:^|[\[\s:])[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\b")
_SYSLOG = re.compile(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d)"
                     r"(?:\.(\d{1,9}))?")


def line_time(line: str) -> str | None:
    """The wall-clock time a log line's prefix carries, as "MM-DD HH:MM:SS.ffffff" (sortable; the year is left out:
    glog and syslog do not print it), or None when it carries none in its first 80 characters."""
    head = line[:80]
    m = _ISO.search(head)
    if m:
        month, day = int(m.group(1)), int(m.group(2))
    else:
        m = _GLOG.search(head)
        if m:
            month, day = int(m.group(1)), int(m.group(2))
        else:
            m = _SYSLOG.search(head)
            if m is None:
                return None
            month, day = _MONTHS[m.group(1)], int(m.group(2))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    frac = (m.group(6) or "").ljust(6, "0")[:6]
    return f"{month:02d}-{day:02d} {m.group(3)}:{m.group(4)}:{m.group(5)}.{frac}"
