"""Terminal report in the spirit of `flutter doctor`: a header, one section per area, a closing line.

Rendering only: it reads a Report and writes to a rich Console; it never probes or judges.
Colour is used only on a TTY, and never when NO_COLOR is set (rich handles both).
"""
from __future__ import annotations

from collections import defaultdict

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpudoctor.facts.findings import SEVERITY_ORDER, Finding, Report
from gpudoctor.rules.engine import AREAS

MARK = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("i", "cyan"), "pass": ("✓", "green"),
        "not_assessed": ("?", "magenta"), "not_applicable": ("-", "dim")}
GIB = 1024 ** 3


def _gib(b: int | None) -> str:
    return f"{b / GIB:.0f} GiB" if b else "?"


def header_lines(report: Report) -> list[str]:
    s = report.snapshot
    h, nv, t, c, m = s.host, s.nvml, s.torch, s.cpu, s.memory
    lines = []
    if h:
        where = ", ".join(x for x in (h.os_name, f"kernel {h.kernel}" if h.kernel else None, h.arch,
                                      f"container: {h.container}" if h.container else None,
                                      f"VM: {h.virtualization}" if h.virtualization else None) if x)
        lines.append(f"[bold]Host[/] {escape(h.hostname or '?')} · {escape(where)}")
    if c or m:
        cores = (f" · {c.usable_cores:g} usable of {c.logical_cores} logical CPUs" if c and c.usable_cores
                 else f" · {c.logical_cores} logical CPUs" if c and c.logical_cores else "")
        lines.append(f"[bold]CPU[/] {escape((c.model or '?') if c else '?')}{cores}")
        if m:
            shm_unknown = bool(s.inputs) and "shm_total_bytes" not in (s.known_fields.get("memory") or [])
            shm = _gib(m.shm_total_bytes) if m.shm_total_bytes else ("?" if shm_unknown else "missing")
            lines[-1] += f" · RAM {_gib(m.total_bytes)} · /dev/shm {shm}"
    if nv and nv.available:
        models: dict[str, int] = defaultdict(int)
        for g in nv.gpus:
            extra = ", ".join(x for x in (_gib(g.memory_total_bytes) if g.memory_total_bytes else None,
                                          f"cc {g.compute_capability}" if g.compute_capability else None) if x)
            models[f"{g.name or '?'}" + (f" ({extra})" if extra else "")] += 1
        listed = "gpus" in s.known_fields.get("nvml", ["gpus"])
        gpus = ", ".join(f"{n} × {k}" for k, n in models.items()) or (
            f"? ({nv.gpu_count} attached, none of them in the inputs)" if nv.gpu_count
            else "none" if listed else "? (not in the inputs)")
        if nv.gpus and nv.gpu_count and nv.gpu_count > len(nv.gpus):
            gpus += f" (only {len(nv.gpus)} of {nv.gpu_count} GPUs in the inputs)"
        lines.append(f"[bold]GPUs[/] {escape(gpus)} · driver {nv.driver_version or '?'} · "
                     f"CUDA driver API {nv.cuda_driver_version or '?'}")
    elif nv is None and s.inputs:
        lines.append("[bold]GPUs[/] ? (no GPU facts in the inputs)")
    else:
        lines.append(f"[bold]GPUs[/] none usable ({escape((nv.error if nv else None) or 'NVML probe failed')})")
    if s.inputs:  # gpudoctor check: what was read
        read = [i for i in s.inputs if i.status == "read"]
        kinds = sorted({k for i in read for k in i.kinds})
        unread = [f"{n} {st}" for st in ("skipped", "rejected") if (n := sum(i.status == st for i in s.inputs))]
        more = f" ({', '.join(unread)}: -v or --json lists them)" if unread else ""
        what = (", ".join(kinds) or "error text") if read else "none read"
        lines.insert(0, f"[bold]Inputs[/] {len(read)} file(s): {escape(what)}{more}")
    if t is None and any(e.probe == "torch" for e in s.probe_errors):
        lines.append("[bold]PyTorch[/] unknown: the torch probe failed (see probe errors)")
    if t:
        if t.installed and t.version:
            cuda_known = "cuda" in s.known_fields.get("torch", ["cuda"])
            extra = ", ".join(x for x in (f"CUDA {t.cuda}" if t.cuda else "CPU-only build" if cuda_known else "CUDA ?",
                                          f"cuDNN {t.cudnn_version}" if t.cudnn_version else None,
                                          f"NCCL {t.nccl_version}" if t.nccl_version else None) if x)
            lines.append(f"[bold]PyTorch[/] {t.version} ({extra}) · {escape(t.interpreter)}")
        else:
            lines.append(f"[bold]PyTorch[/] not installed in {escape(t.interpreter)}")
    return lines


STATUS_LABEL = {"pass": "passed", "not_assessed": "not assessed", "not_applicable": "not applicable"}


def _headline(f: Finding) -> str:
    """``✗ RULE title — subject`` (rich markup) of one finding."""
    sym, style = MARK[f.severity]
    subj = f" — {escape(f.subject)}" if f.subject else ""
    return f"[{style}]{sym}[/] [bold]{f.rule_id}[/] {escape(f.title)}{subj}"


def print_findings(findings: list[Finding], console: Console, verbose: bool) -> None:
    """Each finding, worst first: its rule, title and subject, evidence, fix (and, ``verbose``, its sources)."""
    for f in sorted(findings, key=lambda f: -SEVERITY_ORDER[f.severity]):
        console.print("    " + _headline(f))
        for ev in f.evidence:
            console.print(f"        {escape(ev)}", highlight=False)
        console.print(f"        [green]→ fix:[/] {escape(f.remedy)}", highlight=False)
        if verbose:
            console.print(f"        [dim]source: {escape('; '.join(f.sources))}[/]", highlight=False)


def _section_heading(area: str, fs: list[Finding], outs: list, console: Console) -> None:
    """``[✓] Area (n/m checks passed, k not assessed)`` with the mark of the section's worst outcome."""
    worst = "error" if any(f.severity == "error" for f in fs) else "warning" if any(
        f.severity == "warning" for f in fs) else "info" if fs else "pass"
    if worst == "pass" and all(o.status == "not_applicable" for o in outs):
        worst = "not_applicable"
    passed = sum(o.status == "pass" for o in outs)
    na = sum(o.status == "not_assessed" for o in outs)
    if worst == "pass" and na:
        worst = "not_assessed"  # some checks could not be made: no green tick for the section
    sym, style = MARK[worst]
    counts = f"{passed}/{len(outs)} checks passed" + (f", {na} not assessed" if na else "")
    console.print(f"[{style}]{escape('[' + sym + ']')}[/] [bold]{area}[/] [dim]({counts})[/]")


def _print_outcomes(outs: list, console: Console, verbose: bool, offline: bool) -> None:
    """The rules of a section that did not fail: not assessed ones (folded where they share a reason) and, with
    ``verbose``, passed and not applicable ones."""
    offline_na = [o for o in outs if o.status == "not_assessed" and not verbose and offline]
    if offline_na:  # `check` on a few dumps: one line per area instead of one per rule
        console.print(f"    [magenta]?[/] [dim]not assessed, their facts are not in the inputs: "
                      f"{', '.join(o.rule_id for o in offline_na)} (-v for why)[/]", highlight=False)
    # a scan: rules not assessed for one shared reason (e.g. no driver) fold into one line
    by_reason: dict = defaultdict(list)
    for o in outs:
        if o.status == "not_assessed" and not verbose and o not in offline_na:
            by_reason[o.reason or ""].append(o)
    folded = [o for group in by_reason.values() if len(group) > 1 for o in group]
    for reason, group in by_reason.items():
        if len(group) > 1:
            console.print(f"    [magenta]?[/] [dim]not assessed ({escape(reason) or 'facts missing'}): "
                          f"{', '.join(o.rule_id for o in group)}[/]", highlight=False)
    for o in outs:
        if o in offline_na or o in folded:
            continue
        if o.status == "not_assessed" or (verbose and o.status in ("pass", "not_applicable")):
            sym, style = MARK[o.status]
            why = f": {escape(o.reason)}" if o.reason else ""
            text = escape(o.check or o.title)
            if o.status == "pass":
                console.print(f"    [{style}]{sym}[/] [dim]{o.rule_id}[/] {text}", highlight=False)
            else:
                console.print(f"    [{style}]{sym}[/] [dim]{o.rule_id} {text} — {STATUS_LABEL[o.status]}{why}[/]",
                              highlight=False)


DIAGNOSIS_LINES = 5  #: problems listed in `check`'s diagnosis block; the sections below have them all


def _print_diagnosis(report: Report, console: Console) -> None:
    """`check`: the errors and warnings, cause first (the report's order: gpudoctor.rules.order), one line each
    with the first one's fix, before the per-area sections."""
    worst = [f for f in report.findings if f.severity in ("error", "warning")]
    if not worst:
        return
    console.print("[bold]Diagnosis[/] [dim](cause first; details by area below)[/]")
    for f in worst[:DIAGNOSIS_LINES]:
        console.print("  " + _headline(f), highlight=False)
    console.print(f"    [green]→ fix first:[/] {escape(worst[0].remedy)}", highlight=False)
    if len(worst) > DIAGNOSIS_LINES:
        console.print(f"  [dim]… and {len(worst) - DIAGNOSIS_LINES} more below[/]")
    console.print()


def _print_sections(report: Report, console: Console, verbose: bool) -> None:
    """One section per area (in :data:`AREAS` order) that has rule outcomes. In `check` (offline, not verbose) the
    areas whose every rule lacks its facts in the inputs share one line instead of one section each."""
    by_area: dict[str, list[Finding]] = defaultdict(list)
    for f in report.findings:
        by_area[f.area].append(f)
    outcomes_by_area = defaultdict(list)
    for o in report.outcomes:
        outcomes_by_area[o.area].append(o)
    offline = bool(report.snapshot.inputs)
    if offline and not verbose:
        blank = [a for a in AREAS if outcomes_by_area.get(a) and not by_area.get(a)
                 and all(o.status == "not_assessed" for o in outcomes_by_area[a])]
        if blank:
            console.print(f"[magenta]\\[?][/] [dim]not assessed, their facts are not in the inputs: "
                          f"{escape(', '.join(blank))} (-v lists the rules)[/]", highlight=False)
        outcomes_by_area = defaultdict(list, {a: o for a, o in outcomes_by_area.items() if a not in blank})
    for area in AREAS:
        outs = outcomes_by_area.get(area, [])
        if not outs:
            continue
        fs = by_area.get(area, [])
        _section_heading(area, fs, outs, console)
        print_findings(fs, console, verbose)
        _print_outcomes(outs, console, verbose, offline=bool(report.snapshot.inputs))


def _summary_line(report: Report) -> str:
    """``Summary: n errors, ... · what it took`` (inputs read, runs, or probe time)."""
    sm, snap = report.summary, report.snapshot
    parts = [f"[bold red]{sm.errors} error{'s' * (sm.errors != 1)}[/]" if sm.errors else "0 errors",
             f"[yellow]{sm.warnings} warning{'s' * (sm.warnings != 1)}[/]" if sm.warnings else "0 warnings",
             f"{sm.infos} info"]
    c = snap.confirmation
    ran = c is not None and bool(c.seconds) and c.status not in ("skipped", "not_applicable")
    if snap.inputs:
        took = f"{sum(i.status == 'read' for i in snap.inputs)} input file(s)"
    elif ran and c is not None and snap.duration_s == c.seconds:  # smoke / bench: the run is the whole job
        took = f"runs {c.seconds:.1f} s"
    elif ran and c is not None:
        took = f"probes {snap.duration_s or 0:.1f} s + confirmation runs {c.seconds:.1f} s"
    else:
        took = f"scan {snap.duration_s or 0:.1f} s"
    return (f"Summary: {', '.join(parts)} · {sm.passed} passed, {sm.not_assessed} not assessed, "
            f"{sm.not_applicable} not applicable · {sm.probe_errors} probe error{'s' * (sm.probe_errors != 1)} · "
            + took)


def render(report: Report, console: Console, verbose: bool = False) -> None:
    """Write the report to ``console``. ``verbose`` adds every rule outcome and the facts."""
    snap = report.snapshot
    console.print(f"[bold]gpudoctor[/] {snap.gpudoctor_version} · {snap.created_at}")
    for line in header_lines(report):
        console.print("  " + line)
    for i in snap.inputs:  # `check`: every input not read, with why (skipped ones with -v)
        if i.status == "rejected" or (i.status == "skipped" and verbose):
            console.print(f"    [dim]{i.status}:[/] {escape(i.path)}: {escape(i.reason or '')}", highlight=False)
    console.print()
    if snap.inputs:
        _print_diagnosis(report, console)
    _print_sections(report, console, verbose)
    if snap.topology is not None:
        from gpudoctor.reports.topology import render_topology

        render_topology(snap.topology, console, verbose=verbose)
    if snap.confirmation is not None:
        from gpudoctor.reports.confirm_view import render_confirmation

        render_confirmation(snap.confirmation, console)
    if snap.probe_errors:
        console.print()
        console.print("[magenta]Probe errors[/] (the scan went on without them):")
        for e in snap.probe_errors:
            console.print(f"    [magenta]?[/] {e.probe}: {escape(e.message)} [dim]({e.kind}, {e.seconds:.1f} s)[/]",
                          highlight=False)
    if verbose:
        render_facts(report, console)
    console.print()
    console.print(_summary_line(report))


def render_facts(report: Report, console: Console) -> None:
    """Every fact of the snapshot, one table per section (for -v)."""
    snap = report.snapshot
    for name in ("host", "cpu", "memory", "storage", "torch", "env"):
        sec = getattr(snap, name)
        if sec is None:
            continue
        table = Table(title=f"{name} facts — source: {sec.source}", show_header=False, title_justify="left")
        for k, v in sec.model_dump(exclude={"source"}).items():
            table.add_row(k, escape(str(v)))
        console.print(table)
    nv = snap.nvml
    if nv:
        table = Table(title=f"nvml facts — source: {nv.source}", show_header=False, title_justify="left")
        for k, v in nv.model_dump(exclude={"source", "gpus"}).items():
            table.add_row(k, escape(str(v)))
        console.print(table)
        for g in nv.gpus:
            table = Table(title=f"GPU {g.index} — source: NVML", show_header=False, title_justify="left")
            for k, v in g.model_dump().items():
                table.add_row(k, escape(str(v)))
            console.print(table)
