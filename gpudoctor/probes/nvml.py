"""NVML probe: driver, CUDA driver API and every GPU, read in an isolated child process.

The child (:mod:`gpudoctor.probes.nvml_worker`) streams facts as JSON lines; this
module assembles them into :class:`NvmlFacts`. A crash of the child (SIGSEGV in
native code) keeps every fact streamed before it and becomes a probe error that
names the NVML call in flight.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from gpudoctor.facts.model import GpuFacts, NvmlFacts
from gpudoctor.facts.protocol import check_gpu_key
from gpudoctor.probes.runner import ProbeErrorKind, ProbeFailed
from gpudoctor.probes.subproc import CmdResult, run_cmd
from gpudoctor.probes.sysfs import read_int, read_text

WORKER = Path(__file__).with_name("nvml_worker.py")


def sysfs_pci_path(bus_id: str) -> str:
    """NVML bus id '00000000:00:06.0' -> '/sys/bus/pci/devices/0000:00:06.0'."""
    dom, _, rest = bus_id.lower().partition(":")
    return f"/sys/bus/pci/devices/{dom[-4:].zfill(4)}:{rest}"


def worker_messages(lines: Iterable[str]) -> Iterator[dict]:
    """The JSON objects of an NVML worker stream; malformed lines and non-objects (a number some
    library printed on the worker's stdout) are skipped."""
    for raw in lines:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if isinstance(msg, dict):
            yield msg


def assemble(lines: Iterable[str]) -> tuple[NvmlFacts, str | None, bool]:
    """Build NvmlFacts from worker output lines.

    Returns (facts, last step named before the output ended, whether 'done' was seen).
    Malformed lines are skipped.
    """
    facts = NvmlFacts()
    gpus: dict[int, dict] = {}
    last_step, done = None, False
    for msg in worker_messages(lines):
        t = msg.get("t")
        if t == "step":
            last_step = msg.get("name")
        elif t == "fail":
            facts.error = msg.get("error")
        elif t == "sys" and msg.get("k") in ("driver_version", "nvml_version", "cuda_driver_version", "gpu_count"):
            setattr(facts, msg["k"], msg.get("v"))
        elif t in ("gpu", "unsupported", "err") and isinstance(msg.get("i"), int):
            g = gpus.setdefault(msg["i"], {"index": msg["i"], "unsupported": [], "errors": {}})
            if t == "gpu":
                g[check_gpu_key(msg["k"])] = msg.get("v")  # a misspelled field is an error, not lost
            elif t == "unsupported":
                g["unsupported"].append(msg["k"])
            else:
                g["errors"][msg["k"]] = msg.get("v")
        elif t == "done":
            done = True
    facts.gpus = [GpuFacts.model_validate(gpus[i]) for i in sorted(gpus)]
    facts.available = facts.error is None and facts.driver_version is not None
    return facts, last_step, done


def _enrich_from_sysfs(facts: NvmlFacts) -> None:
    for g in facts.gpus:
        if g.numa_node is None and g.pci_bus_id:
            node = read_int(os.path.join(sysfs_pci_path(g.pci_bus_id), "numa_node"))
            if node is not None and node >= 0:
                g.numa_node = node
    text = read_text("/proc/driver/nvidia/version")
    if text:
        facts.kernel_module = text.splitlines()[0].strip()


def probe_nvml(opts) -> NvmlFacts:
    """Run the NVML worker and return NvmlFacts.

    NVML being unusable (no driver) is a *fact* (``available=False`` with ``error``),
    not a probe error. A worker that crashes or hangs raises ProbeFailed carrying the
    partial facts.
    """
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    res: CmdResult = run_cmd([sys.executable, str(WORKER)], timeout=opts.nvml_timeout_s, env=env)
    facts, last_step, done = assemble(res.stdout.splitlines())
    _enrich_from_sysfs(facts)
    if res.ok and (done or facts.error):
        return facts
    where = f" during {last_step}" if last_step else ""
    if not facts.available and facts.error is None:
        facts.error = f"NVML worker did not finish: {res.describe_failure()}{where}"
    kind: ProbeErrorKind = "timeout" if res.timed_out else "crash" if (res.returncode or 0) < 0 else "error"
    raise ProbeFailed(f"{res.describe_failure()}{where}; facts read before it are kept", kind=kind, partial=facts)
