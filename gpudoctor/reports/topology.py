"""Terminal rendering of the topology section: the GPU/NIC matrix coloured by link class, each GPU's CPU/NUMA
affinity, the link classes with their bandwidth, and each GPU's and NIC's PCIe path to the root port.

Rendering only (reads TopologyFacts, writes to a rich Console)."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpudoctor.facts.model import PcieDevice, TopologyFacts
from gpudoctor.facts.topology import gen_of, link_class

STYLE = {"X": "dim", "NV": "bold green", "PIX": "cyan", "PXB": "cyan", "PHB": "yellow", "NODE": "yellow",
         "SYS": "red"}


def _cell(rel: str | None) -> str:
    if rel is None:
        return "[dim]?[/]"
    return f"[{STYLE.get(link_class(rel) or '', '')}]{escape(rel)}[/]"


def matrix_table(topo: TopologyFacts) -> Table | None:
    """The topo -m matrix (or NVML's pair view when the matrix is missing) as a rich Table."""
    m = topo.matrix
    if m is not None:
        labels = m.devices
        table = Table(title=f"GPU/NIC topology — source: {escape(m.source)}" +
                      (" (cut off: rows missing)" if m.truncated else ""), title_justify="left", box=None,
                      pad_edge=False)
        table.add_column("")
        for d in labels:
            table.add_column(escape(d), justify="center")
        cols = [c for c in ("CPU Affinity", "NUMA Affinity") if c in m.columns]
        for c in cols:
            table.add_column("CPU affinity" if c == "CPU Affinity" else "NUMA")
        for d in labels:
            info = m.info[d]
            name = d if info.kind == "gpu" or not info.nic_name or info.nic_name == d else f"{d} ({info.nic_name})"
            row = [f"[bold]{escape(name)}[/]"] + [_cell(m.rel(d, e)) for e in labels]
            vals = {"CPU Affinity": info.cpu_affinity, "NUMA Affinity": info.numa_affinity}
            row += [escape(vals[c] or ("" if info.kind == "nic" else "N/A" if d not in m.missing_rows else "?"))
                    for c in cols]
            table.add_row(*row)
        return table
    if topo.nvml_pairs:
        idx = sorted({p.a for p in topo.nvml_pairs} | {p.b for p in topo.nvml_pairs})
        rel = {(p.a, p.b): p.common_ancestor for p in topo.nvml_pairs}
        table = Table(title="GPU topology — source: NVML common ancestor (no topo -m)", title_justify="left", box=None)
        table.add_column("")
        for i in idx:
            table.add_column(f"GPU{i}", justify="center")
        for i in idx:
            table.add_row(f"[bold]GPU{i}[/]", *[_cell("X" if i == j else rel.get((min(i, j), max(i, j))))
                                                  for j in idx])
        return table
    return None


def _hop(d: PcieDevice | None, bdf: str) -> str:
    if d is None:
        return escape(bdf)
    parts = [escape(bdf)]
    if d.link_speed_gts or d.link_width:
        g, gm = gen_of(d.link_speed_gts), gen_of(d.link_speed_max_gts)
        cur = f"Gen{g or '?'} x{d.link_width or '?'}"
        cap = f"Gen{gm or '?'} x{d.link_width_max or '?'}"
        low = (d.link_width and d.link_width_max and d.link_width < d.link_width_max) or \
              (d.link_speed_gts and d.link_speed_max_gts and d.link_speed_gts < d.link_speed_max_gts)
        parts.append(f"[{'yellow' if low else 'green'}]{cur}[/]" + (f"[dim]/{cap}[/]" if low else ""))
    if d.kind == "bridge" and d.acs_state in ("enabled", "needs_root"):
        parts.append("[red]ACS redirect[/]" if d.acs_state == "enabled" else "[dim]ACS ?[/]")
    return " ".join(parts)


def render_topology(topo: TopologyFacts, console: Console, verbose: bool = False) -> None:
    """Print the topology section (matrix, link classes, PCIe paths); nothing when no GPU/NIC topology was seen."""
    if not (topo.matrix or topo.nvml_pairs or topo.paths or topo.ib_ports):
        if verbose:
            console.print()
            console.print(f"[bold]Topology[/] [dim]nothing seen ({escape(topo.matrix_error or 'no GPU or NIC')})[/]")
            for k, v in topo.errors.items():
                console.print(f"  [dim]{escape(k)}: {escape(v)}[/]", highlight=False)
        return
    console.print()
    console.print("[bold]Topology[/]")
    t = matrix_table(topo)
    if t is not None:
        console.print(t)
    elif topo.matrix_error:
        console.print(f"  [dim]no topo matrix: {escape(topo.matrix_error)}[/]", highlight=False)
    used = set()
    for p in topo.pairs:
        if p.link_class:
            used.add(p.link_class)
    for lc in topo.link_classes:
        key = "NV" if lc.name == "NV#" else lc.name
        if key not in used and not verbose:
            continue
        bw = f"{lc.bandwidth_gbs:g} GB/s per direction" if lc.bandwidth_gbs else "bandwidth unknown"
        meaning = f" {escape(lc.meaning)} —" if verbose else ""
        console.print(
            f"  [{STYLE.get(key, '')}]{escape(lc.name):4}[/]{meaning} {bw} [dim]({escape(lc.basis or '')})[/]",
            highlight=False,
        )
    devs = {d.bdf: d for d in topo.pcie}
    if topo.paths:
        console.print("  [bold]PCIe paths[/] (device → root port; current [dim]/max when lower[/]):")
        for pp in topo.paths:
            chain = " → ".join(_hop(devs.get(h), h) for h in pp.hops)
            root = f" → {escape(pp.root_complex)}" if pp.root_complex else ""
            console.print(f"    {escape(pp.label)}: {chain}{root}", highlight=False, soft_wrap=True)
    if topo.ib_ports:
        console.print(
            "  [bold]RDMA ports[/]: "
            + ", ".join(
                f"{escape(p.device)}/{p.port} {escape(p.state or '?')} {escape(p.rate_text or '')} "
                f"{escape(p.link_layer or '')}"
                for p in topo.ib_ports
            ),
            highlight=False,
        )
    if verbose and topo.errors:
        for k, v in topo.errors.items():
            console.print(f"  [dim]{escape(k)}: {escape(v)}[/]", highlight=False)
