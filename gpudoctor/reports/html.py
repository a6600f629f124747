"""HTML report: one self-contained file (inline CSS and SVG; no script, no font, no network request).

Order: the verdict and the findings first, then what was measured (cluster nodes and links, topology,
confirmation runs, burn-in), then every rule outcome and the probe errors. Readable at 1280 px and on a
phone (fluid layout; wide tables scroll inside their box).
"""
from __future__ import annotations

from html import escape
from typing import Any

from gpudoctor.reports import cases as C
from gpudoctor.reports import html_sections as S

CSS = """
*{box-sizing:border-box}body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
color:#111827;background:#f9fafb}main{max-width:1200px;margin:0 auto;padding:16px}
h1{font-size:1.5rem;margin:.2em 0}h2{font-size:1.2rem;margin:1.4em 0 .5em;border-bottom:1px solid #e5e7eb}
h3{font-size:1rem;margin:1em 0 .4em}.muted{color:#6b7280}.verdict{display:flex;flex-wrap:wrap;gap:12px;
align-items:center;padding:14px 16px;border-radius:10px;color:#fff}.verdict .big{font-size:1.8rem;font-weight:700}
.FAIL{background:#b91c1c}.WARN{background:#b45309}.OK{background:#15803d}.counts{display:flex;flex-wrap:wrap;
gap:8px;margin:10px 0}.counts span{background:#fff;border:1px solid #e5e7eb;border-radius:999px;padding:2px 10px}
.finding{background:#fff;border:1px solid #e5e7eb;border-left:6px solid #9ca3af;border-radius:8px;
padding:10px 14px;margin:10px 0}.finding.error{border-left-color:#dc2626}.finding.warning{border-left-color:#d97706}
.finding.info{border-left-color:#0891b2}.finding h3{margin:0 0 4px}.sev{font-size:.75rem;text-transform:uppercase;
font-weight:700;padding:1px 6px;border-radius:4px;color:#fff;background:#6b7280}.sev.error{background:#dc2626}
.sev.warning{background:#d97706}.sev.info{background:#0891b2}.finding ul{margin:4px 0;padding-left:20px}
.fix{background:#f0fdf4;border-radius:6px;padding:6px 10px}.src{font-size:.8rem;color:#6b7280;word-break:break-all}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.9em}
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse;background:#fff;margin:6px 0;font-size:.9rem}
th,td{border:1px solid #e5e7eb;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f3f4f6}
table.matrix td,table.matrix th{text-align:center;padding:2px}.cell{display:inline-block;min-width:3.2em;
padding:3px 6px;border-radius:4px}.legend{list-style:none;padding:0;font-size:.85rem}.legend li{margin:3px 0}
.bad{color:#b91c1c;font-weight:600}.warn{color:#b45309;font-weight:600}.good{color:#15803d}
svg.chart{width:100%;max-width:760px;height:auto;background:#fff;border:1px solid #e5e7eb;border-radius:8px;
margin:8px 0;display:block}svg .ct{font-size:13px;font-weight:600}svg .ax{font-size:11px;fill:#374151}
svg .grid{stroke:#e5e7eb}svg .expected{stroke:#dc2626;stroke-dasharray:6 4;stroke-width:1.5}
svg .exp{fill:#b91c1c;paint-order:stroke;stroke:#fff;stroke-width:3px}
details{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:6px 12px;margin:6px 0}
summary{cursor:pointer;font-weight:600}
@media (max-width:600px){body{font-size:14px}main{padding:10px}.verdict .big{font-size:1.4rem}}
"""

STATUS_LABEL = {"pass": "passed", "fail": "failed", "not_assessed": "not assessed", "not_applicable": "not applicable"}


def _finding(node: str | None, f: Any, fail_on: str) -> str:
    subj = f" — {escape(f.subject)}" if f.subject else ""
    where = f"{escape(node)}: " if node else ""
    ev = "".join(f"<li>{escape(e)}</li>" for e in f.evidence)
    src = "; ".join(escape(s) for s in f.sources)
    bar = " (at or above --fail-on)" if C.fails([f], fail_on) else ""
    return (f'<article class="finding {f.severity}"><h3><span class="sev {f.severity}">{f.severity}</span> '
            f'{where}<code>{escape(f.rule_id)}</code> {escape(f.title)}{subj}</h3>'
            f'<ul>{ev}</ul><div class="fix"><b>Fix:</b> {escape(f.remedy)}</div>'
            f'<div class="src">{escape(f.area)}{bar} · sources: {src}</div></article>')


def _header(report: Any, fail_on: str) -> str:
    v = C.verdict(report, fail_on)
    n = C.counts(report)
    words = {"FAIL": f"not fit: findings at or above --fail-on {fail_on}",
             "WARN": f"fit, with findings below --fail-on {fail_on}",
             "OK": "fit: no finding" if not C.all_findings(report) else "fit: informational findings only"}
    lines = []
    snap = getattr(report, "snapshot", None)
    if snap is not None:
        from rich.text import Text

        from gpudoctor.reports.terminal import header_lines

        lines = [Text.from_markup(line).plain for line in header_lines(report)]
    elif C.is_cluster(report):
        la = report.launch
        lines = [f"{la.launcher}, world size {la.world_size}, backend {la.backend or '?'}"
                 + (" (CPU only)" if la.cpu_only else ""),
                 f"{report.summary.nodes_reported} of {report.summary.nodes_expected} node(s) reported, "
                 f"{report.summary.nodes_missing} missing, {report.summary.nodes_hung} hung"]
    took = C.duration(report)
    meta = f"{escape(C.created_at(report) or '')}" + (f" · {took:.1f} s" if took else "")
    chips = "".join(f"<span>{n[k]} {k.replace('_', ' ')}</span>" for k in
                    ("errors", "warnings", "infos", "passed", "not_assessed", "not_applicable"))
    errs = len(C.probe_errors(report))
    if errs:
        chips += f'<span class="bad">{errs} probe error(s)</span>'
    host = "".join(f"<div>{escape(x)}</div>" for x in lines)
    return (f'<header><h1>{escape(C.title(report))}</h1><div class="verdict {v}"><span class="big">{v}</span>'
            f'<span>{escape(words[v])}</span></div><div class="counts">{chips}</div>'
            f'<div class="muted">{meta}</div>{host}</header>')


def _outcomes(report: Any) -> str:
    by_area: dict[str, list[C.Case]] = {}
    for c in C.cases(report):
        by_area.setdefault(c.area, []).append(c)
    out = ['<section id="rules"><h2>Every check</h2>']
    for area, items in by_area.items():
        bad = sum(c.status == "fail" for c in items)
        passed = sum(c.status == "pass" for c in items)
        rows = [[escape(c.node or ""), f"<code>{escape(c.rule_id)}</code>", escape(c.check or c.title),
                 f'<span class="{"bad" if c.status == "fail" else "good" if c.status == "pass" else "muted"}">'
                 f'{STATUS_LABEL.get(c.status, c.status)}</span>', escape(c.reason or "")] for c in items]
        head = ["node", "rule", "check", "outcome", "why"]
        if not any(c.node for c in items):
            rows = [r[1:] for r in rows]
            head = head[1:]
        out.append(f"<details{' open' if bad else ''}><summary>{escape(area)} — {passed}/{len(items)} passed"
                   f"{f', {bad} failed' if bad else ''}</summary>{S.table(head, rows)}</details>")
    out.append("</section>")
    return "".join(out)


def _probe_errors(report: Any) -> str:
    errs = C.probe_errors(report)
    if not errs:
        return ""
    rows = [[escape(node or ""), escape(e.probe), escape(e.kind), escape(e.message), f"{e.seconds:.1f}"]
            for node, e in errs]
    tab = S.table(["node", "probe", "kind", "message", "s"], rows)
    return f'<section id="probe-errors"><h2>Probe errors</h2>{tab}</section>'


def render(report: Any, fail_on: str = "error") -> str:
    """The whole page for any gpudoctor report (scan, check, smoke, bench, cluster, and later kinds)."""
    from gpudoctor import __version__

    found = C.all_findings(report)
    order = {"error": 0, "warning": 1, "info": 2}
    found.sort(key=lambda nf: order[nf[1].severity])
    parts = [_header(report, fail_on), '<section id="findings"><h2>Findings</h2>']
    parts += [_finding(node, f, fail_on) for node, f in found] or ["<p class='good'>No finding.</p>"]
    parts.append("</section>")
    if C.is_cluster(report):
        parts.append(S.cluster(report))
    snap = getattr(report, "snapshot", None)
    if snap is not None:
        parts += [S.topology(snap), S.confirmation(snap), S.burnin(snap)]
    parts += [_outcomes(report), _probe_errors(report),
              f'<footer class="muted"><p>gpudoctor {escape(__version__)} · {escape(getattr(report, "kind", ""))}'
              f' · self-contained report: no script, no network</p></footer>']
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:\">"
            f"<title>{escape(C.title(report))}: {C.verdict(report, fail_on)}</title><style>{CSS}</style></head>"
            f"<body><main>{''.join(parts)}</main></body></html>\n")
