"""Prometheus text exposition format (for node_exporter's textfile collector, or a Pushgateway).

Naming follows https://prometheus.io/docs/practices/naming/: a ``gpudoctor_`` prefix, base units in the
name (``_seconds``, ``_bytes_per_second``, ``_ratio``), no ``_total`` (nothing here is a counter: every
scan is a fresh snapshot, so everything is a gauge). Every family has HELP and TYPE; label values are
escaped (backslash, double quote, newline). Cardinality is bounded: one series per rule outcome (the rule
registry), per finding (capped at :data:`MAX_FINDINGS`, subject cut to 64 characters), per GPU, per
all-reduce size and dtype, per node and node pair of a cluster report.
"""
from __future__ import annotations

import math
from typing import Any

from gpudoctor.reports import cases as C

MAX_FINDINGS = 200
GB = 1e9  # reports give GB/s as 1e9 bytes/s
STATUSES = ("pass", "fail", "not_assessed", "not_applicable")


def escape_label(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")


def _num(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


class Families:
    """Metric families in first-use order; each family written once with its HELP and TYPE."""

    def __init__(self) -> None:
        self._help: dict[str, str] = {}
        self._samples: dict[str, list[str]] = {}
        self._seen: set[tuple[str, str]] = set()

    def add(self, metric: str, help_text: str, value: float | None, **labels: Any) -> None:
        if value is None:
            return
        name = "gpudoctor_" + metric
        self._help.setdefault(name, help_text)
        lab = ",".join(f'{k}="{escape_label(str(v))}"' for k, v in labels.items() if v is not None)
        key = (name, lab)
        if key in self._seen:  # one sample per label set, or the parser rejects the file
            return
        self._seen.add(key)
        self._samples.setdefault(name, []).append(f"{name}{{{lab}}} {_num(value)}" if lab else f"{name} {_num(value)}")

    def text(self) -> str:
        out = []
        for name, help_text in self._help.items():
            out.append(f"# HELP {name} {escape_help(help_text)}")
            out.append(f"# TYPE {name} gauge")
            out += self._samples[name]
        return "\n".join(out) + "\n"


def _confirmation(m: Families, c: Any, node: str | None) -> None:
    if c is None:
        return
    m.add("confirmation_ok", "1 when the confirmation runs completed, 0 when they failed or hung (absent: not run)",
          None if c.status in ("skipped", "not_applicable") else float(c.status == "ok"), node=node)
    ar_help = "all-reduce bus bandwidth (nccl-tests busbw = algbw*2(n-1)/n), rank 0, median, bytes per second"
    for a in c.allreduce:
        if (c.world_size or 0) < 2:
            break  # a 1-rank all-reduce moves nothing: no bandwidth to report
        lab = {"node": node, "dtype": a.dtype, "size_bytes": str(a.size_bytes)}
        m.add("allreduce_bus_bandwidth_bytes_per_second", ar_help,
              a.busbw_gbs * GB if a.busbw_gbs is not None else None, **lab)
        m.add("allreduce_algorithm_bandwidth_bytes_per_second", "all-reduce size / median time, bytes per second",
              a.algbw_gbs * GB if a.algbw_gbs is not None else None, **lab)
        m.add("allreduce_correct", "1 when every element of the reduced tensor was right on every rank",
              None if a.correct is None else float(a.correct), **lab)
    for cp in c.copies:
        for direction, st in (("h2d", cp.h2d_gbs), ("d2h", cp.d2h_gbs)):
            m.add("copy_bandwidth_bytes_per_second", "pinned host<->device copy bandwidth of one GPU, median, bytes "
                  "per second", st.median * GB, node=node, gpu_uuid=cp.uuid, gpu_index=str(cp.device_index),
                  direction=direction)
    d = c.ddp
    if d is not None:
        m.add("ddp_step_seconds", "DDP training step time at world size n (rank 0, median), seconds",
              d.step.step_s.median, node=node, world_size=str(d.world_size))
        if d.single is not None:
            m.add("ddp_single_device_step_seconds", "the same step on one device without DDP (median), seconds",
                  d.single.step_s.median, node=node)
        m.add("ddp_scaling_efficiency_ratio", "scaling efficiency (throughput_n / throughput_1) / n",
              d.efficiency, node=node, scaling=d.scaling)
        m.add("ddp_samples_per_second", "global samples per second at world size n", d.samples_per_s, node=node)
        m.add("ddp_gradient_allreduce_seconds", "one all-reduce of the gradient size (fp32, median), seconds",
              d.grad_allreduce_s.median if d.grad_allreduce_s else None, node=node)


def _snapshot(m: Families, snap: Any, node: str | None) -> None:
    nv = snap.nvml
    for g in (nv.gpus if nv is not None else []):
        m.add("gpu_info", "one series per GPU: its identity (join on gpu_uuid with DCGM / node_exporter)", 1,
              node=node, gpu_index=str(g.index), gpu_uuid=g.uuid, model=g.name, pci_bus_id=g.pci_bus_id)
    for e in snap.probe_errors:
        m.add("probe_error", "1 per probe that failed, timed out or crashed in the scan", 1, node=node,
              probe=e.probe, kind=e.kind)
    m.add("probe_errors", "number of probes that failed in the scan", len(snap.probe_errors), node=node)
    _confirmation(m, snap.confirmation, node)


def _cluster(m: Families, report: Any) -> None:
    for n in report.nodes:
        for status in ("reported", "missing", "hung"):
            m.add("cluster_node_status", "1 for the node's state in the cluster run (reported, missing, hung)",
                  float(n.status == status), node=n.label, status=status)
        m.add("cluster_node_scan_seconds", "wall time of the node's scan, seconds", n.scan_s, node=n.label)
    a = report.allreduce
    if a is not None:
        m.add("cluster_allreduce_bus_bandwidth_bytes_per_second", "all-reduce across all nodes, busbw from the "
              "median time, bytes per second", a.busbw_gbs * GB if a.busbw_gbs is not None else None,
              size_bytes=str(a.size_bytes), device=a.device)
    p = report.pairwise
    if p is not None:
        for pr in p.pairs:
            m.add("cluster_pair_bus_bandwidth_bytes_per_second", "node-to-node 2-rank all-reduce busbw, bytes per "
                  "second", pr.busbw_gbs * GB if pr.busbw_gbs is not None else None, a=pr.a, b=pr.b)
            m.add("cluster_pair_slow", "1 when the node pair is below the slow fraction of the reference",
                  float(pr.slow), a=pr.a, b=pr.b)
    s = report.summary
    m.add("cluster_nodes", "nodes by state in the cluster run", s.nodes_expected, state="expected")
    m.add("cluster_nodes", "nodes by state in the cluster run", s.nodes_reported, state="reported")
    m.add("cluster_nodes", "nodes by state in the cluster run", s.nodes_missing, state="missing")
    m.add("cluster_nodes", "nodes by state in the cluster run", s.nodes_hung, state="hung")


def render(report: Any, fail_on: str = "error") -> str:
    """The textfile for ``report``."""
    from gpudoctor import __version__

    m = Families()
    host = C.hostname(report)
    m.add("report_info", "1; the report's kind, gpudoctor version and host", 1,
          kind=getattr(report, "kind", "report"), version=__version__, host=host)
    interrupted = any(e.kind == "interrupted" for _, e in C.probe_errors(report))
    snap = getattr(report, "snapshot", None)
    rejected = sum(1 for i in (getattr(snap, "inputs", None) or []) if getattr(i, "status", "") == "rejected")
    m.add("healthy", f"1 when no finding is at or above --fail-on ({fail_on}), the scan ran to its end and no input "
          "was rejected: the command's exit code was 0", float(not C.failing(report, fail_on) and not interrupted
                                                               and not rejected))
    m.add("inputs_rejected", "inputs of `gpudoctor check` that could not be used (exit code 2)", rejected)
    m.add("scan_timestamp_seconds", "when the report was made, Unix time, seconds", C.timestamp(report))
    m.add("scan_duration_seconds", "wall time of the probes and confirmation runs, seconds", C.duration(report))
    n = C.counts(report)
    for sev, key in (("error", "errors"), ("warning", "warnings"), ("info", "infos")):
        m.add("findings", "number of findings by severity", n[key], severity=sev)
    for c in C.cases(report):
        for status in STATUSES:
            m.add("rule_outcome", "1 for the rule's outcome (pass, fail, not_assessed, not_applicable), else 0",
                  float(c.status == status), node=c.node, rule_id=c.rule_id, area=c.area, status=status)
    for i, (node, f) in enumerate(C.all_findings(report)):
        if i >= MAX_FINDINGS:
            break
        m.add("finding", "1 per finding (rule, severity, area, subject, title)", 1, node=node, rule_id=f.rule_id,
              severity=f.severity, area=f.area, subject=(f.subject or "")[:64], title=f.title[:120])
    snap = getattr(report, "snapshot", None)
    if snap is not None:
        _snapshot(m, snap, None)
    if C.is_cluster(report):
        _cluster(m, report)
        for nd in report.nodes:
            if nd.report is not None:
                _snapshot(m, nd.report.snapshot, nd.label)
    return m.text()
