"""Shared test helpers: snapshots built from REAL captures (tests/fixtures/h200), then edited per test."""
from __future__ import annotations

import copy
import json
import os
import uuid
from pathlib import Path

import pytest

from gpudoctor.facts.model import Snapshot
from gpudoctor.probes.nvml import assemble

FIX = Path(__file__).parent / "fixtures"

#: Every process this test session starts inherits this marker, so leftover checks (psutil) count only
#: our own processes, never those of another test session running on the same machine.
SESSION_ENV = "GPUDOCTOR_TEST_SESSION"
SESSION_ID = os.environ.setdefault(SESSION_ENV, uuid.uuid4().hex)
H200 = FIX / "h200"


def h200_report_json() -> dict:
    return json.loads((H200 / "scan.json").read_text())


@pytest.fixture
def h200_snap() -> Snapshot:
    """The snapshot `gpudoctor scan --json` produced on the H200 host (1 GPU, healthy)."""
    return Snapshot.model_validate(copy.deepcopy(h200_report_json()["snapshot"]))


@pytest.fixture
def h200_busy_snap(h200_snap) -> Snapshot:
    """The H200 snapshot with NVML facts read during a bf16 matmul load (SW power cap active)."""
    facts, _, _ = assemble((H200 / "nvml-worker-busy.jsonl").read_text().splitlines())
    h200_snap.nvml = facts
    return h200_snap


@pytest.fixture
def cpu_host_snap(h200_snap) -> Snapshot:
    """A host without an NVIDIA driver: NVML unusable, CPU-only torch."""
    h200_snap.nvml.available = False
    h200_snap.nvml.error = "NVMLError_LibraryNotFound: NVML Shared Library Not Found"
    h200_snap.nvml.gpus = []
    h200_snap.nvml.gpu_count = 0
    h200_snap.nvml.driver_version = None
    h200_snap.nvml.cuda_driver_version = None
    t = h200_snap.torch
    t.version, t.cuda, t.cuda_available, t.device_count, t.devices, t.arch_list = "2.13.0+cpu", None, False, 0, [], []
    # the H200's torchvision 0.26.0+cu130 / torchaudio 2.11.0+cu130 do not belong to torch 2.13.0+cpu (CMP001)
    t.torchvision_version = t.torchaudio_version = None
    return h200_snap


def ids(report, severity=None):
    """Rule ids of a report's findings (optionally of one severity)."""
    return sorted({f.rule_id for f in report.findings if severity is None or f.severity == severity})


def outcome(report, rule_id):
    return next(o for o in report.outcomes if o.rule_id == rule_id)


@pytest.fixture
def fix():
    return FIX


import importlib.util as _ilu  # noqa: E402

# Tests that start real torch processes (gloo confirmation runs, torchrun cluster agents). torch is an
# optional dependency of gpudoctor; CI installs the CPU wheel so these run there.
needs_torch = pytest.mark.skipif(_ilu.find_spec("torch") is None,
                                 reason="needs torch (any build; CI installs the CPU wheel)")
