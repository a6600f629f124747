"""``env`` / ``printenv`` / ``export -p`` output -> EnvFacts.

Uses the live env probe's own filter and redaction (:func:`gpudoctor.facts.env.collect_env`), so a
saved dump and a live scan keep the same variables and never show a secret.
"""
from __future__ import annotations

import re

from gpudoctor.facts.env import collect_env
from gpudoctor.facts.model import EnvFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean

_VAR = re.compile(r"^(?:export\s+|declare -x\s+|setenv\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def parse_env_lines(text: str) -> dict[str, str]:
    """Every NAME=value line (quotes of ``export -p`` removed); other lines are ignored."""
    out: dict[str, str] = {}
    for raw in clean(text).split("\n"):
        m = _VAR.match(raw.strip())
        if m:
            v = m.group(2)
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            out[m.group(1)] = v
    return out


def parse_env(text: str) -> EnvFacts:
    """Parse an environment dump into the training-relevant variables (secrets redacted).

    Raises ParseError when fewer than one NAME=value line is present.
    """
    allv = parse_env_lines(text)
    if not allv:
        raise ParseError("no NAME=value line")
    return EnvFacts(source="env dump", variables=collect_env(allv))
