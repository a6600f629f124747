from pathlib import Path

import pytest

from gpudoctor.facts.model import LibPathFacts, Snapshot
from gpudoctor.parsers.torch_messages import facts_from_texts

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CORPUS = FIX / "corpus"


def case_text(case: str, name: str) -> str:
    return (CORPUS / case / name).read_text()


def snapshot_from_texts(*texts: str, libpath: LibPathFacts | None = None, **overrides) -> Snapshot:
    """A snapshot whose torch / NVML facts come from pasted text (collect_env and/or error messages)."""
    torch, nv = facts_from_texts(texts)
    snap = Snapshot(
        gpudoctor_version="test", created_at="2026-01-01T00:00:00+00:00", torch=torch, nvml=nv, libpath=libpath
    )
    for k, v in overrides.items():
        setattr(snap, k, v)
    return snap


@pytest.fixture
def rules():
    import gpudoctor.rules as r
    return r


def run(snap, rule_id):
    import gpudoctor.rules as r

    rep = r.evaluate(snap, only=[rule_id])
    return rep.outcomes[0], rep.findings
