"""What `gpudoctor cluster` was asked to do, checked before any rank joins."""
from __future__ import annotations

from dataclasses import dataclass, field

from gpudoctor.pipeline import defaults
from gpudoctor.pipeline.errors import PipelineError
from gpudoctor.probes.runner import ProbeOptions


@dataclass
class ClusterOptions:
    """What `gpudoctor cluster` was asked to do (see the command's --help for each option)."""

    cpu: bool = False
    timeout_s: float = defaults.CLUSTER_TIMEOUT_S
    size_bytes: int | None = None  # None: rules/cluster.toml [message] gpu_mib / cpu_mib
    iters: int = defaults.CLUSTER_ITERS
    warmup: int = defaults.CLUSTER_WARMUP
    rounds: int | None = None  # None: pairing.default_rounds
    confirm: bool = True
    probes: list[str] | None = None  # None: every probe of a scan
    probe_opts: ProbeOptions = field(default_factory=ProbeOptions)
    expect_nodes: int | None = None
    expect_hosts: list[str] = field(default_factory=list)
    min_pair_busbw: float | None = None
    clock_samples: int = 8


def build_options(probes: str | None, data_path: str, torch_timeout_s: float, size_mib: float | None,
                  **kw) -> ClusterOptions:
    """ClusterOptions from the command's options; PipelineError for an unknown probe name."""
    from gpudoctor.probes.registry import PROBES

    wanted = None
    if probes is not None:
        wanted = [p.strip() for p in probes.split(",") if p.strip()]
        unknown = sorted(set(wanted) - {p.name for p in PROBES})
        if unknown:
            raise PipelineError(f"--probes: unknown probe(s) {', '.join(unknown)}; "
                                f"known: {', '.join(p.name for p in PROBES)}")
    return ClusterOptions(size_bytes=int(size_mib * 2**20) if size_mib else None, probes=wanted,
                          probe_opts=ProbeOptions(data_path=data_path, torch_timeout_s=torch_timeout_s), **kw)
