"""Faults set by hand on the H200 host (benchmarks/device/faults.sh, 2026-12-01; outputs in
docs/examples/h200-faults-2026-12-01): each saved report's snapshot, judged again by today's rules, must name the
fault's cause, and the fault-free baseline must stay clean. A rule change that loses one of these fails here."""
from __future__ import annotations

import json
import pathlib

import pytest

from gpudoctor.facts.model import Snapshot
from gpudoctor.rules import evaluate

FAULTS = pathlib.Path(__file__).parent / "fixtures" / "h200-faults"

# case -> (rule that must fire, its severity, a phrase of its evidence)
CASES = {
    "nccl-net-bogus": ("NCL009", "warning", "NCCL_NET=Bogus"),
    "alloc-conf-bogus": ("NCL008", "error", "True or False"),
    "cvd-bad-uuid": ("TRC005", "error", "matches no GPU's UUID"),
    "nccl-ifname-bogus": ("TOP010", "error", "selects no interface"),
    "devshm-1m": ("HST003", "warning", "1 MiB"),
    "gpu-hog-noconfirm": ("GPU008", "warning", "MiB"),
    "taskset-1cpu": ("HST001", "warning", "1 usable logical CPUs"),
    "nccl-algo-bogus": ("NCL001", "error", "'Bogus' is not an algorithm NCCL knows"),
    "local-rank-3": ("NCL010", "warning", "invalid device ordinal"),
}


def _report(name):
    return evaluate(Snapshot.model_validate(json.loads((FAULTS / f"{name}.json").read_text())["snapshot"]))


@pytest.mark.parametrize("name", sorted(CASES))
def test_fault_is_named(name):
    rid, severity, phrase = CASES[name]
    hits = [f for f in _report(name).findings if f.rule_id == rid]
    assert hits, f"{rid} did not fire on {name}"
    assert hits[0].severity == severity and phrase in " ".join(hits[0].evidence)


@pytest.mark.parametrize("name", ["baseline-noconfirm", "ld-stubs-first"])
def test_no_false_alarm(name):
    """The healthy host, and one with a toolkit's stubs/ directory first on LD_LIBRARY_PATH (torch initialised
    CUDA normally there): no error, no warning, and CMP005 passes."""
    rep = _report(name)
    assert [f.rule_id for f in rep.findings if f.severity in ("error", "warning")] == []
    assert next(o for o in rep.outcomes if o.rule_id == "CMP005").status == "pass"


def test_failed_confirmation_run_names_the_catalogue_cause():
    """NCCL_SOCKET_IFNAME=nonexist0 on the H200: the NCCL run failed with a generic 'invalid usage'; CNF001 now
    reads the rank's error and NCCL warnings through the error catalogue, as `gpudoctor check` would, and gives
    that signature's cause and fix instead of the generic transport advice."""
    cnf = next(f for f in _report("nccl-ifname-bogus").findings if f.rule_id == "CNF001")
    assert "known cause (SIG033)" in "\n".join(cnf.evidence)
    assert "NCCL_SOCKET_IFNAME=nonexist0" in "\n".join(cnf.evidence)
    assert "NCCL_SOCKET_IFNAME" in cnf.remedy and cnf.data["signatures"][0] == "SIG033"


@pytest.mark.parametrize("name, sid", [("nccl-net-bogus", "SIG205"), ("nccl-net-ib-full", "SIG205"),
                                       ("alloc-conf-full", "SIG500")])
def test_failed_run_cause_and_the_static_rule_agree(name, sid):
    """Full scans on the H200 after the merge (docs/examples/h200-faults-2026-12-01/after): the NCCL run failed;
    CNF001 names the catalogue's cause of the rank's error, and the static rule (NCL009 / NCL008) names the
    variable before any run."""
    rep = _report(name)
    cnf = next(f for f in rep.findings if f.rule_id == "CNF001")
    assert sid in cnf.data["signatures"]
    assert {"NCL009", "NCL008"} & {f.rule_id for f in rep.findings}
