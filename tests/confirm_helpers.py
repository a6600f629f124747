"""Helpers for the confirmation-run tests: facts rebuilt from REAL captures (tests/fixtures/confirm).

The gloo-2rank-* folders are what the worker left in its run folder on this project's 2-core CI
machine (torch 2.13 CPU, gloo, world size 2): a clean run, a rank hanging in the first all-reduce,
a rank exiting during the DDP steps, a rank that never joined the rendezvous (fault injection
through GPUDOCTOR_CONFIRM_FAULT). h2d.txt and bert-base-step.txt come from the H200 host.
"""
from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

from gpudoctor.confirm.analysis import stat
from gpudoctor.confirm.runner import collect, facts_from
from gpudoctor.facts.model import ConfirmationFacts, CopyResult, Snapshot

FIX = Path(__file__).parent / "fixtures"
CONF = FIX / "confirm"
H200 = FIX / "h200"


def h200_snap() -> Snapshot:
    """The snapshot `gpudoctor scan --json` produced on the H200 host (1 GPU, healthy)."""
    return Snapshot.model_validate(copy.deepcopy(json.loads((H200 / "scan.json").read_text())["snapshot"]))


def capture_launch(name: str, run_name: str = "main", env=None, where: Path | None = None):
    d = where or (CONF / name)
    spec = json.loads((d / "spec.json").read_text())
    return collect(d, spec, name=run_name, env_extra=env), spec


def capture_facts(name: str) -> ConfirmationFacts:
    launched, spec = capture_launch(name)
    return facts_from(launched, spec, "/work/venv/bin/python")


def h200_copy(kind: str = "pinned") -> tuple[float, float]:
    """(H2D, D2H) GB/s of the H200 capture h2d.txt, for pinned or pageable host memory."""
    text = (CONF / "h2d.txt").read_text()
    m = re.search(rf"pinned={'True' if kind == 'pinned' else 'False'} H2D ([\d.]+) GB/s\s+D2H ([\d.]+) GB/s", text)
    return float(m.group(1)), float(m.group(2))


def h200_copy_facts(snap: Snapshot, kind: str = "pinned") -> ConfirmationFacts:
    """Confirmation facts of the H200 (1 GPU) with the copy figures of the capture."""
    g = snap.nvml.gpus[0]
    h2d, d2h = h200_copy(kind)
    return ConfirmationFacts(
        status="ok",
        backend="nccl",
        device="cuda",
        world_size=1,
        tasks=["copy", "allreduce", "ddp"],
        copies=[
            CopyResult(
                rank=0,
                device_index=0,
                uuid=g.uuid.removeprefix("GPU-"),
                pci_bus_id=g.pci_bus_id,
                size_bytes=1 << 30,
                h2d_gbs=stat([h2d]),
                d2h_gbs=stat([d2h]),
            )
        ],
    )


def copy_capture(name: str, dst: Path) -> Path:
    """A writable copy of a capture folder (tests add files next to it; the capture stays untouched)."""
    out = dst / name
    shutil.copytree(CONF / name, out)
    return out
