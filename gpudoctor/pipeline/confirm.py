"""`gpudoctor smoke` and `gpudoctor bench allreduce`: probe what the CNF rules need, run, evaluate the CNF rules."""
from __future__ import annotations

from typing import Any

from gpudoctor.facts.findings import Report
from gpudoctor.pipeline import defaults
from gpudoctor.pipeline.errors import PipelineError


def run_confirm(cpu: bool, python: str | None, nproc: int | None, timeout_s: float, keep_logs: bool,
                **plan: Any) -> Report:
    """One confirmation run (the plan: tasks, model, sizes, ...) -> a Report of the CNF rules only.

    Raises PipelineError for bad options, no GPU without --cpu, or a run that could not start."""
    from gpudoctor.confirm.runner import confirm
    from gpudoctor.probes.cpu import probe_cpu
    from gpudoctor.probes.env import probe_env
    from gpudoctor.probes.host import probe_host
    from gpudoctor.probes.nvml import probe_nvml
    from gpudoctor.probes.registry import scan as do_scan
    from gpudoctor.probes.runner import Probe, ProbeFailed, ProbeOptions
    from gpudoctor.probes.subproc import run_cmd
    from gpudoctor.probes.torch_probe import choose_interpreter
    from gpudoctor.reports.progress import RunProgress
    from gpudoctor.rules import REGISTRY, evaluate

    if nproc is not None and nproc < 1:
        raise PipelineError("--nproc must be at least 1")
    try:
        interp = choose_interpreter(python)
    except ProbeFailed as exc:
        raise PipelineError(str(exc)) from None
    check = run_cmd([interp, "-c", "import sys; print('GPUDOCTOR_PY', sys.version_info[0])"],
                    timeout=defaults.PYTHON_CHECK_TIMEOUT_S)
    if "GPUDOCTOR_PY 3" not in (check.stdout or ""):
        raise PipelineError(
            f"--python {interp}: not a Python 3 interpreter (`{interp} -c 'import sys'` did not answer)"
        )
    probes = [Probe("host", "host", probe_host), Probe("env", "env", probe_env), Probe("cpu", "cpu", probe_cpu),
              Probe("nvml", "nvml", probe_nvml, timeout_s=lambda o: o.nvml_timeout_s + 5)]
    from gpudoctor.confirm.runner import INTERRUPTED, ConfirmInterrupted
    from gpudoctor.facts.model import ConfirmationFacts
    from gpudoctor.probes.runner import ScanInterrupted

    cnf_only = [rid for rid in REGISTRY if rid.startswith("CNF")]
    try:
        snap = do_scan(ProbeOptions(python=interp), probes)
    except ScanInterrupted as exc:  # Ctrl-C / SIGTERM before the run: report the probes (exit 130 in emit)
        snap = exc.snapshot
        snap.confirmation = ConfirmationFacts(status="interrupted", reason=INTERRUPTED + " (before the run started)")
        return evaluate(snap, only=cnf_only)
    if not cpu and not (snap.nvml and snap.nvml.available and snap.nvml.gpus):
        why = snap.nvml.error if snap.nvml and snap.nvml.error else "NVML sees no GPU"
        raise PipelineError(f"no NVIDIA GPU to run on ({why}); --cpu runs the same code with gloo on CPU")
    try:
        with RunProgress() as progress:
            snap.confirmation = confirm(python=interp, cpu=cpu,
                                        nproc=nproc if nproc else (defaults.CPU_NPROC if cpu else 0),
                                        timeout_s=timeout_s, on_progress=progress, keep_logs=keep_logs, **plan)
    except ValueError as exc:
        raise PipelineError(str(exc)) from None
    except ConfirmInterrupted as exc:  # the ranks are ended; report what they measured (exit 130 in emit)
        snap.confirmation = exc.facts
    if snap.confirmation.status == "error":
        raise PipelineError(f"the run could not start: {snap.confirmation.reason}")
    snap.duration_s = snap.confirmation.seconds
    return evaluate(snap, only=cnf_only)
