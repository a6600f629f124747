"""Literals that every match of a regular expression contains (from the stdlib's own regex parser).

The stdlib signature prefilter (parsers/signatures.py, used without google-re2) runs a signature's regex only on text
that holds one of them, and only around them.
"""
from __future__ import annotations

import re
from typing import Any

MIN_ANCHOR = 4


def _required(items: list[tuple[Any, Any]]) -> list[str] | None:
    """Literals (lower-case) of which every match of the parsed sequence ``items`` contains at least one, or None.

    A sequence requires each of its elements, so the most selective requirement of any element will do: a run of
    literal characters, a group (what its contents require), an alternation (the union of what every alternative
    requires; None if one requires nothing), or a repeat of at least once (what its body requires). The stdlib parser
    factors an alternation's common prefix out (``CUBLAS_X|CUDNN_Y`` becomes ``CU`` + an alternation), which is why
    the nested forms matter."""
    from re import _parser as sre  # type: ignore[attr-defined]

    options: list[list[str]] = []
    run = ""

    def close_run() -> None:
        nonlocal run
        if len(run.strip()) >= MIN_ANCHOR:
            options.append([run.lower()])
        run = ""

    for op, av in items:
        if op is sre.LITERAL:
            run += chr(av)
            continue
        if op is sre.SUBPATTERN and list(av[3]) and all(o is sre.LITERAL for o, _ in av[3]):
            run += "".join(chr(a) for _, a in av[3])
            continue
        close_run()
        sub: list[str] | None = None
        if op is sre.SUBPATTERN:
            sub = _required(list(av[3]))
        elif op is sre.BRANCH:
            union: list[str] = []
            for branch in av[1]:
                got = _required(list(branch))
                if got is None:
                    union = []
                    break
                union += [x for x in got if x not in union]
            sub = union or None
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[0] >= 1:
            sub = _required(list(av[2]))
        if sub:
            options.append(sub)
    close_run()
    if not options:
        return None
    # most selective: the longest shortest literal, then the fewest literals
    return max(options, key=lambda lits: (min(len(x) for x in lits), -len(lits)))


def anchors(regex: str) -> list[str] | None:
    """Literals of which every match of ``regex`` contains at least one, or None when some match need not contain a
    literal of MIN_ANCHOR characters (the regex then always runs)."""
    from re import _parser as sre  # type: ignore[attr-defined]

    return _required(list(sre.parse(regex, re.IGNORECASE)))


def structure(regex: str):
    """(index, character, group depth before it) for each character of ``regex`` that is syntax: outside
    character classes and not escaped (an escape's two characters and a class's contents are skipped)."""
    depth, i, in_class = 0, 0, False
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        else:
            yield i, c, depth
            depth += (c == "(") - (c == ")")
        i += 1
