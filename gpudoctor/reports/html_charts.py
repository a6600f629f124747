"""Inline SVG charts for the HTML report: line charts (log-2 x axis for message sizes), grouped bars,
and the colours of the topology link classes. Pure string building; no scripts, no fonts, no network."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

PALETTE = ["#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#65a30d", "#dc2626"]
#: link class -> background colour of the topology matrix cell (fast = green ... slow = red)
LINK_COLOURS = {"NV": "#bbf7d0", "PIX": "#d9f99d", "PXB": "#fef08a", "PHB": "#fed7aa", "NODE": "#fdba74",
                "SYS": "#fca5a5", "X": "#e5e7eb"}


def link_colour(cell: str | None) -> str:
    """Background of a topo -m cell: NV# as NV, SOC as SYS, unknown white."""
    if not cell:
        return "#ffffff"
    key = "NV" if cell.startswith("NV") else ("SYS" if cell == "SOC" else cell)
    return LINK_COLOURS.get(key, "#ffffff")


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    dashed: bool = False


@dataclass
class Chart:
    title: str
    x_label: str
    y_label: str
    series: list[Series] = field(default_factory=list)
    hlines: list[tuple[str, float]] = field(default_factory=list)  # (label, y): expected lines
    log_x: bool = False
    x_fmt: str = "size"  # "size": 1M, 64M; "num": plain number


def _size(v: float) -> str:
    for unit, f in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if v >= f:
            return f"{v / f:g}{unit}"
    return f"{v:g}"


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= v:
            return m * exp
    return 10 * exp


def line_chart(ch: Chart, width: int = 640, height: int = 300) -> str:
    """An SVG line chart that scales to its container (viewBox, width 100%)."""
    pts = [p for s in ch.series for p in s.points]
    if not pts:
        return ""
    left, right, top, bottom = 56, 16, 28, 44
    pw, ph = width - left - right, height - top - bottom
    fx = (lambda x: math.log2(max(x, 1e-12))) if ch.log_x else (lambda x: x)
    xs = [fx(x) for x, _ in pts]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    ymax = _nice_max(max([y for _, y in pts] + [y for _, y in ch.hlines]) * 1.05)

    def X(x: float) -> float:
        return left + (fx(x) - x0) / (x1 - x0) * pw

    def Y(y: float) -> float:
        return top + ph - y / ymax * ph

    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(ch.title)}" '
           f'xmlns="http://www.w3.org/2000/svg">',
           f'<text x="{left}" y="16" class="ct">{escape(ch.title)}</text>']
    for i in range(6):  # y grid
        yv = ymax * i / 5
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{Y(yv):.1f}" y2="{Y(yv):.1f}" class="grid"/>'
                   f'<text x="{left - 6}" y="{Y(yv) + 4:.1f}" class="ax" text-anchor="end">{yv:g}</text>')
    placed: list[float] = []
    for xv in sorted({x for x, _ in pts}, key=lambda v: (not float(v).is_integer() or int(v) & (int(v) - 1) != 0, v)):
        if any(abs(X(xv) - X(p)) < 44 for p in placed):  # powers of two first; a label never overlaps another
            continue
        placed.append(xv)
        lab = _size(xv) if ch.x_fmt == "size" else f"{xv:g}"
        out.append(f'<text x="{X(xv):.1f}" y="{top + ph + 16}" class="ax" text-anchor="middle">{escape(lab)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 6}" class="ax" text-anchor="middle">'
               f'{escape(ch.x_label)}</text>')
    out.append(f'<text x="12" y="{top + ph / 2}" class="ax" text-anchor="middle" '
               f'transform="rotate(-90 12 {top + ph / 2})">{escape(ch.y_label)}</text>')
    for label, yv in ch.hlines:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{Y(yv):.1f}" y2="{Y(yv):.1f}" class="expected"/>'
                   f'<text x="{left + pw - 4}" y="{Y(yv) - 4:.1f}" class="ax exp" text-anchor="end">'
                   f'{escape(label)}</text>')
    for i, s in enumerate(ch.series):
        colour = PALETTE[i % len(PALETTE)]
        pp = sorted(s.points)
        path = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pp)
        dash = ' stroke-dasharray="5 4"' if s.dashed else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        out += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{colour}"><title>{escape(s.name)}: '
                f'{y:.2f} at {escape(_size(x) if ch.x_fmt == "size" else f"{x:g}")}</title></circle>' for x, y in pp]
        out.append(f'<rect x="{left + 8 + 130 * i}" y="{top + 4}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{left + 22 + 130 * i}" y="{top + 13}" class="ax">{escape(s.name)}</text>')
    out.append("</svg>")
    return "".join(out)


def bar_chart(title: str, y_label: str, groups: list[tuple[str, list[tuple[str, float]]]],
              hlines: list[tuple[str, float]] | None = None, width: int = 640, height: int = 260) -> str:
    """Grouped bars: ``groups`` = [(group label, [(bar label, value), ...]), ...], with expected lines."""
    vals = [v for _, bars in groups for _, v in bars]
    if not vals:
        return ""
    hlines = hlines or []
    left, right, top, bottom = 56, 16, 28, 40
    pw, ph = width - left - right, height - top - bottom
    ymax = _nice_max(max(vals + [y for _, y in hlines]) * 1.05)

    def Y(y: float) -> float:
        return top + ph - y / ymax * ph

    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
           f'xmlns="http://www.w3.org/2000/svg"><text x="{left}" y="16" class="ct">{escape(title)}</text>']
    for i in range(6):
        yv = ymax * i / 5
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{Y(yv):.1f}" y2="{Y(yv):.1f}" class="grid"/>'
                   f'<text x="{left - 6}" y="{Y(yv) + 4:.1f}" class="ax" text-anchor="end">{yv:g}</text>')
    out.append(f'<text x="12" y="{top + ph / 2}" class="ax" text-anchor="middle" '
               f'transform="rotate(-90 12 {top + ph / 2})">{escape(y_label)}</text>')
    gw = pw / len(groups)
    for gi, (glabel, bars) in enumerate(groups):
        bw = gw * 0.7 / max(1, len(bars))
        for bi, (blabel, v) in enumerate(bars):
            x = left + gi * gw + gw * 0.15 + bi * bw
            out.append(f'<rect x="{x:.1f}" y="{Y(v):.1f}" width="{bw - 2:.1f}" height="{top + ph - Y(v):.1f}" '
                       f'fill="{PALETTE[bi % len(PALETTE)]}"><title>{escape(glabel)} {escape(blabel)}: {v:.2f}'
                       f'</title></rect><text x="{x + bw / 2:.1f}" y="{Y(v) - 3:.1f}" class="ax" '
                       f'text-anchor="middle">{escape(blabel)} {v:.1f}</text>')
        out.append(f'<text x="{left + gi * gw + gw / 2:.1f}" y="{top + ph + 16}" class="ax" '
                   f'text-anchor="middle">{escape(glabel)}</text>')
    for label, yv in hlines:
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{Y(yv):.1f}" y2="{Y(yv):.1f}" class="expected"/>'
                   f'<text x="{left + pw - 4}" y="{Y(yv) - 4:.1f}" class="ax exp" text-anchor="end">'
                   f'{escape(label)}</text>')
    out.append("</svg>")
    return "".join(out)
