"""Start the torch probe child as early as possible (stdlib only, so the CLI can call it first).

Importing torch in the target interpreter is the slowest part of a scan (~4 s on the H200 host);
starting that child before gpudoctor imports its own modules hides them behind it.
:func:`gpudoctor.probes.torch_probe.probe_torch` picks the started child up with :func:`take`.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import threading
from pathlib import Path

from gpudoctor.probes.subproc import CmdResult, run_cmd

SCRIPT = Path(__file__).with_name("torch_script.py")
_started: dict[str, tuple[threading.Thread, dict]] = {}


def resolve_interpreter(requested: str | None) -> str | None:
    """``--python`` (a name on PATH or a path), else this interpreter when it has torch, else ``python3``
    on PATH. None when ``requested`` does not exist or is not an executable file."""
    if requested:
        found = shutil.which(requested)  # a name on PATH or a path; only executable files
        if found:
            return found
        ok = os.path.isfile(requested) and os.access(requested, os.X_OK)
        return requested if ok else None
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    return shutil.which("python3") or sys.executable


def start(requested: str | None, timeout_s: float) -> None:
    """Launch the torch probe child for ``requested`` in a background thread (no-op if unresolvable)."""
    python = resolve_interpreter(requested)
    if python is None or python in _started:
        return
    box: dict = {}
    th = threading.Thread(target=lambda: box.update(res=run_cmd([python, str(SCRIPT)], timeout=timeout_s)),
                          name="torch-probe-early", daemon=True)
    th.start()
    _started[python] = (th, box)


def take(python: str, timeout_s: float) -> CmdResult | None:
    """The result of a child started by :func:`start` for ``python`` (waits for it), or None."""
    entry = _started.pop(python, None)
    if entry is None:
        return None
    th, box = entry
    th.join(timeout_s + 5)
    return box.get("res")
