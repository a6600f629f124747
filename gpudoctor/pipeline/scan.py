"""`gpudoctor scan`: probe this host, run the confirmation runs, evaluate the rules -> one Report."""
from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from gpudoctor.facts.findings import Report
from gpudoctor.pipeline import defaults
from gpudoctor.pipeline.errors import Interrupted, PipelineError


@dataclass
class ScanOptions:
    """What `gpudoctor scan` was asked to do (see its --help)."""

    python: str | None = None
    data_path: str = "."
    torch_timeout_s: float = defaults.TORCH_TIMEOUT_S
    confirm: bool = True
    confirm_timeout_s: float = defaults.CONFIRM_TIMEOUT_S
    baseline: Any = None  #: a facts.perf.PerfBaseline (`--baseline`): the figures are judged against it
    scripts: list[str] = field(default_factory=list)  #: training scripts to lint (`--script`): "Training script" area


def check_options(options: ScanOptions) -> None:
    """Raise PipelineError for an option that cannot work (before anything starts)."""
    from gpudoctor.probes.torch_start import missing_interpreter, resolve_interpreter

    if not os.path.isdir(options.data_path):
        raise PipelineError(f"--data-path {options.data_path}: not a directory")
    if options.python is not None and resolve_interpreter(options.python) is None:
        raise PipelineError(missing_interpreter(options.python))


def run_scan(options: ScanOptions,
             probing_status: Callable[[], AbstractContextManager] = nullcontext) -> Report:
    """Probe, confirm, evaluate. ``probing_status`` is a context manager the caller shows while probing.

    Raises PipelineError (bad option) or Interrupted (Ctrl-C; carries the report of what was found).
    """
    check_options(options)
    from gpudoctor.probes import interrupt
    from gpudoctor.probes.torch_start import start as start_torch_probe

    interrupt.install()  # Ctrl-C from here on: children killed, partial report kept
    start_torch_probe(options.python, options.torch_timeout_s)  # first: its torch import hides everything below
    from gpudoctor.probes.registry import scan as do_scan
    from gpudoctor.probes.runner import ProbeOptions, ScanInterrupted
    from gpudoctor.rules import evaluate

    opts = ProbeOptions(python=options.python, data_path=options.data_path, torch_timeout_s=options.torch_timeout_s)
    try:
        with probing_status():
            snap = do_scan(opts)
    except ScanInterrupted as exc:  # children are already killed; keep what was found
        raise Interrupted("interrupted; reporting what the finished probes found", evaluate(exc.snapshot)) from None
    interrupt.uninstall()  # the confirmation runner handles Ctrl-C (KeyboardInterrupt) itself
    if interrupt.STOP.is_set():  # Ctrl-C right after the probes: do not start the confirmation runs
        raise Interrupted("interrupted; reporting the static checks", evaluate(snap))
    from gpudoctor.confirm.runner import for_scan
    from gpudoctor.reports.progress import RunProgress

    try:
        with RunProgress() as progress:
            snap.confirmation = for_scan(snap, run=options.confirm, timeout_s=options.confirm_timeout_s,
                                         on_progress=progress)
            if snap.confirmation is not None:
                snap.confirmation.baseline = options.baseline
        if snap.confirmation is not None and snap.confirmation.runs and snap.topology is not None:
            from gpudoctor.probes.topology import recheck_nvlink_errors

            recheck_nvlink_errors(snap.topology)  # did the all-reduce make the NVLink error counters rise? (TOP006)
    except KeyboardInterrupt as exc:
        from gpudoctor.probes.subproc import kill_all

        kill_all()  # the runner kills its process groups on the way out; report the static checks
        snap.confirmation = getattr(exc, "facts", snap.confirmation)  # what the ranks had measured
        raise Interrupted("interrupted during the confirmation runs; reporting the static checks",
                          evaluate(snap)) from None
    return _with_scripts(evaluate(snap), options.scripts)


def _with_scripts(report: Report, scripts: list[str]) -> Report:
    """The report with the "Training script" area (`scan --script`) added when scripts were given."""
    if scripts:
        from gpudoctor.lint.hostreport import add_script_area

        add_script_area(report, scripts)
    return report
