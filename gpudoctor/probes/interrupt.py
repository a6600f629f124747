"""SIGINT during a scan: one flag for the whole scan, set by a handler that also kills every child.

Installed by the CLI before the first child starts; probes' children run in their own sessions,
so a terminal Ctrl-C never reaches them and they must be killed here.
"""
from __future__ import annotations

import signal
import threading

STOP = threading.Event()


def _handler(_signum, _frame) -> None:
    STOP.set()
    from gpudoctor.probes.subproc import kill_all

    kill_all()


def install() -> None:
    """Route SIGINT to the flag (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)


def uninstall() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
