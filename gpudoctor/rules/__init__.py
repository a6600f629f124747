"""Rules check the facts and give findings. Importing this package registers every rule family
(:mod:`gpudoctor.rules.families`: one row per family, the only place to edit when adding one)."""
from __future__ import annotations

import importlib

from gpudoctor.rules.engine import REGISTRY, evaluate, rule
from gpudoctor.rules.families import BY_PREFIX, FAMILIES, modules

__all__ = ["REGISTRY", "evaluate", "rule"]

for _name in modules():
    importlib.import_module(f"gpudoctor.rules.{_name}")

_unknown = sorted({s.family for s in REGISTRY.values()} - set(BY_PREFIX))
if _unknown:
    raise ValueError(f"rule families missing from gpudoctor.rules.families: {_unknown}")
_rank = {f.prefix: i for i, f in enumerate(FAMILIES)}
_ordered = sorted(REGISTRY.values(), key=lambda s: (_rank[s.family], s.id))
REGISTRY.clear()
REGISTRY.update((s.id, s) for s in _ordered)
