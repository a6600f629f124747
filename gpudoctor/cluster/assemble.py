"""Build the ClusterReport on rank 0 from what the ranks posted (pure: no torch, no store).

Inputs are plain dicts as the ranks wrote them to the c10d store (see ``agent``):

* ``joins[rank]``   = {"rank", "node_rank", "local_rank", "hostname", "pid"}
* ``snaps[rank]``   = {"report": Report JSON dict or None (non-leader rank), "scan_s", "cuda_devices"}
* ``phases[rank]``  = the last phase the rank announced ("join", "scan", "confirm", ...)
* ``results[rank]`` = {"allreduce": {"seconds": [...], "correct", "error"}, "pairs": [...], "error"}
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from gpudoctor.cluster.launch import LaunchInfo
from gpudoctor.confirm.collectives import bandwidths, spread
from gpudoctor.facts.cluster import (
    AllReduceResult,
    ClusterReport,
    ClusterSummary,
    CommonFinding,
    DifferingFinding,
    LaunchSummary,
    NodeEntry,
    PairResult,
    PairwiseResult,
)
from gpudoctor.facts.findings import Report


def label(node_rank: int | None, hostname: str | None) -> str:
    """How the report names a node: node<rank>@<host> (either part '?' when unknown)."""
    return f"node{'?' if node_rank is None else node_rank}@{hostname or '?'}"


def build_nodes(launch: LaunchInfo, joins: dict[int, dict], snaps: dict[int, dict], phases: dict[int, str],
                members: Sequence[int], results: dict[int, dict], clock: dict[int, tuple[float, float]],
                waited_s: dict[str, float], expect_nodes: int | None = None,
                expect_hosts: Sequence[str] = (), expect_results: bool = True) -> list[NodeEntry]:
    """One entry per node: joined nodes by (node rank, hostname), then missing ones.

    A node is *missing* when none of its ranks joined, *hung* when it joined but its scan (or, as a member,
    its confirmation result) did not arrive in time, else *reported*. ``clock`` maps a leader rank to
    (offset ms, uncertainty ms); ``waited_s`` holds how long rank 0 waited ('join', 'scan', 'confirm');
    ``expect_results`` is False when no confirmation ran (--no-confirm, one member).
    """
    by_node: dict[tuple, list[int]] = defaultdict(list)
    for r, j in joins.items():
        by_node[(j.get("node_rank"), j.get("hostname"))].append(r)
    entries: list[NodeEntry] = []
    for (node_rank, host), ranks in sorted(by_node.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0,
                                                                              kv[0][1] or "")):
        ranks.sort()
        leader = next((r for r in ranks if joins[r].get("local_rank", 0) == 0), ranks[0])
        snap = snaps.get(leader)
        report = Report.model_validate(snap["report"]) if snap and snap.get("report") else None
        e = NodeEntry(label=label(node_rank, host), node_rank=node_rank, hostname=host, ranks=ranks,
                      status="reported", report=report, scan_s=snap.get("scan_s") if snap else None,
                      cuda_devices=snap.get("cuda_devices") if snap else None,
                      last_phase=phases.get(leader))
        silent = [r for r in ranks if r not in snaps]
        if silent:
            e.status = "hung"
            e.detail = (f"joined, but rank(s) {', '.join(map(str, silent))} posted no scan within "
                        f"{waited_s.get('scan', 0):.0f} s (last phase: {phases.get(silent[0]) or 'join'})")
        else:
            no_result = [r for r in ranks if r in members and r not in results]
            if no_result and expect_results and len(members) > 1:
                e.status = "hung"
                e.detail = (f"scanned, but rank(s) {', '.join(map(str, no_result))} posted no confirmation "
                            f"result within {waited_s.get('confirm', 0):.0f} s "
                            f"(last phase: {phases.get(no_result[0]) or '?'})")
        if leader in clock:
            e.clock_offset_ms, e.clock_uncertainty_ms = (round(clock[leader][0], 3), round(clock[leader][1], 3))
        entries.append(e)
    # missing ranks: place them on their expected node (Slurm block distribution), if any
    missing = [r for r in range(launch.world_size) if r not in joins]
    seen_nodes = {e.node_rank for e in entries}
    seen_hosts = [e.hostname for e in entries]
    extra: dict[Any, NodeEntry] = {}
    for r in missing:
        node = launch.rank_nodes[r] if r < len(launch.rank_nodes) else None
        host = launch.rank_hosts[r] if r < len(launch.rank_hosts) else None
        if node is not None and node in seen_nodes:
            for e in entries:  # a rank missing on a node whose others joined: that node is hung
                if e.node_rank == node:
                    e.status = "hung"
                    e.detail = (e.detail + "; " if e.detail else "") + f"rank {r} never joined"
            continue
        key = node if node is not None else f"rank{r}"
        if key not in extra:
            extra[key] = NodeEntry(label=label(node, host), node_rank=node, hostname=host, ranks=[], status="missing",
                                   detail=f"never joined within {waited_s.get('join', 0):.0f} s"
                                          + (" (host expected from the Slurm node list)" if host else ""))
        extra[key].ranks.append(r)
    entries += list(extra.values())
    # nodes the launcher never gave a rank (torchrun elastic --nnodes MIN:MAX): from --expect-hosts / --expect-nodes
    present_hosts = list(seen_hosts) + [e.hostname for e in extra.values()]
    for host in expect_hosts:
        if host in present_hosts:
            present_hosts.remove(host)
        else:
            entries.append(NodeEntry(label=label(None, host), hostname=host, status="missing",
                                     detail="expected (--expect-hosts) but never joined the rendezvous"))
    if expect_nodes is not None:
        for _ in range(expect_nodes - len(entries)):
            entries.append(NodeEntry(label=label(None, None), status="missing",
                                     detail=f"--expect-nodes {expect_nodes} but only {len(by_node)} node(s) joined "
                                            "the rendezvous; pass --expect-hosts to name them"))
    return entries


def differing_findings(nodes: Sequence[NodeEntry]) -> tuple[list[DifferingFinding], list[CommonFinding]]:
    """Node-level findings (rule id + subject) on some nodes but not all, and those on every node."""
    have = [n for n in nodes if n.report is not None]
    seen: dict[tuple, dict] = {}
    for n in have:
        for f in n.report.findings if n.report is not None else []:
            key = (f.rule_id, f.subject)
            ent = seen.setdefault(key, {"f": f, "nodes": {}})
            ent["nodes"].setdefault(n.label, []).extend(f.evidence)
    differing, common = [], []
    for (rule_id, subject), ent in seen.items():
        f = ent["f"]
        if len(ent["nodes"]) == len(have):
            common.append(CommonFinding(rule_id=rule_id, severity=f.severity, title=f.title, subject=subject))
        else:
            differing.append(DifferingFinding(rule_id=rule_id, severity=f.severity, title=f.title, subject=subject,
                                              nodes_with=[n.label for n in have if n.label in ent["nodes"]],
                                              nodes_without=[n.label for n in have if n.label not in ent["nodes"]],
                                              evidence=ent["nodes"]))
    order = {"error": 0, "warning": 1, "info": 2}
    differing.sort(key=lambda d: (order.get(d.severity, 3), d.rule_id))
    common.sort(key=lambda c: (order.get(c.severity, 3), c.rule_id))
    return differing, common


def allreduce_result(plan: dict, results: dict[int, dict], nodes: int) -> AllReduceResult | None:
    """The all-reduce across all members from each rank's timings: the slowest rank's median sets busbw."""
    members = plan["members"]
    if len(members) < 2:
        return None
    ar = AllReduceResult(ranks=len(members), nodes=nodes, backend=plan["backend"], device=plan["device"],
                         size_bytes=plan["size_bytes"], iters=plan["iters"], warmup=plan["warmup"])
    per_rank = [results[r].get("allreduce") or {} for r in members if r in results]
    errors = [f"rank {r}: {results[r]['allreduce']['error']}" for r in members
              if r in results and (results[r].get("allreduce") or {}).get("error")]
    if len(per_rank) < len(members):
        errors.append(f"no result from rank(s) {', '.join(str(r) for r in members if r not in results)}")
    times = [x["seconds"] for x in per_rank if x.get("seconds")]
    if times:
        medians = [statistics.median(t) for t in times]
        slowest = times[medians.index(max(medians))]
        ar.seconds = {k: round(v, 6) for k, v in spread(slowest).items()}
        ar.algbw_gbs, ar.busbw_gbs = (round(x, 4) for x in bandwidths(ar.size_bytes, max(medians), len(members)))
    checks = [x.get("correct") for x in per_rank if x.get("correct") is not None]
    ar.correct = all(checks) if checks else None
    if errors:
        ar.error = "; ".join(errors[:4]) + (f" (+{len(errors) - 4} more)" if len(errors) > 4 else "")
    return ar


def pairwise_result(plan: dict, results: dict[int, dict], labels: dict[int, str], slow_fraction: float,
                    min_busbw: float | None = None) -> PairwiseResult | None:
    """Pair results from both sides of each pair (the slower side's median counts), then slow node/link names."""
    from gpudoctor.cluster.pairing import attribute

    rounds = plan.get("rounds") or []
    if not rounds:
        return None
    size = plan["size_bytes"]
    pairs: list[PairResult] = []
    for i, rnd in enumerate(rounds):
        for a, b in rnd:
            sides = []
            errors = []
            for me, peer in ((a, b), (b, a)):
                got = next(
                    (p for p in (results.get(me) or {}).get("pairs", []) if p["round"] == i and p["peer"] == peer), None
                )
                if got is None:
                    errors.append(f"no result from rank {me}")
                elif got.get("error"):
                    errors.append(f"rank {me}: {got['error']}")
                elif got.get("seconds"):
                    sides.append(statistics.median(got["seconds"]))
            p = PairResult(round=i, a=labels[a], b=labels[b], size_bytes=size)
            if errors:
                p.error = "; ".join(errors)
            elif sides:
                p.seconds_median = round(max(sides), 6)
                p.algbw_gbs, p.busbw_gbs = (round(x, 4) for x in bandwidths(size, max(sides), 2))
            pairs.append(p)
    ref, slow_idx, slow_nodes, links, unattributed = attribute(
        [(p.a, p.b, None if p.error else p.busbw_gbs) for p in pairs], slow_fraction, min_busbw)
    for i in slow_idx:
        pairs[i].slow = True
    return PairwiseResult(rounds=len(rounds), nodes=len(plan.get("leaders", [])),
                          reference_busbw_gbs=round(ref, 4) if ref else None, slow_fraction=slow_fraction, pairs=pairs,
                          slow_nodes=slow_nodes, slow_links=links, unattributed=unattributed,
                          seconds=plan.get("pairs_s"))


def build_report(launch: LaunchInfo, nodes: list[NodeEntry], created_at: str, version: str,
                 backend: str | None, cpu_only: bool, allreduce: AllReduceResult | None,
                 pairwise: PairwiseResult | None, phase_seconds: dict[str, float],
                 duration_s: float, backend_note: str | None = None) -> ClusterReport:
    """Evaluate the cluster rules and put everything into the one document."""
    from gpudoctor.rules.cluster import evaluate_cluster

    findings, outcomes = evaluate_cluster(nodes, allreduce, pairwise)
    differing, common = differing_findings(nodes)
    s = ClusterSummary(nodes_expected=len(nodes), nodes_reported=sum(n.status == "reported" for n in nodes),
                       nodes_missing=sum(n.status == "missing" for n in nodes),
                       nodes_hung=sum(n.status == "hung" for n in nodes), differing_findings=len(differing))
    for f in findings:
        setattr(s, {"error": "errors", "warning": "warnings"}.get(f.severity, "infos"),
                getattr(s, {"error": "errors", "warning": "warnings"}.get(f.severity, "infos")) + 1)
    for n in nodes:
        if n.report:
            s.node_errors += n.report.summary.errors
            s.node_warnings += n.report.summary.warnings
    return ClusterReport(gpudoctor_version=version, created_at=created_at,
                         launch=LaunchSummary(launcher=launch.launcher, world_size=launch.world_size,
                                              master_addr=launch.master_addr, master_port=launch.master_port,
                                              run_id=launch.run_id, backend=backend, cpu_only=cpu_only,
                                              backend_note=backend_note),
                         nodes=nodes, findings=findings, outcomes=outcomes, differing=differing, common=common,
                         allreduce=allreduce, pairwise=pairwise,
                         phase_seconds={k: round(v, 3) for k, v in phase_seconds.items()},
                         duration_s=round(duration_s, 3), summary=s)
