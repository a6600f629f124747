"""Console entry point (``gpudoctor`` and ``python -m gpudoctor``).

For ``scan`` it starts the torch probe child (:mod:`gpudoctor.probes.torch_start`, stdlib only) before the
command-line framework and the rest of gpudoctor load, so that their import time hides behind the
child's ``import torch`` instead of adding to it. Everything else is :func:`gpudoctor.cli.app.main`.
"""
from __future__ import annotations

import sys

from gpudoctor.pipeline.defaults import MAX_TIMEOUT_S
from gpudoctor.pipeline.defaults import TORCH_TIMEOUT_S as TORCH_TIMEOUT_DEFAULT


def _option(argv: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` / ``--name=VALUE`` in ``argv`` (the last one wins), else None."""
    value = None
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(name + "="):
            value = a.split("=", 1)[1]
    return value


def early_torch_probe(argv: list[str]) -> bool:
    """Start the torch probe for ``gpudoctor scan ...`` now; True when started. Anything unusual (help,
    another command, an unreadable --torch-timeout) is left to the real parser."""
    if not argv or argv[0] != "scan" or any(a in ("-h", "--help") for a in argv):
        return False
    raw = _option(argv, "--torch-timeout")
    try:
        timeout = float(raw) if raw is not None else TORCH_TIMEOUT_DEFAULT
    except ValueError:
        return False
    if not 1 <= timeout <= MAX_TIMEOUT_S:  # also false for nan; the parser then gives the usage error
        return False
    from gpudoctor.pipeline.start import start_torch_probe_early

    start_torch_probe_early(_option(argv, "--python"), timeout)
    return True


def sigterm_as_sigint() -> None:
    """Handle SIGTERM (sent by timeout(1), systemd, Slurm, Kubernetes) like Ctrl-C: whatever SIGINT handler is
    in force runs (probe phase: children killed, partial report; confirmation runs: every rank ended), and
    gpudoctor exits 130. Without it a terminated gpudoctor would leave its ranks running, holding GPU memory,
    until their own deadline."""
    import signal

    def handler(signum, frame):
        current = signal.getsignal(signal.SIGINT)
        if callable(current):
            current(signal.SIGINT, frame)
        else:  # SIG_IGN inherited (nohup ... &) or SIG_DFL: still stop
            raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):  # not the main thread, or a platform without SIGTERM
        pass


def tolerant_streams() -> None:
    """Let stdout / stderr that cannot encode the report's marks (an ASCII locale with UTF-8 mode off, or
    PYTHONIOENCODING=ascii) print '?' for them instead of failing with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        enc = getattr(stream, "encoding", None) or "ascii"
        try:
            "✓✗·→—".encode(enc)
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="replace")


def main() -> None:
    sigterm_as_sigint()
    tolerant_streams()
    early_torch_probe(sys.argv[1:])
    from gpudoctor.cli.app import main as app_main

    app_main()
