"""`gpudoctor check` on failures made on an H200 host (scripts/gpu_fault_logs.py, run 2026-12-02; record in
docs/examples/h200-fault-logs-2026-12-02/README.md): each log, as the program printed it, names its cause, with
nothing left unexplained."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate

FIX = Path(__file__).parent / "fixtures" / "h200-fault-logs"

EXPECTED = {
    "nccl-socket-ifname-none": "SIG033",       # NCCL_SOCKET_IFNAME=nosuchif0
    "nccl-cpu-tensor": "SIG332",               # dist.all_reduce(torch.ones(4)) on the NCCL group
    "cuda-oom": "SIG012",
    "cuda-oom-expandable-segments": "SIG012",  # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    "dataloader-worker-killed": "SIG081",      # a worker SIGKILLed while loading
    "cuda-index-assert": "SIG013",             # nn.Embedding(10) given index 12
    "torchrun-worker-sigterm": "SIG345",       # the worker got SIGTERM
}


def test_every_captured_fault_is_listed():
    assert sorted(p.stem for p in FIX.glob("*.log")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_real_fault_log_names_its_cause(name):
    snap, errors = build_snapshot([str(FIX / f"{name}.log")])
    assert not errors
    findings = {f.rule_id: f for f in evaluate(snap).findings}
    assert EXPECTED[name] in findings, sorted(findings)
    assert "SIG000" not in findings, findings.get("SIG000") and findings["SIG000"].evidence
