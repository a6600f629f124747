"""The probes of a scan, in start order (the slow torch probe first, so it overlaps the rest)."""
from __future__ import annotations

from gpudoctor.probes.cpu import probe_cpu
from gpudoctor.probes.env import probe_env
from gpudoctor.probes.host import probe_host
from gpudoctor.probes.libpath import probe_libpath
from gpudoctor.probes.memory import probe_memory
from gpudoctor.probes.nvml import probe_nvml
from gpudoctor.probes.runner import Probe, ProbeOptions, run_probes
from gpudoctor.probes.storage import probe_storage
from gpudoctor.probes.topology import probe_topology
from gpudoctor.probes.torch_probe import probe_torch

PROBES: list[Probe] = [
    Probe("torch", "torch", probe_torch, timeout_s=lambda o: o.torch_timeout_s + 5),
    Probe("nvml", "nvml", probe_nvml, timeout_s=lambda o: o.nvml_timeout_s + 5),
    Probe("host", "host", probe_host),
    Probe("cpu", "cpu", probe_cpu),
    Probe("memory", "memory", probe_memory),
    Probe("storage", "storage", probe_storage),
    Probe("env", "env", probe_env),
    Probe("topology", "topology", probe_topology,
          timeout_s=lambda o: 2 * o.nvml_timeout_s + 2 * o.tool_timeout_s + 10),  # 2 NVML workers, 2 tools
    Probe("libpath", "libpath", probe_libpath),
]


def scan(opts: ProbeOptions | None = None, probes: list[Probe] | None = None):
    """Probe this host; returns a Snapshot (never raises for a failing probe)."""
    return run_probes(probes if probes is not None else PROBES, opts or ProbeOptions())
