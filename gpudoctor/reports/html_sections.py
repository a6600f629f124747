"""Sections of the HTML report that draw measurements: topology matrix, confirmation runs, burn-in, cluster.

Each function returns an HTML fragment ('' when the report has nothing for it); every text is escaped.
"""
from __future__ import annotations

from html import escape
from typing import Any

from gpudoctor.reports.html_charts import Chart, Series, bar_chart, line_chart, link_colour

MiB = 2**20


def table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    """A scrollable table; cells are HTML already (escape before)."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def _f(v: float | None, fmt: str = ".1f") -> str:
    return "–" if v is None else format(v, fmt)


def topology(snap: Any) -> str:
    t = snap.topology
    if t is None or t.matrix is None:
        return ""
    m = t.matrix
    head = [""] + [escape(d) for d in m.devices]
    rows = []
    for i, a in enumerate(m.devices):
        cells = [f"<b>{escape(a)}</b>"]
        for j, _ in enumerate(m.devices):
            cell = m.matrix[i][j]
            cells.append(f'<span class="cell" style="background:{link_colour(cell)}">{escape(cell or "?")}</span>')
        rows.append(cells)
    present = {("NV#" if c.startswith("NV") else c) for row in m.matrix for c in row if c and c != "X"}
    classes = [lc for lc in t.link_classes if lc.name in present] or t.link_classes
    legend = "".join(f'<li><span class="cell" style="background:{link_colour(lc.name)}">{escape(lc.name)}</span> '
                     f'{escape(lc.meaning)}' + (f" — {lc.bandwidth_gbs:g} GB/s per direction ({escape(lc.basis or '')})"
                                                if lc.bandwidth_gbs else "") + "</li>" for lc in classes)
    return (f'<section id="topology"><h2>GPU topology</h2>{table(head, rows, "matrix")}'
            f'<ul class="legend">{legend}</ul></section>')


def _expected_allreduce(snap: Any) -> tuple[str, float, float] | None:
    """(link label, line rate GB/s, min fraction) the CNF busbw rule compares with; None when unknown."""
    from gpudoctor.rules import REGISTRY
    from gpudoctor.rules.confirmation import busbw_low, link_class
    from gpudoctor.rules.engine import Ctx, NotAssessed

    spec = next((s for s in REGISTRY.values() if s.func is busbw_low), None)
    if spec is None or snap.confirmation is None:
        return None
    try:
        return link_class(Ctx(snap, spec), snap.confirmation)
    except (NotAssessed, Exception):  # the chart is still drawn, without its expected line
        return None


def _expected_copy(snap: Any, cp: Any) -> tuple[float, float] | None:
    """(PCIe line rate GB/s, min fraction) of the copy's GPU, as the CNF copy rule computes it."""
    from gpudoctor.compat import data
    from gpudoctor.rules.confirmation import pcie_line_gbs

    nv = snap.nvml
    for g in (nv.gpus if nv is not None else []):
        same_uuid = cp.uuid and g.uuid and cp.uuid.lower().removeprefix("gpu-") == g.uuid.lower().removeprefix("gpu-")
        same_bus = cp.pci_bus_id and g.pci_bus_id and \
            cp.pci_bus_id.lower().lstrip("0") == g.pci_bus_id.lower().lstrip("0")
        if same_uuid or same_bus:
            rate = pcie_line_gbs(g.pcie_gen_max, g.pcie_width_max)
            return (rate, data.load("confirm")["copy"]["min_fraction"]) if rate else None
    return None


def confirmation(snap: Any) -> str:
    c = snap.confirmation
    if c is None or (c.status in ("skipped", "not_applicable", "error") and not c.runs):
        return ""
    out = [f'<section id="confirmation"><h2>Confirmation runs</h2><p class="muted">{escape(c.backend or "?")} on '
           f'{escape(c.device or "?")}, world size {c.world_size or "?"} · torch {escape(c.torch_version or "?")}'
           + (f" (NCCL {escape(c.nccl_version)})" if c.nccl_version else "") + f" · {c.seconds or 0:.1f} s · "
           f"status <b>{escape(c.status)}</b></p>"]
    if c.allreduce and (c.world_size or 0) >= 2:
        by_dtype: dict[str, list[tuple[float, float]]] = {}
        for a in c.allreduce:
            if a.busbw_gbs is not None and not a.error:
                by_dtype.setdefault(a.dtype, []).append((float(a.size_bytes), a.busbw_gbs))
        exp = _expected_allreduce(snap)
        hl = [(f"{exp[0]} line rate", exp[1]),
              (f"{exp[2]:.0%} of it: the rule's floor", exp[1] * exp[2])] if exp else []
        out.append(line_chart(Chart("all-reduce bus bandwidth vs message size (rank 0, median)", "message size",
                                    "busbw GB/s", [Series(k, v) for k, v in by_dtype.items()], hl, log_x=True)))
        rows = [[escape(f"{a.size_bytes / MiB:g} MiB"), escape(a.dtype),
                 _f(a.time_s.median * 1e3 if a.time_s else None, ".3f"),
                 _f(a.algbw_gbs, ".2f"), _f(a.busbw_gbs, ".2f"),
                 escape(a.error[:80]) if a.error else ("ok" if a.correct else "WRONG" if a.correct is False else "?")]
                for a in c.allreduce]
        out.append(table(["size", "dtype", "time ms", "algbw GB/s", "busbw GB/s", "result"], rows))
    elif c.allreduce:
        out.append("<p>all-reduce: world size 1, nothing crosses a link; run on 2+ GPUs to measure busbw.</p>")
    if c.copies:
        groups = [(f"GPU {cp.device_index}", [("H2D", cp.h2d_gbs.median), ("D2H", cp.d2h_gbs.median)])
                  for cp in c.copies]
        exp_c = [e for e in (_expected_copy(snap, cp) for cp in c.copies) if e]
        hl = []
        if exp_c:
            rate, frac = min(exp_c)
            hl = [(f"PCIe line rate {rate:.1f} GB/s", rate), (f"{frac:.0%} of it: the rule's floor", rate * frac)]
        out.append(bar_chart(f"pinned host<->device copies ({c.copies[0].size_bytes // MiB} MiB, median)", "GB/s",
                             groups, hl))
    d = c.ddp
    if d is not None:
        rows = [[f"{d.world_size} rank(s)", _f(d.step.step_s.median * 1e3, ".2f"),
                 _f(d.step.forward_s.median * 1e3, ".2f"),
                 _f(d.step.backward_s.median * 1e3, ".2f"), _f(d.step.optimizer_s.median * 1e3, ".2f")]]
        if d.single:
            rows.append([f"1 device, batch {d.single.batch}", _f(d.single.step_s.median * 1e3, ".2f"),
                         _f(d.single.forward_s.median * 1e3, ".2f"), _f(d.single.backward_s.median * 1e3, ".2f"),
                         _f(d.single.optimizer_s.median * 1e3, ".2f")])
        eff = f" · scaling efficiency {d.efficiency:.2f} ({escape(d.scaling)})" if d.efficiency is not None else ""
        sps = f" · {d.samples_per_s:.0f} samples/s" if d.samples_per_s else ""
        out.append(f"<h3>DDP step</h3><p>{escape(d.model)} ({d.params / 1e6:.1f} M params), {escape(d.precision)}, "
                   f"batch {d.per_rank_batch}/rank × seq {d.seq_len}{sps}{eff}</p>")
        out.append(table(["", "step ms", "forward", "backward (+all-reduce)", "optimizer"], rows))
    for run in c.runs:
        if run.status != "ok":
            out.append(f'<p class="bad">run {escape(run.name)}: {escape(run.status)} in {run.seconds:.1f} s'
                       + (f" — {escape(run.message)}" if run.message else "") + "</p>")
    out.append("</section>")
    return "".join(out)


_TIME_KEYS = ("t_s", "time_s", "elapsed_s", "seconds", "t", "time")
_GROUP_KEYS = ("gpu", "gpu_index", "device_index", "index", "rank", "device")


def _records(obj: Any) -> list[dict]:
    """The longest list of dicts with a time key anywhere in ``obj`` (a dumped burn-in section)."""
    best: list[dict] = []
    if isinstance(obj, list):
        if obj and all(isinstance(x, dict) for x in obj) and any(k in obj[0] for k in _TIME_KEYS):
            best = obj
        for x in obj:
            cand = _records(x)
            best = cand if len(cand) > len(best) else best
    elif isinstance(obj, dict):
        for v in obj.values():
            cand = _records(v)
            best = cand if len(cand) > len(best) else best
    return best


def burnin(snap: Any, max_charts: int = 6) -> str:
    """Time series of any snapshot section named like 'burn-in', one chart per numeric field (per GPU)."""
    dumped = snap.model_dump(mode="json")
    extra = getattr(snap, "model_extra", None) or {}
    sections = {k: v for k, v in {**dumped, **extra}.items() if "burn" in k.lower() and v}
    if snap.confirmation is not None:
        conf = snap.confirmation.model_dump(mode="json")
        sections.update({k: v for k, v in conf.items() if "burn" in k.lower() and v})
    out = []
    for name, sec in sections.items():
        recs = _records(sec)
        if not recs:
            continue
        tkey = next(k for k in _TIME_KEYS if k in recs[0])
        gkey = next((k for k in _GROUP_KEYS if k in recs[0]), None)
        fields = [k for k, v in recs[0].items() if k not in (tkey, gkey) and isinstance(v, (int, float))
                  and not isinstance(v, bool)]
        charts = []
        for fld in fields[:max_charts]:
            series: dict[str, list[tuple[float, float]]] = {}
            for r in recs:
                if isinstance(r.get(fld), (int, float)) and isinstance(r.get(tkey), (int, float)):
                    key = f"{gkey} {r.get(gkey)}" if gkey else fld
                    series.setdefault(key, []).append((float(r[tkey]), float(r[fld])))
            charts.append(line_chart(Chart(f"{name}: {fld}", tkey, fld, [Series(k, v) for k, v in series.items()],
                                           x_fmt="num")))
        out.append(f'<section id="burnin"><h2>Burn-in: {escape(name)}</h2>{"".join(charts)}</section>')
    return "".join(out)


def cluster(report: Any) -> str:
    """Per-node table, the all-nodes all-reduce, and the pairwise node-to-node links (table and matrix)."""
    rows = []
    for n in report.nodes:
        r = n.report
        errs = sum(f.severity == "error" for f in r.findings) if r else None
        warns = sum(f.severity == "warning" for f in r.findings) if r else None
        gpus = len(r.snapshot.nvml.gpus) if r and r.snapshot.nvml else None
        cls = "bad" if n.status != "reported" or errs else ("warn" if warns else "good")
        rows.append([f'<span class="{cls}">{escape(n.label)}</span>', escape(n.status),
                     "–" if errs is None else str(errs), "–" if warns is None else str(warns),
                     "–" if gpus is None else str(gpus), _f(n.scan_s), escape(n.detail or n.last_phase or "")])
    out = ['<section id="nodes"><h2>Nodes</h2>',
           table(["node", "status", "errors", "warnings", "GPUs", "scan s", "detail"], rows)]
    if report.differing:
        out.append("<h3>Findings that differ between nodes</h3>")
        out.append(table(["rule", "finding", "on", "not on"], [
            [escape(d.rule_id), escape(d.title + (f" — {d.subject}" if d.subject else "")),
             escape(", ".join(d.nodes_with)), escape(", ".join(d.nodes_without))] for d in report.differing]))
    a = report.allreduce
    if a is not None:
        out.append(f"<h3>All-reduce across {a.nodes} nodes ({a.ranks} ranks, {escape(a.backend)} on "
                   f"{escape(a.device)})</h3><p>{a.size_bytes / MiB:g} MiB {escape(a.dtype)}: busbw "
                   f"{_f(a.busbw_gbs, '.2f')} GB/s, algbw {_f(a.algbw_gbs, '.2f')} GB/s"
                   + (f" · <span class='bad'>{escape(a.error)}</span>" if a.error else "")
                   + (" · result WRONG" if a.correct is False else "") + "</p>")
    p = report.pairwise
    if p is not None and p.pairs:
        out.append(f"<h3>Node-to-node links</h3><p class='muted'>{p.rounds} round(s); reference busbw "
                   f"{_f(p.reference_busbw_gbs, '.2f')} GB/s; a pair below {p.slow_fraction:.0%} of it is slow</p>")
        labels = [n.label for n in report.nodes]
        cell = {}
        for pr in p.pairs:
            cell[(pr.a, pr.b)] = cell[(pr.b, pr.a)] = pr
        mrows = []
        for la in labels:
            row = [f"<b>{escape(la)}</b>"]
            for lb in labels:
                pr = cell.get((la, lb))
                if la == lb:
                    row.append('<span class="cell" style="background:#e5e7eb">X</span>')
                elif pr is None:
                    row.append("")
                else:
                    bg = "#fca5a5" if pr.slow or pr.error else "#bbf7d0"
                    row.append(f'<span class="cell" style="background:{bg}">{_f(pr.busbw_gbs, ".2f")}</span>')
            mrows.append(row)
        out.append(table([""] + [escape(x) for x in labels], mrows, "matrix"))
        out.append(table(["round", "pair", "busbw GB/s", "time ms", "verdict"], [
            [str(pr.round), escape(f"{pr.a} ↔ {pr.b}"), _f(pr.busbw_gbs, ".2f"),
             _f(pr.seconds_median * 1e3 if pr.seconds_median else None, ".3f"),
             escape(pr.error) if pr.error else ('<span class="bad">slow</span>' if pr.slow else "ok")]
            for pr in p.pairs]))
    out.append("</section>")
    return "".join(out)
