"""`gpudoctor selftest` and `gpudoctor baseline save`: the probes and runs behind the performance commands
(issue 16); the CLI (:mod:`gpudoctor.cli.perf`) parses options and renders."""
from __future__ import annotations

import time
from typing import Any

from gpudoctor.facts.findings import Report
from gpudoctor.pipeline.errors import PipelineError


def interpreter(python: str | None) -> str:
    """The interpreter whose torch runs the GPU work. Raises PipelineError when none is usable."""
    from gpudoctor.probes.runner import ProbeFailed
    from gpudoctor.probes.torch_probe import choose_interpreter

    try:
        return choose_interpreter(python)
    except ProbeFailed as exc:
        raise PipelineError(str(exc)) from None


def run_selftest_report(python: str | None, timeout_s: float, baseline: Any = None) -> Report:
    """Probe host and NVML, run the GPU self-test on every GPU, evaluate the PRF rules.

    Raises PipelineError when no interpreter or no GPU is usable."""
    from gpudoctor.confirm.selftest import run_selftest
    from gpudoctor.facts.model import ConfirmationFacts, ConfirmDevice
    from gpudoctor.probes.host import probe_host
    from gpudoctor.probes.nvml import probe_nvml
    from gpudoctor.probes.registry import scan as do_scan
    from gpudoctor.probes.runner import Probe, ProbeOptions
    from gpudoctor.rules import REGISTRY, evaluate

    interp = interpreter(python)
    snap = do_scan(ProbeOptions(python=interp), [Probe("host", "host", probe_host),
                                                 Probe("nvml", "nvml", probe_nvml,
                                                       timeout_s=lambda o: o.nvml_timeout_s + 5)])
    _require_gpu(snap.nvml)
    t0 = time.monotonic()
    st = run_selftest(interp, timeout_s=timeout_s)
    snap.confirmation = ConfirmationFacts(
        status="ok" if st.status == "ok" else "failed", reason=st.reason, interpreter=interp, device="cuda",
        tasks=["selftest"], seconds=round(time.monotonic() - t0, 3), selftest=st, baseline=baseline, log_dir=None,
        transport_verdict=None,
        devices=[ConfirmDevice(rank=g.index, index=g.index, name=g.name, uuid=g.uuid, pci_bus_id=g.pci_bus_id)
                 for g in st.gpus])
    snap.duration_s = snap.confirmation.seconds
    return evaluate(snap, only=[r for r in REGISTRY if r.startswith("PRF")])


def confirm_for_baseline(python: str | None, timeout_s: float) -> tuple[Any, str | None]:
    """Scan this host and run the confirmation runs (self-test included) for `baseline save`:
    (ConfirmationFacts, hostname or None)."""
    from gpudoctor.confirm.runner import for_scan
    from gpudoctor.probes.registry import scan as do_scan
    from gpudoctor.probes.runner import ProbeOptions

    s = do_scan(ProbeOptions(python=python))
    conf = for_scan(s, timeout_s=timeout_s)
    return conf, (s.host.hostname if s.host else None)


def _require_gpu(nvml: Any) -> None:
    """Raise PipelineError unless NVML lists at least one GPU (``nvml``: NvmlFacts or None)."""
    if not (nvml and nvml.available and nvml.gpus):
        why = nvml.error if nvml is not None and nvml.error else "NVML sees none"
        raise PipelineError(f"no NVIDIA GPU to run on ({why})")


def check_gpu_load_host(python: str | None) -> str:
    """Before a GPU load (`gpudoctor burn`): the interpreter to use, once NVML lists a GPU and that interpreter
    imports torch. Raises PipelineError naming what is missing (and `--python`)."""
    from gpudoctor.probes.nvml import probe_nvml
    from gpudoctor.probes.runner import ProbeFailed, ProbeOptions
    from gpudoctor.probes.subproc import run_cmd

    interp = interpreter(python)
    try:
        nvml = probe_nvml(ProbeOptions(python=interp))
    except ProbeFailed as exc:
        nvml = exc.partial
    _require_gpu(nvml)
    res = run_cmd([interp, "-c", "import torch"], timeout=120)
    if res.returncode != 0:
        last = (res.stderr or "").strip().splitlines()[-1:] or ["import torch failed"]
        raise PipelineError(f"{interp} cannot import torch ({last[0]}); give the training interpreter with --python")
    return interp
