"""Environment probe: only the variables that shape GPU training, never secrets (filters: gpudoctor.facts.env)."""
from __future__ import annotations

from gpudoctor.facts.env import collect_env
from gpudoctor.facts.model import EnvFacts


def probe_env(_opts=None) -> EnvFacts:
    return EnvFacts(variables=collect_env())
