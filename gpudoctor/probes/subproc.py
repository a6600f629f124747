"""Run helper programs safely: argument lists only (never a shell), always a timeout."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass
class CmdResult:
    """Outcome of :func:`run_cmd`.

    ``returncode`` is negative when the child died of a signal (``-11`` = SIGSEGV);
    ``timed_out`` is True when it was killed at the timeout; ``missing`` when the
    executable does not exist.
    """

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    missing: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.missing

    def describe_failure(self) -> str:
        """One line saying why the command failed (for a probe error)."""
        name = os.path.basename(self.argv[0]) if self.argv else "?"
        if self.missing:
            return f"{name}: not found"
        if self.timed_out:
            return f"{name}: no answer within the timeout; killed"
        if self.returncode is not None and self.returncode < 0:
            try:
                sig = signal.Signals(-self.returncode).name
            except ValueError:
                sig = f"signal {-self.returncode}"
            return f"{name}: crashed ({sig})"
        tail = (self.stderr.strip() or self.stdout.strip()).splitlines()[-1:] or [""]
        return f"{name}: exit code {self.returncode}: {tail[0][:300]}"


_LIVE: set = set()
_LIVE_LOCK = threading.Lock()
_KILLING = threading.Event()  # set by kill_all: a child registered afterwards is killed at once


def kill_all() -> int:
    """Kill the process group of every child started by :func:`run_cmd` that is still running.

    Used on SIGINT: the children run in their own sessions (so a terminal Ctrl-C does not
    reach them) and must not outlive gpudoctor. Returns how many were killed.
    """
    _KILLING.set()
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        _kill_group(proc)
    return len(procs)


def run_cmd(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    cwd: str | None = None,
) -> CmdResult:
    """Run ``argv`` (no shell) with a hard ``timeout`` in seconds.

    The child gets its own process group so that on timeout the whole group
    (grandchildren too) is killed. Never raises for a missing executable, a
    non-zero exit, a crash or a timeout: those are reported in the result.
    ``cwd``: the child's working directory (None = ours).
    """
    argv = [str(a) for a in argv]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
            text=True,
            errors="replace",
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        return CmdResult(argv, None, "", str(exc), missing=True)
    except OSError as exc:  # e.g. ENOEXEC: a file that is not a program
        return CmdResult(argv, None, "", str(exc), missing=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    if _KILLING.is_set():  # SIGINT landed between Popen and the registration above
        _kill_group(proc)
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout)
        return CmdResult(argv, proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:
            out, err = "", ""
        return CmdResult(argv, proc.returncode, out or "", err or "", timed_out=True)
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
