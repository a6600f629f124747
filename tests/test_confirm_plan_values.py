"""Issue 15 item 8: a value gpudoctor changes is refused or reported; failed starts leave nothing in /tmp; without
torch the message names --python."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.confirm.collectives import timed_calls
from gpudoctor.facts.model import AllReduceResult, ConfirmationFacts
from gpudoctor.reports.confirm_view import render_confirmation

ROOT = Path(__file__).resolve().parents[1]
MiB = 1024 ** 2


@pytest.mark.parametrize(("iters", "size", "calls"), [
    (1, 1 * MiB, 1), (1, 1024 * MiB, 1), (2, 512 * MiB, 2), (20, 1024 * MiB, 10), (4, 256 * MiB, 3), (20, MiB, 20)])
def test_never_more_calls_than_asked(iters: int, size: int, calls: int) -> None:
    assert timed_calls(iters, size) == calls <= iters


def test_the_report_shows_the_calls_run() -> None:
    from rich.console import Console

    from gpudoctor.confirm.analysis import stat

    facts = ConfirmationFacts(status="ok", world_size=2, backend="gloo", device="cpu", tasks=["allreduce"],
                              allreduce=[AllReduceResult(dtype="float32", size_bytes=1024 * MiB, iters=10,
                                                         time_s=stat([0.5, 0.6]), correct=True)])
    con = Console(width=140, record=True)
    render_confirmation(facts, con)
    text = con.export_text()
    assert "calls" in text and " 10 " in text


def test_a_start_without_torch_names_python_and_leaves_no_folder(tmp_path: Path) -> None:
    bare = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "gpudoctor", "smoke", "--cpu", "--python", str(bare / "bin" / "python")],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--python" in p.stderr and "cannot import torch" in p.stderr, p.stderr
    assert list(tmp_path.glob("gpudoctor-confirm-*")) == []
    p = subprocess.run([sys.executable, "-m", "gpudoctor", "cuda-version-check", "--driver", "R580", "--python",
                        str(bare)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--python PATH" in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
