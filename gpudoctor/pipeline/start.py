"""The torch probe child, started before the command-line framework loads (see :mod:`gpudoctor.cli.entry`)."""
from __future__ import annotations


def start_torch_probe_early(python: str | None, timeout_s: float) -> None:
    """Install the Ctrl-C handler and start the torch probe child now (stdlib-only modules)."""
    import atexit

    from gpudoctor.probes import interrupt, subproc, torch_start

    interrupt.install()  # Ctrl-C from now on kills the child and still gives the partial report (exit 130)
    torch_start.start(python, timeout_s)
    atexit.register(subproc.kill_all)  # a usage error below must not leave the child running
