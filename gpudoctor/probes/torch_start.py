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


#: where an environment folder (virtualenv, venv, conda env, uv's .venv) keeps its interpreter, in order
ENV_PYTHONS = ("bin/python3", "bin/python", "Scripts/python.exe")


def _env_python(folder: str) -> str | None:
    """The interpreter of an environment folder (``--python .venv``), or None when it has none."""
    for rel in ENV_PYTHONS:
        cand = os.path.join(folder, rel)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def resolve_interpreter(requested: str | None) -> str | None:
    """``--python`` (a name on PATH, a path, or an environment folder such as a virtualenv or conda env, whose
    bin/python3 is used), else this interpreter when it has torch, else ``python3`` on PATH. None when
    ``requested`` does not exist, is not an executable file, or is a folder without an interpreter."""
    if requested:
        if os.path.isdir(requested):
            return _env_python(requested)
        found = shutil.which(requested)  # a name on PATH or a path; only executable files
        if found:
            return found
        ok = os.path.isfile(requested) and os.access(requested, os.X_OK)
        return requested if ok else None
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    return shutil.which("python3") or sys.executable


def missing_interpreter(requested: str) -> str:
    """The one-line reason ``--python requested`` cannot be used (resolve_interpreter gave None)."""
    if os.path.isdir(requested):
        return (f"--python {requested}: a folder without {' or '.join(ENV_PYTHONS[:2])} (give a virtualenv / conda "
                f"environment folder, or the interpreter itself)")
    if os.path.exists(requested):
        return f"--python {requested}: not an executable file"
    return f"--python {requested}: no such interpreter (not found on PATH or as a file)"


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
