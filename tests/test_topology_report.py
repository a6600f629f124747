"""Topology section of the terminal and JSON reports."""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from gpudoctor.parsers.offline import load_path
from gpudoctor.parsers.topology_text import topology_from_text
from gpudoctor.probes import topology as P
from gpudoctor.reports.jsonout import to_json
from gpudoctor.reports.terminal import render
from gpudoctor.reports.topology import render_topology
from gpudoctor.rules import evaluate
from tests.topology_helpers import build_tree, fake_runner, which_all

FIX = Path(__file__).parent / "fixtures"


def out(topo, verbose=False) -> str:
    con = Console(record=True, width=160, color_system=None)
    render_topology(topo, con, verbose=verbose)
    return con.export_text()


def test_matrix_with_nic_names_affinity_and_classes():
    text = out(topology_from_text((FIX / "topology" / "topo" / "011-4xa30-nv4-pairs-1nic-intel.txt").read_text()))
    assert "NIC0 (mlx5_0)" in text and "24-47,72-95" in text and "NV4" in text
    assert "NV#" in text and "SYS" in text and "GB/s" in text


def test_paths_show_each_hop_gen_and_width(tmp_path):
    build_tree(tmp_path, acs_readable=True, uplink_width=8)
    topo = P.probe_topology(None, roots=P.Roots(str(tmp_path / "sys"), str(tmp_path / "proc")), run=fake_runner(),
                            which=lambda n: None if n == "lspci" else which_all(n))
    text = out(topo)
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("GPU0:"))
    assert "0000:03:00.0 Gen5 x16" in line and "0000:01:00.0 Gen5 x8/Gen5 x16" in line
    assert "ACS redirect" in line and line.rstrip().endswith("pci0000:00")
    assert "mlx5_0/1 ACTIVE 200 Gb/sec" in text


def test_full_report_renders_topology_and_json_carries_it():
    snap = load_path(str(FIX / "h200" / "scan.json"))
    snap.topology = topology_from_text((FIX / "topology" / "h200-topo-m.txt").read_text())
    rep = evaluate(snap)
    con = Console(record=True, width=160, color_system=None)
    render(rep, con, verbose=True)
    text = con.export_text()
    assert "Topology" in text and "GPU/NIC topology" in text and "0-15" in text
    doc = json.loads(to_json(rep))
    t = doc["snapshot"]["topology"]
    assert t["matrix"]["devices"] == ["GPU0"] and t["link_classes"][0]["source"]
    assert {c["name"] for c in t["link_classes"]} == {"NV#", "PIX", "PXB", "PHB", "NODE", "SYS"}


def test_top_rule_docs_are_generated_and_current():
    from gpudoctor.reports.ruledocs import FAMILIES, family_page

    page = Path(__file__).resolve().parents[1] / "docs" / "rules" / "top.md"
    assert FAMILIES["TOP"] == "Topology"
    assert page.read_text() == family_page("TOP"), "regenerate: python -m gpudoctor.reports.ruledocs"


def test_every_top_rule_cites_a_source_and_checklist_or_url():
    from gpudoctor.rules import REGISTRY

    specs = [s for s in REGISTRY.values() if s.family == "TOP"]
    assert len(specs) == 13   # TOP014 merged into NCL007
    for s in specs:
        assert s.sources and any(x.startswith("http") for x in s.sources), s.id
        assert s.area == "Topology" and s.what and s.why and s.fix
