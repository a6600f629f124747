"""Terminal rendering of the cluster report: nodes table, cross-node findings, inter-node tests, differing findings.

Rendering only: reads a ClusterReport, writes to a rich Console.
"""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpudoctor.facts.cluster import ClusterReport, NodeEntry
from gpudoctor.reports.terminal import MARK, print_findings

STATUS = {"reported": ("✓", "green"), "hung": ("✗", "bold red"), "missing": ("✗", "bold red")}


def _gpus(n: NodeEntry) -> str:
    nv = n.report.snapshot.nvml if n.report else None
    if nv is None:
        return "?"
    if not nv.available or not nv.gpus:
        return "none"
    names = sorted({g.name or "?" for g in nv.gpus})
    return f"{len(nv.gpus)} × {names[0]}" + (" (mixed)" if len(names) > 1 else "")


def _ver(n: NodeEntry, what: str) -> str:
    s = n.report.snapshot if n.report else None
    if s is None:
        return ""
    if what == "driver":
        return (s.nvml.driver_version or "?") if s.nvml and s.nvml.available else "-"
    t = s.torch
    if t is None or not t.installed:
        return "-"
    v = {"torch": t.version, "cuda": t.cuda or "cpu", "nccl": t.nccl_version, "cudnn": t.cudnn_version}.get(what)
    return str(v) if v else "-"  # cudnn_version is an int


def _clock(n: NodeEntry) -> str:
    if n.clock_offset_ms is None:
        return ""
    return f"{n.clock_offset_ms:+.2f}±{n.clock_uncertainty_ms or 0:.2f}"


def nodes_table(report: ClusterReport) -> Table:
    """One row per node: identity, status, GPUs, driver / torch / NCCL, its finding counts, clock offset."""
    t = Table(title="Nodes", title_justify="left", show_lines=False, pad_edge=False)
    for col in ("node", "status", "GPUs", "driver", "torch", "NCCL", "err/warn", "clock ms"):
        t.add_column(col, overflow="fold")
    for n in report.nodes:
        sym, style = STATUS[n.status]
        s = n.report.summary if n.report else None
        t.add_row(escape(n.label), f"[{style}]{sym} {n.status}[/]", escape(_gpus(n)), _ver(n, "driver"),
                  _ver(n, "torch"), _ver(n, "nccl"), f"{s.errors}/{s.warnings}" if s else "", _clock(n))
    return t


def _gbs(x: float | None) -> str:
    return f"{x:.3g} GB/s" if x is not None else "?"


def render_cluster(report: ClusterReport, console: Console, verbose: bool = False) -> None:
    """Write the cluster report to ``console``; ``verbose`` adds each node's full finding list and every pair."""
    L, s = report.launch, report.summary
    console.print(f"[bold]gpudoctor[/] {report.gpudoctor_version} · cluster report · {report.created_at}")
    console.print(f"  [bold]Launch[/] {L.launcher} · world size {L.world_size} · rendezvous "
                  f"{escape(L.master_addr)}:{L.master_port} · backend {L.backend or 'none'}"
                  + (" (CPU only)" if L.cpu_only else ""), highlight=False)
    if L.backend_note:
        console.print(f"  [yellow]![/] {escape(L.backend_note)}", highlight=False)
    console.print(f"  [bold]Nodes[/] {s.nodes_reported} reported, {s.nodes_hung} hung, {s.nodes_missing} missing "
                  f"of {s.nodes_expected}", highlight=False)
    console.print()
    console.print(nodes_table(report))
    for n in report.nodes:
        if n.status != "reported" and n.detail:
            sym, style = STATUS[n.status]
            console.print(f"  [{style}]{sym}[/] {escape(n.label)} {n.status}: {escape(n.detail)}", highlight=False)
    console.print()
    passed = sum(o.status == "pass" for o in report.outcomes)
    na = [o for o in report.outcomes if o.status == "not_assessed"]
    worst = "error" if any(f.severity == "error" for f in report.findings) else "warning" if report.findings else "pass"
    sym, style = MARK[worst]
    console.print(f"[{style}]{escape('[' + sym + ']')}[/] [bold]Cluster[/] [dim]({passed}/{len(report.outcomes)} "
                  f"cross-node checks passed{f', {len(na)} not assessed' if na else ''})[/]")
    print_findings(report.findings, console, verbose)
    for o in report.outcomes:
        if o.status == "not_assessed" or (verbose and o.status != "fail"):
            s2, st = MARK[o.status]
            console.print(f"    [{st}]{s2}[/] [dim]{o.rule_id} {escape(o.check or o.title)}"
                          f"{' — ' + escape(o.reason) if o.reason else ''}[/]", highlight=False)
    _render_confirm(report, console, verbose)
    console.print()
    if report.differing:
        console.print("[bold]Findings that differ between nodes[/]")
        for d in report.differing:
            s2, st = MARK.get(d.severity, ("?", ""))
            subj = f" — {escape(d.subject)}" if d.subject else ""
            console.print(f"    [{st}]{s2}[/] [bold]{d.rule_id}[/] {escape(d.title)}{subj}")
            console.print(f"        on {len(d.nodes_with)} of {len(d.nodes_with) + len(d.nodes_without)} nodes: "
                          f"{escape(', '.join(d.nodes_with))}", highlight=False)
            if verbose:
                for lab, evs in d.evidence.items():
                    for ev in evs:
                        console.print(f"        {escape(lab)}: {escape(ev)}", highlight=False)
    else:
        console.print("[green]✓[/] Node-level findings are the same on every node that reported")
    if report.common:
        console.print(f"[bold]On every node[/] ({len(report.common)}): "
                      + escape(", ".join(f"{c.rule_id}" + (f" ({c.subject})" if c.subject else "")
                                         for c in report.common)), highlight=False)
        console.print("    [dim]details: `gpudoctor scan` on any node, or -v here[/]")
    if verbose:
        for n in report.nodes:
            if n.report and n.report.findings:
                console.print(f"[bold]{escape(n.label)}[/]")
                for f in n.report.findings:
                    s2, st = MARK[f.severity]
                    console.print(f"    [{st}]{s2}[/] {f.rule_id} {escape(f.title)}"
                                  f"{' — ' + escape(f.subject) if f.subject else ''}", highlight=False)
    console.print()
    parts = [f"[bold red]{s.errors} error{'s' * (s.errors != 1)}[/]" if s.errors else "0 errors",
             f"[yellow]{s.warnings} warning{'s' * (s.warnings != 1)}[/]" if s.warnings else "0 warnings"]
    phases = ", ".join(f"{k} {v:.1f} s" for k, v in report.phase_seconds.items())
    console.print(f"Summary: cross-node {', '.join(parts)} · node-level {s.node_errors} errors, {s.node_warnings} "
                  f"warnings (summed) · {s.differing_findings} differing · total {report.duration_s or 0:.1f} s"
                  + (f" [dim]({phases})[/]" if phases else ""), highlight=False)


def _render_confirm(report: ClusterReport, console: Console, verbose: bool) -> None:
    ar, pw = report.allreduce, report.pairwise
    if ar is None and pw is None:
        return
    console.print()
    console.print("[bold]Inter-node tests[/]")
    if ar is not None:
        size = f"{ar.size_bytes / 2**20:g} MiB {ar.dtype}"
        if ar.error and not ar.busbw_gbs:
            console.print(
                f"    [bold red]✗[/] all-reduce, {ar.ranks} ranks on {ar.nodes} nodes ({ar.backend}, {size}): "
                f"{escape(ar.error)}",
                highlight=False,
            )
        else:
            med = ar.seconds.get("median")
            console.print(f"    all-reduce, {ar.ranks} ranks on {ar.nodes} nodes ({ar.backend}, {ar.device}, {size}, "
                          f"{ar.iters} iters): busbw {_gbs(ar.busbw_gbs)}, algbw {_gbs(ar.algbw_gbs)}"
                          + (f", {med * 1e3:.2f} ms/call (median)" if med else "")
                          + (", result correct" if ar.correct else ", [bold red]WRONG RESULT[/]" if ar.correct is False
                             else ""), highlight=False)
    if pw is not None:
        console.print(f"    node-to-node: {pw.rounds} round{'s' * (pw.rounds != 1)} of parallel pairs, "
                      f"{len(pw.pairs)} pairs, reference busbw {_gbs(pw.reference_busbw_gbs)}"
                      + (f", {pw.seconds:.1f} s" if pw.seconds is not None else ""), highlight=False)
        for p in pw.pairs:
            if p.slow or p.error or verbose:
                mark = "[bold red]slow[/]" if p.slow else ""
                what = escape(p.error) if p.error else f"busbw {_gbs(p.busbw_gbs)}"
                console.print(f"        round {p.round + 1}: {escape(p.a)} ↔ {escape(p.b)} {what} {mark}",
                              highlight=False)
        if pw.slow_nodes:
            console.print(f"        slow node(s): {escape(', '.join(pw.slow_nodes))}", highlight=False)
        if pw.slow_links:
            console.print(f"        slow link(s): {escape('; '.join(' ↔ '.join(x) for x in pw.slow_links))}",
                          highlight=False)
