"""Parent side of the GPU self-test: start :mod:`gpudoctor.confirm.gpuload` in the target interpreter
and turn its JSON lines into :class:`~gpudoctor.facts.perf.SelfTestFacts`.

The worker drives every GPU at once from one process (a few seconds: ~1.0 s of timed GEMM, ~0.3 s of
timed copies, plus torch's import and CUDA start), with NVML samples every 0.1 s.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from gpudoctor.confirm.protocol import parse_load_line
from gpudoctor.facts.perf import SelfTestFacts, SelfTestGpu, median2, summarize_samples
from gpudoctor.probes.subproc import run_cmd

#: seconds allowed for the whole self-test (torch import and CUDA start included)
DEFAULT_TIMEOUT_S = 60.0


def parse_lines(text: str) -> list[dict[str, Any]]:
    """The worker's JSON lines (anything else, e.g. a warning torch printed, is skipped), checked against
    :mod:`gpudoctor.confirm.protocol` (see :func:`~gpudoctor.confirm.protocol.parse_load_line`)."""
    return [obj for obj in map(parse_load_line, text.splitlines()) if obj is not None]


def summarize(lines: list[dict[str, Any]]) -> list[SelfTestGpu]:
    """Per-GPU figures from the worker's lines: medians of the rounds after the 'timed' mark, and the
    NVML samples taken from that mark on."""
    timed_from = next((ln["s"] for ln in lines if ln.get("t") == "mark" and ln.get("what") == "timed"), None)
    gpus: dict[int, dict[str, Any]] = {}
    for ln in lines:
        if ln.get("t") == "gpu" and isinstance(ln.get("i"), int):
            gpus[ln["i"]] = ln
    out = []
    for i, g in sorted(gpus.items()):
        rounds = [ln for ln in lines if ln.get("t") == "round" and ln.get("i") == i
                  and timed_from is not None and ln.get("s", 0) > timed_from]
        gemm = [float(r["value"]) for r in rounds if r.get("kind") == "gemm"]
        copy = [float(r["value"]) for r in rounds if r.get("kind") == "copy"]
        samples = [ln for ln in lines if ln.get("t") == "sample" and ln.get("i") == i
                   and (timed_from is None or ln.get("s", 0) >= timed_from)]
        err = next((ln.get("error") for ln in lines if ln.get("t") == "error" and ln.get("i") == i), None)
        out.append(SelfTestGpu(index=i, name=g.get("name"), uuid=g.get("uuid"), pci_bus_id=g.get("pci_bus_id"),
                               capability=g.get("capability"), gemm_dtype=g.get("gemm_dtype"), gemm_n=g.get("gemm_n"),
                               gemm_tflops=median2(gemm), gemm_tflops_min=min(gemm) if gemm else None,
                               gemm_groups=len(gemm), d2d_gbs=median2(copy), d2d_groups=len(copy),
                               samples=summarize_samples(samples, g.get("static") or {}) if g.get("nvml") else None,
                               error=err))
    return out


def package_path(tmp: Path) -> Path:
    """A folder holding only a link to the gpudoctor package (see confirm.runner): the target interpreter
    finds gpudoctor there and nothing else of this environment."""
    import gpudoctor

    src = Path(gpudoctor.__file__).resolve().parent
    pkg = tmp / "pkg"
    pkg.mkdir()
    try:
        (pkg / "gpudoctor").symlink_to(src, target_is_directory=True)
    except OSError:
        shutil.copytree(src, pkg / "gpudoctor", ignore=shutil.ignore_patterns("__pycache__"))
    return pkg


def worker_env(pkg: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pkg) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_selftest(python: str, timeout_s: float = DEFAULT_TIMEOUT_S, gemm_s: float = 1.0,
                 copy_s: float = 0.3) -> SelfTestFacts:
    """Run the self-test on every GPU the target interpreter's torch sees; never raises for a failing run."""
    with tempfile.TemporaryDirectory(prefix="gpudoctor-selftest-") as tmp:
        pkg = package_path(Path(tmp))
        res = run_cmd([python, "-m", "gpudoctor.confirm.gpuload", "selftest", "--gemm-s", str(gemm_s),
                       "--copy-s", str(copy_s)], timeout=timeout_s, env=worker_env(pkg))
    lines = parse_lines(res.stdout or "")
    done = next((ln for ln in lines if ln.get("t") == "done"), None)
    gpus = summarize(lines)
    if res.timed_out:
        return SelfTestFacts(status="failed", reason=f"the self-test did not finish within {timeout_s:.0f} s",
                             gpus=gpus)
    errs = [ln.get("error") for ln in lines if ln.get("t") == "error" and ln.get("i") is None]
    if done is None or errs:
        tail = (res.stderr or "").strip().splitlines()[-3:]
        why = "; ".join(str(e) for e in errs) or f"exit code {res.returncode}: {' | '.join(tail)}"
        return SelfTestFacts(status="error" if not gpus else "failed", reason=f"the self-test failed: {why}"[:600],
                             gpus=gpus, seconds=done.get("seconds") if done else None)
    return SelfTestFacts(status="ok", seconds=done.get("seconds"), gpus=gpus)
