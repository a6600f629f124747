"""Literals that every match of a regular expression contains (from the stdlib's own regex parser).

The stdlib signature prefilter (parsers/signatures.py, used without google-re2) runs a signature's regex only on text
that holds one of them.
"""
from __future__ import annotations

import re
from typing import Any

MIN_ANCHOR = 4


def _seq_anchor(items: list[tuple[Any, Any]]) -> str:
    """The longest run of literal characters in a parsed regex sequence (lower-cased)."""
    from re import _parser as sre  # type: ignore[attr-defined]

    best = cur = ""
    for op, av in items:
        if op is sre.LITERAL:
            cur += chr(av)
            continue
        if op is sre.SUBPATTERN and all(o is sre.LITERAL for o, _ in av[3]) and list(av[3]):
            cur += "".join(chr(a) for _, a in av[3])
            continue
        best = max(best, cur, key=len)
        cur = ""
    return max(best, cur, key=len).lower()


def anchors(regex: str) -> list[str] | None:
    """Literals of which every match of ``regex`` contains at least one (one per top-level alternative), or
    None when an alternative has no literal of MIN_ANCHOR characters (the regex then always runs)."""
    from re import _parser as sre  # type: ignore[attr-defined]

    items = list(sre.parse(regex, re.IGNORECASE))
    branches = items[0][1][1] if len(items) == 1 and items[0][0] is sre.BRANCH else [items]
    out = []
    for b in branches:
        a = _seq_anchor(list(b))
        if len(a.strip()) < MIN_ANCHOR:
            return None
        out.append(a)
    return out
