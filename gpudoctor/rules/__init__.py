"""Rules check the facts and give findings. Importing this package registers every rule family
(:mod:`gpudoctor.rules.families`: one row per family, the only place to edit when adding one); each rule joins its
function (``@rule("ID")``) with its metadata row in rules/rule_meta.toml."""
from __future__ import annotations

import importlib

from gpudoctor.rules.engine import REGISTRY, check_meta, evaluate, rule
from gpudoctor.rules.families import BY_PREFIX, FAMILIES, modules

__all__ = ["REGISTRY", "evaluate", "rule"]

for _name in modules():
    importlib.import_module(f"gpudoctor.rules.{_name}")

_unknown = sorted({s.family for s in REGISTRY.values()} - set(BY_PREFIX))
if _unknown:
    raise ValueError(f"rule families missing from gpudoctor.rules.families: {_unknown}")
check_meta()  # a metadata row of rules/rule_meta.toml without its function fails here
_rank = {f.prefix: i for i, f in enumerate(FAMILIES)}
_ordered = sorted(REGISTRY.values(), key=lambda s: (_rank[s.family], s.id))
REGISTRY.clear()
REGISTRY.update((s.id, s) for s in _ordered)
