"""Unknown is never a pass: every node rule, run on snapshots where the facts it reads are unknown.

For each rule the facts it reads are recorded on real snapshots (attribute reads on the facts models), then
made unknown three ways; on none of them may the rule say *pass*:

1. every Snapshot section it reads is missing (the probe failed / the input lacked it): never a pass;
2. every optional field it reads inside the sections is None (NVML errors on every query, a paste without
   those columns): never a pass when all the facts it read were such fields. A rule that also read a list or a
   dict (P2P status, NVLink states, environment variables, log signatures) had a known input left and may
   decide on it; identity fields (index, name, kind, ...) and the sections' presence are not inputs.

Fields whose None is a *known* value by the model's own definition are left as they are (listed below with
the model's words).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from gpudoctor.facts import model as M
from gpudoctor.parsers.offline import build_snapshot, load_path
from gpudoctor.rules import REGISTRY
from gpudoctor.rules.engine import Ctx, evaluate

FIX = Path(__file__).parent / "fixtures"

#: None is a value here, not "unknown" (facts/model.py descriptions)
#: names that identify an object or say whether a section is there: not facts a rule judges
STRUCTURE = {"index", "gpu", "a", "b", "name", "kind", "label", "link", "bdf", "source", "available", "gpus",
             "known_fields", "inputs", "path"}

NONE_IS_KNOWN = {
    (M.HostFacts, "virtualization"),  # "hypervisor vendor (e.g. KVM) or None when none was detected"
    (M.TorchFacts, "cuda"),           # "torch.version.cuda; None on a CPU-only build"
    (M.TorchFacts, "hip"),            # torch.version.hip; None on a non-ROCm build
    (M.TorchFacts, "cuda_error"),     # "warning or error text from CUDA initialisation": None = none printed
    (M.InputFile, "note"),            # set when an input was recognised but not parsed; None = parsed
}


def _bases() -> list[M.Snapshot]:
    snaps = [load_path(str(FIX / "h200x2" / "scan.json")), load_path(str(FIX / "h200" / "scan.json"))]
    text, _ = build_snapshot([str(FIX / "h200-text")])
    if text is not None:
        snaps.append(text)
    return snaps


BASES = _bases()


def _reads(spec, snap) -> set[tuple[type, str]]:
    """(model class, field) pairs the rule reads on ``snap``."""
    reads: set[tuple[type, str]] = set()

    def spy(self, name):
        if not name.startswith("_") and name in type(self).model_fields:
            reads.add((type(self), name))
        return object.__getattribute__(self, name)

    M._Model.__getattribute__ = spy  # type: ignore[method-assign]
    try:
        try:
            list(spec.func(Ctx(snap, spec)) or [])
        except Exception:  # NotAssessed / NotApplicable / anything: only the reads matter here
            pass
    finally:
        del M._Model.__getattribute__
    return reads


def _optional(cls: type, name: str) -> bool:
    f = cls.model_fields[name]
    return not f.is_required() and f.default is None


def _all_optional(reads: set[tuple[type, str]]) -> bool:
    """True when every fact the rule read (below the Snapshot sections) can be None, i.e. variant 2 hid them all."""
    facts = [(c, n) for c, n in reads if c is not M.Snapshot and n not in STRUCTURE and (c, n) not in NONE_IS_KNOWN]
    return bool(facts) and all(_optional(c, n) for c, n in facts)


def _hollow(snap: M.Snapshot, reads: set[tuple[type, str]]) -> M.Snapshot:
    out = snap.model_copy(deep=True)

    def walk(obj, top: bool) -> None:
        if isinstance(obj, BaseModel):
            for name in type(obj).model_fields:
                value = getattr(obj, name)
                read = (type(obj), name) in reads and (type(obj), name) not in NONE_IS_KNOWN
                if read and _optional(type(obj), name) and not (top and isinstance(value, BaseModel)):
                    setattr(obj, name, None)
                else:
                    walk(value, False)
        elif isinstance(obj, (list, tuple)):
            for x in obj:
                walk(x, False)
        elif isinstance(obj, dict):
            for x in obj.values():
                walk(x, False)

    walk(out, True)
    out.known_fields = {}  # what is left is known in full: the rule cannot lean on partial-text markers
    return out


NODE_RULES = [rid for rid, spec in REGISTRY.items() if spec.scope == "node"]


@pytest.mark.parametrize("rid", NODE_RULES)
def test_no_rule_passes_on_unknown_inputs(rid):
    spec = REGISTRY[rid]
    for base in BASES:
        reads = _reads(spec, base)
        sections = {n for c, n in reads if c is M.Snapshot and _optional(M.Snapshot, n)}
        missing = base.model_copy(deep=True)
        for name in sections:
            setattr(missing, name, None)
        variants = {"sections missing": missing} if sections else {}
        if _all_optional(reads):
            variants["fields None"] = _hollow(base, reads)
        for how, snap in variants.items():
            outcome = evaluate(snap, only=[rid]).outcomes[0]
            assert outcome.status != "pass", (
                f"{rid} passes with its inputs unknown ({how}; base {base.inputs[0].path if base.inputs else 'scan'};"
                f" reads {sorted(n for _, n in reads)})")


def test_the_spy_sees_reads():
    """The test above is only as good as the read recording: GPU001 must be seen reading the temperatures."""
    reads = {n for _, n in _reads(REGISTRY["GPU001"], BASES[0])}
    assert {"temperature_c", "temperature_slowdown_c", "gpus"} <= reads


def test_nvml_errors_on_every_gpu_are_not_a_pass():
    """The issue's case: NVML answered the GPU list but every query failed -> GPU001/GPU004 not assessed."""
    nv = M.NvmlFacts(source="t", available=True, gpus=[M.GpuFacts(index=0, errors={"temperature": "Unknown Error"}),
                                                        M.GpuFacts(index=1)], gpu_count=2)
    snap = M.Snapshot(gpudoctor_version="x", created_at="x", nvml=nv)
    out = {o.rule_id: o for o in evaluate(snap, only=["GPU001", "GPU004"]).outcomes}
    assert out["GPU001"].status == "not_assessed" and "Unknown Error" in out["GPU001"].reason
    assert out["GPU004"].status == "not_assessed"


def test_one_unknown_gpu_makes_a_quiet_rule_not_assessed():
    nv = M.NvmlFacts(source="t", available=True, gpu_count=2, gpus=[
        M.GpuFacts(index=0, temperature_c=40, temperature_slowdown_c=90), M.GpuFacts(index=1)])
    snap = M.Snapshot(gpudoctor_version="x", created_at="x", nvml=nv)
    o = evaluate(snap, only=["GPU001"]).outcomes[0]
    assert o.status == "not_assessed" and "GPU 1" in o.reason
    nv.gpus[1].temperature_c, nv.gpus[1].temperature_slowdown_c = 95, 90
    assert evaluate(snap, only=["GPU001"]).outcomes[0].status == "fail"


def _collect_env_snapshot(tmp_path, cuda_line: str) -> M.Snapshot:
    text = (FIX / "h200-text" / "collect_env.txt").read_text()
    text = text.replace("PyTorch version: 2.11.0+cu130", "PyTorch version: 2.11.0+cpu")
    text = text.replace("CUDA used to build PyTorch: 13.0", cuda_line)
    path = tmp_path / "collect_env.txt"
    path.write_text(text)
    snap, errors = build_snapshot([str(path)])
    assert snap is not None and not errors
    return snap


def test_cpu_only_build_stated_by_collect_env_is_known(tmp_path):
    """collect_env prints "Could not collect" for torch.version.cuda = None: a CPU-only build, with GPUs -> TRC002."""
    snap = _collect_env_snapshot(tmp_path, "CUDA used to build PyTorch: Could not collect")
    o = evaluate(snap, only=["TRC002"])
    assert o.outcomes[0].status == "fail", o.outcomes[0]
    assert "torch.version.cuda = None" in o.findings[0].evidence[0]


def test_collect_env_without_the_cuda_line_is_not_assessed(tmp_path):
    """The line absent (a cut paste): the build is unknown -> TRC002 not assessed, never a pass."""
    snap = _collect_env_snapshot(tmp_path, "")
    assert evaluate(snap, only=["TRC002"]).outcomes[0].status == "not_assessed"
