"""Run the probes concurrently; a probe that fails, hangs or crashes becomes a ProbeError.

Each probe runs in a daemon thread (so a probe stuck in a kernel read can never keep
the process alive). Probes that call native code that can crash (NVML) or import
slow libraries (torch) run their work in child processes of their own; see
:mod:`gpudoctor.probes.nvml` and :mod:`gpudoctor.probes.torch_probe`.
"""
from __future__ import annotations

import datetime as _dt
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from gpudoctor import __version__
from gpudoctor.facts.model import ProbeError, Snapshot

ProbeErrorKind = Literal["error", "timeout", "crash", "missing", "interrupted"]  # ProbeError.kind


class ScanInterrupted(Exception):
    """SIGINT arrived during the scan; ``snapshot`` holds what the finished probes found."""

    def __init__(self, snapshot: Snapshot):
        super().__init__("interrupted")
        self.snapshot = snapshot


class ProbeFailed(Exception):
    """Raised by a probe to report a failure with a clean one-line message."""

    def __init__(self, message: str, kind: ProbeErrorKind = "error",
                 partial: Any = None):
        super().__init__(message)
        self.kind = kind
        self.partial = partial


@dataclass
class ProbeOptions:
    """What the user asked for that probes need.

    ``python``: the target interpreter for the torch probe (None = auto).
    ``data_path``: the directory whose filesystem the storage probe inspects.
    ``torch_timeout_s`` / ``nvml_timeout_s``: hard limits for those child processes.
    ``tool_timeout_s``: hard limit for each helper program (``nvidia-smi topo -m``, ``lspci -vvv``);
    a hung one is killed with its process group and recorded as the probe's error for that part.
    """

    python: str | None = None
    data_path: str = "."
    torch_timeout_s: float = 90.0
    nvml_timeout_s: float = 30.0
    probe_timeout_s: float = 20.0
    tool_timeout_s: float = 15.0


@dataclass
class Probe:
    name: str
    section: str  # the Snapshot field it fills
    func: Callable[[ProbeOptions], Any]
    timeout_s: Callable[[ProbeOptions], float] = field(default=lambda o: o.probe_timeout_s)


def _run_one(probe: Probe, opts: ProbeOptions, out: dict) -> None:
    t0 = time.perf_counter()
    try:
        out["value"] = probe.func(opts)
    except ProbeFailed as exc:
        out["error"] = ProbeError(probe=probe.name, kind=exc.kind, message=str(exc),
                                  seconds=round(time.perf_counter() - t0, 3))
        out["value"] = exc.partial
    except Exception as exc:  # a probe bug must not take the scan down
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
        out["error"] = ProbeError(probe=probe.name, kind="error",
                                  message=f"{type(exc).__name__}: {exc}{where}",
                                  seconds=round(time.perf_counter() - t0, 3))
    out["seconds"] = round(time.perf_counter() - t0, 3)
    out["done"] = True


def _sigint_routed() -> bool:
    import signal

    from gpudoctor.probes import interrupt

    return signal.getsignal(signal.SIGINT) is interrupt._handler


def run_probes(probes: list[Probe], opts: ProbeOptions) -> Snapshot:
    """Run ``probes`` concurrently (in list order of start) and assemble a Snapshot.

    Returns a Snapshot whose sections are filled by the probes that succeeded; the
    others appear in ``probe_errors``. Never raises for a probe failure.
    """
    t0 = time.perf_counter()
    started = _dt.datetime.now(_dt.timezone.utc)
    snap = Snapshot(gpudoctor_version=__version__, created_at=started.isoformat(timespec="seconds"),
                    data_path=opts.data_path)
    from gpudoctor.probes import interrupt

    slots: list[tuple[Probe, dict, threading.Thread, float]] = []
    stop = interrupt.STOP
    installed_here = False
    if threading.current_thread() is threading.main_thread() and not _sigint_routed():
        interrupt.install()
        installed_here = True
    try:
        for probe in probes:
            out: dict = {}
            th = threading.Thread(target=_run_one, args=(probe, opts, out), name=f"probe-{probe.name}", daemon=True)
            slots.append((probe, out, th, time.perf_counter() + probe.timeout_s(opts)))
            th.start()
        for _, out, th, deadline in slots:
            # short joins so the SIGINT flag is seen promptly; not Thread.is_alive(), which a
            # signal can leave wrong (CPython bpo-45274): each probe sets its own "done" flag.
            while not out.get("done") and not stop.is_set() and time.perf_counter() < deadline:
                th.join(min(0.1, max(0.0, deadline - time.perf_counter())))
        if stop.is_set():
            # children were killed; quick in-process probes may still finish: a short grace for them
            grace = time.perf_counter() + 1.0
            for _, out, th, _ in slots:
                while not out.get("done") and time.perf_counter() < grace:
                    th.join(0.05)
    finally:
        if installed_here:
            interrupt.uninstall()
    # after SIGINT every probe that did not finish cleanly was cut short by it (its child was killed)
    cut = {p.name for p, o, _, _ in slots if not o.get("done") or "error" in o} if stop.is_set() else set()
    interrupted = stop.is_set()
    for probe, out, _th, _deadline in slots:
        if interrupted and probe.name in cut:
            snap.probe_errors.append(ProbeError(probe=probe.name, kind="interrupted",
                                                message="interrupted (SIGINT or SIGTERM) before it finished",
                                                seconds=round(time.perf_counter() - t0, 3)))
            continue
        if not out.get("done"):
            snap.probe_errors.append(ProbeError(probe=probe.name, kind="timeout",
                                                message=f"no result within {probe.timeout_s(opts):.0f} s; abandoned",
                                                seconds=round(time.perf_counter() - t0, 3)))
            continue
        if out.get("value") is not None:
            setattr(snap, probe.section, out["value"])
        if "error" in out:
            snap.probe_errors.append(out["error"])
        snap.probe_seconds[probe.name] = out.get("seconds", 0.0)
    snap.duration_s = round(time.perf_counter() - t0, 3)
    if interrupted:
        raise ScanInterrupted(snap)
    return snap
