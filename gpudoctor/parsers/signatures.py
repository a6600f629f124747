"""Match error messages and log lines against the signature catalogue (rules/signatures.toml).

:func:`match_signatures` is a pure function of the text and the catalogue; the SIG rules turn its
hits into findings with the catalogue's cause, remedy and sources.
"""
from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable
from typing import Any

from gpudoctor.facts.model import SignatureHit
from gpudoctor.parsers._text import clean

MAX_LINES = 3
MAX_LINE_CHARS = 300
ERRORISH = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\bTraceback\b|\bFAILED\b|(?i:\berror:|\bfailed\b|\bfatal\b"
                      r"|\bWARN(?:ING)?\b|Permission denied|\bunable to\b|\bcannot\b|\bcan't\b|\btimed out\b"
                      r"|\bAssertion\b|\bnot (?:found|available|detected)\b)")
_NOISE = re.compile(r"^\s*(?:\[rank\d+\]:\s*)?(?:File \"|\^+$|~+$|Traceback \(most recent call last\)|return |\w+ = "
                    r"|Last error:\s*$|>>> )|\bNCCL INFO\b")


@functools.cache
def compiled(entries: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern], ...]:
    return tuple((sid, re.compile(rx, re.IGNORECASE | re.MULTILINE)) for sid, rx in entries)


def catalogue() -> list[dict[str, Any]]:
    """The [[signature]] entries of rules/signatures.toml."""
    from gpudoctor.compat import data

    return list(data.load("signatures").get("signature", []))


def _patterns(entries: list[dict[str, Any]]) -> tuple[tuple[str, re.Pattern], ...]:
    key = tuple((e["id"], e["regex"]) for e in entries)
    return compiled(key)


def _explains(entries: list[dict[str, Any]]) -> dict[str, re.Pattern]:
    key = tuple((e["id"], e["explains"]) for e in entries if e.get("explains"))
    return dict(compiled(key))


def _evidence(text: str, m: re.Match) -> str:
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    end = len(text) if end < 0 else end
    return " ".join(text[start:end].split())[:MAX_LINE_CHARS]


def match_signatures(text: str, entries: list[dict[str, Any]] | None = None, file: str | None = None,
                     spans: list[tuple[int, int]] | None = None) -> list[SignatureHit]:
    """Every catalogue entry that matches ``text``, with its count, first matching lines and named groups.

    ``spans`` (optional, out) receives the (start, end) character spans of all matches, so that
    :func:`unexplained_error_lines` can skip lines a signature explains.
    """
    entries = catalogue() if entries is None else entries
    t = clean(text)
    hits = []
    explains = _explains(entries)
    for sid, rx in _patterns(entries):
        count, lines, groups = 0, [], {}
        for m in rx.finditer(t):
            count += 1
            if spans is not None:
                spans.append((m.start(), m.end()))
            if count == 1:
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
            ev = _evidence(t, m)
            if len(lines) < MAX_LINES and ev not in lines:
                lines.append(ev)
            if count >= 10000:
                break
        if count and spans is not None and sid in explains:  # follow-on lines of the same failure
            spans.extend((m.start(), m.end()) for m in explains[sid].finditer(t))
        if count:
            hits.append(SignatureHit(id=sid, count=count, lines=lines, files=[file] if file else [], groups=groups))
    return hits


def _merge_spans(spans: Iterable[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted, disjoint (starts, ends) covering the same characters as ``spans`` (touching spans merged)."""
    starts: list[int] = []
    ends: list[int] = []
    for s, e in sorted(spans):
        if ends and s <= ends[-1]:
            ends[-1] = max(ends[-1], e)
        else:
            starts.append(s)
            ends.append(e)
    return starts, ends


def unexplained_error_lines(text: str, spans: Iterable[tuple[int, int]], limit: int = 10) -> list[str]:
    """Error-looking lines (Error, Exception, failed, WARN ...) that no signature match covers."""
    t = clean(text)
    starts, ends = _merge_spans(spans)
    out: list[str] = []
    last = -1
    for m in ERRORISH.finditer(t):  # one pass over the text; only error-looking lines reach Python code
        start = t.rfind("\n", 0, m.start()) + 1
        if start == last:
            continue  # another match on the same line
        last = start
        end = t.find("\n", m.end())
        end = len(t) if end < 0 else end
        line = t[start:end]
        if _NOISE.search(line):
            continue
        k = bisect.bisect_right(starts, end) - 1  # the last covered interval that starts before the line ends
        if k >= 0 and ends[k] >= start:
            continue
        s = " ".join(line.split())[:MAX_LINE_CHARS]
        if s and s not in out:
            out.append(s)
            if len(out) >= limit:
                break
    return out


def merge_hits(hits: Iterable[SignatureHit]) -> list[SignatureHit]:
    """Combine hits of the same signature from several files (counts summed, first lines kept)."""
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
    return sorted(by_id.values(), key=lambda h: h.id)
