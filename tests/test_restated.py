"""One fact, one finding (rules/restated.py): a finding that restates another rule's fact is listed inside it."""
from __future__ import annotations

from gpudoctor.facts.findings import Finding
from gpudoctor.rules.restated import fold_restated


def _f(rid: str, evidence: list[str], severity: str = "error", **data) -> Finding:
    return Finding(rule_id=rid, severity=severity, area="a", title=f"{rid} title", evidence=evidence,
                   remedy=f"{rid} fix", sources=[], data=data)


SMI = "Failed to initialize NVML: Driver/library version mismatch"


def test_a_signature_that_read_the_line_a_fact_rule_quotes_is_folded_into_it():
    drv = _f("DRV001", [f"NVML: {SMI}", "/proc/driver/nvidia/version: not in the inputs"])
    sig = _f("SIG024", ["matched (1 match in smi.txt, line 1):", f"  {SMI} NVML library version: 580.95"],
             conclusion="The user-space NVML library is 580.95.")
    out = fold_restated([sig, drv], {}, {"DRV001": ("DRV001 title", "DRV001 fix")})
    assert out == [drv] and drv.data["restated_by"] == ["SIG024"]
    assert "The user-space NVML library is 580.95." in drv.evidence[-1]
    assert (drv.title, drv.remedy) == ("SIG024 title", "SIG024 fix")  # the generic fact takes the specific fix


def test_a_fact_rule_with_its_own_case_keeps_its_title_and_fix():
    drv = _f("DRV001", [f"NVML: {SMI}"])
    drv.title = "NVML refused: a specific case"
    sig = _f("SIG024", ["matched (1 match):", f"  {SMI}"])
    fold_restated([drv, sig], {}, {"DRV001": ("DRV001 title", "DRV001 fix")})
    assert drv.title == "NVML refused: a specific case" and drv.remedy == "DRV001 fix"


def test_declared_follows_fold_unless_the_follower_is_more_severe():
    cause = _f("TRC003", ["torch 2.1.0+cu121: CUDA runtime 12.1"])
    seen = _f("TRC005", ["torch sees 0 GPU(s), NVML 8"])
    out = fold_restated([seen, cause], {"TRC005": ("TRC003",)})
    assert out == [cause] and "torch sees 0 GPU(s)" in cause.evidence[-1]
    ok = _f("TRC003", ["CUDA 12.4 runs under minor-version compatibility"], severity="info")
    log = _f("SIG002", ["matched (1 match):", "  The NVIDIA driver on your system is too old (found version 11040)"])
    assert fold_restated([ok, log], {"SIG002": ("TRC003",)}) == [ok, log]  # they disagree: both are shown


def test_no_fold_without_the_other_finding_nor_in_a_cycle_nor_on_a_short_common_phrase():
    alone = _f("TRC005", ["torch sees 0 GPU(s)"])
    assert fold_restated([alone], {"TRC005": ("TRC003",)}) == [alone]
    a, b = _f("TRC003", ["x"]), _f("TRC005", ["y"])
    assert len(fold_restated([a, b], {"TRC003": ("TRC005",), "TRC005": ("TRC003",)})) == 2
    short = _f("SIG900", ["matched (1 match):", "  CUDA error"])
    fact = _f("TRC002", ["torch CUDA init: CUDA error"])
    assert len(fold_restated([short, fact], {})) == 2  # under 20 characters: not the same line
