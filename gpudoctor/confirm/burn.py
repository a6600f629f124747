"""Run a burn-in (``gpudoctor burn``): :mod:`gpudoctor.confirm.gpuload` ``burn`` in the target interpreter,
streaming its JSON lines; the kernel log's XIDs read before and after.

Ctrl-C (KeyboardInterrupt) or SIGTERM: the worker gets SIGINT, ends at its next round (< 1 s), frees its GPU
memory, prints its final counters and exits; what was measured is kept. Whatever happens, the worker's
process group is killed at the end, so no process (and so no GPU memory) is left behind.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpudoctor.confirm.protocol import parse_load_line
from gpudoctor.confirm.selftest import package_path, worker_env
from gpudoctor.probes.subproc import run_cmd

#: seconds the worker gets after SIGINT before its process group is killed
STOP_GRACE_S = 20.0
#: seconds allowed beyond the burn's duration for torch's import, CUDA start, warm-up and the final reads
OVERHEAD_S = 90.0


@dataclass
class BurnRun:
    """The lines the worker printed, how it ended, and the kernel-log XID lines new since the start."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    timed_out: bool = False
    returncode: int | None = None
    stderr_tail: list[str] = field(default_factory=list)
    new_xids: list[str] = field(default_factory=list)
    xids_readable: bool = False
    seconds: float = 0.0
    leftover_pids: list[int] = field(default_factory=list)


def kernel_xid_lines(timeout_s: float = 10.0) -> list[str] | None:
    """NVRM Xid lines of the kernel log (``dmesg``), or None where it cannot be read (no permission, no dmesg)."""
    from gpudoctor.parsers.dmesg import _XID

    r = run_cmd(["dmesg"], timeout=timeout_s)
    if r.returncode != 0 or r.timed_out or r.missing:
        return None
    return [ln.strip() for ln in (r.stdout or "").splitlines() if _XID.search(ln)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def run_burn(python: str, seconds: float, on_line: Callable[[dict[str, Any]], None] | None = None,
             sample_s: float = 1.0) -> BurnRun:
    """Run the burn-in for ``seconds`` on every GPU; never raises for a failing worker. KeyboardInterrupt
    during the run stops the worker and returns what was measured (``interrupted``)."""
    out = BurnRun()
    before = kernel_xid_lines()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpudoctor-burn-") as tmp:
        pkg = package_path(Path(tmp))
        proc = subprocess.Popen([python, "-m", "gpudoctor.confirm.gpuload", "burn", "--seconds", str(seconds),
                                 "--sample-s", str(sample_s)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env=worker_env(pkg), text=True, errors="replace",
                                start_new_session=True)
        err: list[str] = []

        def drain_err() -> None:
            assert proc.stderr is not None
            for ln in proc.stderr:
                err.append(ln.rstrip())
                del err[:-20]

        te = threading.Thread(target=drain_err, daemon=True)
        te.start()
        deadline = time.monotonic() + seconds + OVERHEAD_S

        def reader() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                obj = parse_load_line(raw)
                if obj is None:
                    continue
                out.lines.append(obj)
                if on_line is not None:
                    on_line(obj)

        tr = threading.Thread(target=reader, daemon=True)
        tr.start()
        try:
            while tr.is_alive():
                tr.join(timeout=0.2)
                if time.monotonic() > deadline:
                    out.timed_out = True
                    _stop(proc)
                    break
        except KeyboardInterrupt:
            out.interrupted = True
            _stop(proc)
        finally:
            tr.join(timeout=STOP_GRACE_S)
            _kill_group(proc)
            out.returncode = proc.poll()
            te.join(timeout=2.0)
            out.stderr_tail = err[-5:]
            if _alive(proc.pid):
                out.leftover_pids.append(proc.pid)
    done = next((ln for ln in out.lines if ln.get("t") == "done"), None)
    if done and done.get("interrupted"):
        out.interrupted = True
    out.seconds = round(time.monotonic() - t0, 2)
    after = kernel_xid_lines()
    if before is not None and after is not None:
        out.xids_readable = True
        seen = set(before)
        out.new_xids = [ln for ln in after if ln not in seen]
    return out


def _signal_group(proc: subprocess.Popen[str], sig: int) -> bool:
    """Send ``sig`` to the worker's process group; False when it is gone (or not ours)."""
    try:
        os.killpg(proc.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGINT to the worker (it ends at its next round and frees its memory); SIGKILL after the grace time."""
    if not _signal_group(proc, signal.SIGINT):
        return
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):  # KeyboardInterrupt: a second Ctrl-C, stop at once
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    _signal_group(proc, signal.SIGKILL)
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        pass
