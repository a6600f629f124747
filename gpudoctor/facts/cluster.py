"""The cluster report: one document for many nodes (``gpudoctor cluster --json`` / ``--save``).

Nodes are told apart by node rank *and* hostname (two agents may share a host); ``label``
("node1@gpu-b") is how the report names a node everywhere. Units are in the field names:
``*_s`` seconds, ``*_ms`` milliseconds, ``*_gbs`` GB/s (1e9 bytes/s, as nccl-tests),
``*_bytes`` bytes. ``gpudoctor schema --cluster`` prints the JSON Schema.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from gpudoctor.facts.findings import Finding, Report, RuleOutcome

CLUSTER_SCHEMA_VERSION = "1.0"

NodeStatus = Literal["reported", "missing", "hung"]


class NodeEntry(BaseModel):
    """One node of the job: its identity, what became of it, and its own scan."""

    label: str = Field(description="node<rank>@<hostname>, the name used in findings")
    node_rank: int | None = Field(None, description="torchrun GROUP_RANK / Slurm SLURM_NODEID; None = never known")
    hostname: str | None = Field(None, description="as the node reported it, or as expected from the launcher")
    ranks: list[int] = Field(default_factory=list, description="global ranks of the processes on this node")
    status: NodeStatus
    detail: str | None = Field(None, description="for missing/hung nodes: what was seen and for how long")
    last_phase: str | None = Field(None, description="the last phase the node announced (join, scan, confirm, ...)")
    report: Report | None = Field(None, description="the node's own scan (snapshot, findings, outcomes)")
    scan_s: float | None = Field(None, description="wall time of the node's scan, s")
    clock_offset_ms: float | None = Field(
        None, description="this node's wall clock minus rank 0's, ms (midpoint of the fastest ping-pong)")
    clock_uncertainty_ms: float | None = Field(None, description="half the round trip of that ping-pong, ms")
    cuda_devices: int | None = Field(None, description="torch.cuda.device_count() in the agent process")


class DifferingFinding(BaseModel):
    """A node-level finding present on some reported nodes and not on others."""

    rule_id: str
    severity: str
    title: str
    subject: str | None = None
    nodes_with: list[str] = Field(description="labels of the nodes that have it")
    nodes_without: list[str] = Field(description="labels of the reported nodes that do not")
    evidence: dict[str, list[str]] = Field(default_factory=dict, description="label -> that node's evidence lines")


class CommonFinding(BaseModel):
    """A node-level finding present on every reported node."""

    rule_id: str
    severity: str
    title: str
    subject: str | None = None


class AllReduceResult(BaseModel):
    """The all-reduce across all nodes (busbw as nccl-tests: algbw * 2(n-1)/n)."""

    ranks: int = Field(description="processes taking part")
    nodes: int
    backend: str
    device: str = Field(description="'cpu' or 'cuda'")
    size_bytes: int
    dtype: str = "float32"
    iters: int
    warmup: int
    seconds: dict[str, float] = Field(default_factory=dict, description="median/min/max/rel_spread of one call, s")
    algbw_gbs: float | None = Field(None, description="from the median time, GB/s")
    busbw_gbs: float | None = Field(None, description="from the median time, GB/s")
    correct: bool | None = Field(None, description="a check all-reduce summed to the expected value everywhere")
    error: str | None = None


class PairResult(BaseModel):
    """One node-to-node test: a 2-rank all-reduce between two nodes' leader processes."""

    round: int
    a: str = Field(description="label of the first node")
    b: str = Field(description="label of the second node")
    size_bytes: int
    seconds_median: float | None = Field(None, description="slower of the two sides' median time per call, s")
    algbw_gbs: float | None = None
    busbw_gbs: float | None = Field(None, description="2-rank all-reduce busbw = algbw (factor 2(n-1)/n = 1)")
    slow: bool = False
    error: str | None = None


class PairwiseResult(BaseModel):
    """Round-robin node-to-node tests: every round pairs each node with a new partner, all pairs at once."""

    rounds: int
    nodes: int
    reference_busbw_gbs: float | None = Field(
        None, description="median over nodes of each node's best pair busbw, GB/s"
    )
    slow_fraction: float = Field(description="a pair is slow below this fraction of reference_busbw_gbs")
    pairs: list[PairResult] = Field(default_factory=list)
    slow_nodes: list[str] = Field(default_factory=list, description="nodes whose pairs are all slow")
    slow_links: list[list[str]] = Field(default_factory=list, description="slow pairs not explained by a slow node")
    unattributed: list[list[str]] = Field(default_factory=list,
                                          description="slow pairs where too few other pairs exist to tell which end")
    seconds: float | None = Field(None, description="wall time of all rounds, s")


class ClusterSummary(BaseModel):
    nodes_expected: int
    nodes_reported: int
    nodes_missing: int
    nodes_hung: int
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    node_errors: int = Field(0, description="node-level error findings, summed over nodes")
    node_warnings: int = 0
    differing_findings: int = 0


class LaunchSummary(BaseModel):
    launcher: str = Field(description="torchrun or slurm")
    world_size: int
    master_addr: str
    master_port: int
    run_id: str
    backend: str | None = Field(None, description="gloo, or cpu:gloo,cuda:nccl")
    cpu_only: bool = False
    backend_note: str | None = Field(None, description="why GPU runs were skipped without --cpu, if they were")


class ClusterReport(BaseModel):
    """The document `gpudoctor cluster --json` prints and `--save` writes (on rank 0 only)."""

    schema_version: str = CLUSTER_SCHEMA_VERSION
    kind: Literal["gpudoctor-cluster-report"] = "gpudoctor-cluster-report"
    gpudoctor_version: str
    created_at: str = Field(description="ISO 8601 UTC, rank 0's clock")
    launch: LaunchSummary
    nodes: list[NodeEntry] = Field(description="sorted by node rank; missing nodes without a rank last")
    findings: list[Finding] = Field(default_factory=list, description="cross-node findings (CLU rules)")
    outcomes: list[RuleOutcome] = Field(default_factory=list, description="how each CLU rule ended")
    differing: list[DifferingFinding] = Field(default_factory=list)
    common: list[CommonFinding] = Field(default_factory=list)
    allreduce: AllReduceResult | None = None
    pairwise: PairwiseResult | None = None
    phase_seconds: dict[str, float] = Field(default_factory=dict, description="wall time of each phase on rank 0, s")
    duration_s: float | None = None
    summary: ClusterSummary
