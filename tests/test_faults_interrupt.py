"""Ctrl-C (SIGINT) and SIGTERM during the confirmation runs and during their probes (issue 6; docs/reliability.md).

`gpudoctor smoke --cpu --nproc 2` with rank 1 hanging in the DDP step: SIGINT to gpudoctor ends it with
exit 130, and no launcher or rank process (found by the run's environment marker) and no run folder is
left. SIGINT while smoke is still probing (NVML init hanging): exit 130 'interrupted', not an internal
error, and the NVML worker is gone. The scan's case is tests/test_cli.py.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import (
    SESSION_ENV,
    SESSION_ID,
    needs_torch,  # noqa: E402
)

from gpudoctor.confirm.plan import FAULT_ENV, RUN_ENV

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def marked(name: str, value: str | None = None) -> list[psutil.Process]:
    """Live processes of this test session whose environment has ``name`` (containing ``value`` when given)."""
    out = []
    for p in psutil.process_iter():
        try:
            env = p.environ()
            if name in env and (value is None or value in env[name]) and env.get(SESSION_ENV) == SESSION_ID \
                    and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


def start(args, env, tmp_path):
    e = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", TMPDIR=str(tmp_path))
    e.pop(FAULT_ENV, None)
    e.update(env)
    return subprocess.Popen([sys.executable, "-m", "gpudoctor", *args], env=e, cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(pred, limit: float) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def joined(tmp_path: Path) -> bool:
    states = []
    for p in tmp_path.glob("gpudoctor-confirm-*/state-rank*.json"):
        try:
            states.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            return False
    return len(states) == 2 and all(s.get("joined") for s in states)


@needs_torch
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])  # SIGTERM: timeout(1), systemd, Slurm, k8s
def test_sigint_during_smoke_with_a_hanging_rank_leaves_nothing(tmp_path, sig):
    save = tmp_path / "partial.json"
    p = start(["smoke", "--cpu", "--nproc", "2", "--timeout", "60", "--no-baseline", "--save", str(save)],
              {FAULT_ENV: "1:hang:ddp"}, tmp_path)
    try:
        assert wait_for(lambda: joined(tmp_path), 45), "the ranks never joined"
        time.sleep(0.5)                                          # rank 1 is now hanging, rank 0 waits for it
        run_pids = [q.pid for q in marked(RUN_ENV)]
        assert len(run_pids) >= 3                                # the launcher and both ranks
        t0 = time.monotonic()
        p.send_signal(sig)
        out, err = p.communicate(timeout=20)
        assert time.monotonic() - t0 < 10                        # not left to run into --timeout 60
        assert p.returncode == 130 and "Traceback" not in err
        # issue 15 item 5: the partial report is printed and saved (the README's promise), as scan does
        assert "Confirmation" in out and "interrupted" in err
        doc = json.loads(save.read_text())
        assert doc["snapshot"]["confirmation"]["status"] == "interrupted"
        assert doc["snapshot"]["confirmation"]["world_size"] == 2
        assert wait_for(lambda: not [q for q in run_pids if psutil.pid_exists(q)
                                     and psutil.Process(q).status() != psutil.STATUS_ZOMBIE], 3)
        assert marked(RUN_ENV) == []
        assert list(tmp_path.glob("gpudoctor-confirm-*")) == []  # the run folder is removed too
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for q in marked(RUN_ENV):
            q.kill()


def test_sigint_while_smoke_is_probing_is_exit_130(tmp_path):
    """NVML init hangs (a fake pynvml first on PYTHONPATH); Ctrl-C then: exit 130, no internal error, no worker left."""
    fake = tmp_path / "fakenvml"
    fake.mkdir()
    (fake / "pynvml.py").write_text(
        "import time\ndef nvmlInit():\n    time.sleep(120)\nclass NVMLError(Exception): pass\n"
    )
    save = tmp_path / "partial.json"
    p = start(["smoke", "--cpu", "--nproc", "2", "--save", str(save)], {"PYTHONPATH": f"{ROOT}{os.pathsep}{fake}"},
              tmp_path)
    try:
        assert wait_for(lambda: len(marked("PYTHONPATH", str(fake))) >= 2, 20)  # gpudoctor and its NVML worker
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
        assert p.returncode == 130 and "Traceback" not in err and "interrupted" in err
        doc = json.loads(save.read_text())
        assert "interrupted" in out and doc["snapshot"]["confirmation"]["status"] == "interrupted"
        assert wait_for(lambda: marked("PYTHONPATH", str(fake)) == [], 3)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for q in marked("PYTHONPATH", str(fake)):
            q.kill()
