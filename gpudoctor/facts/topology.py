"""Derived topology views shared by the TOP rules, the reports and `gpudoctor check`.

Pure functions over facts (no probing, no printing):
- :func:`gpu_pairs`: every GPU pair with its relation (topo -m), NVML's common ancestor
  and P2P status, the link class and the line-rate bandwidth of that class on this host;
- :func:`build_link_classes`: the link-class table (meaning, GB/s per direction, basis,
  source) from ``rules/topology.toml``;
- :func:`allreduce_ms`: the ring all-reduce time of a message over a link;
- :func:`link_class`, :func:`speed_to_gen`: the relation and PCIe-generation definitions the parsers use.

Units: GB/s = 1e9 bytes/s per direction; ms.
"""
from __future__ import annotations

from gpudoctor.compat import data
from gpudoctor.facts.model import LinkClass, NvmlFacts, PcieDevice, TopologyFacts, TopoPair

CLASS_ORDER = ["NV", "PIX", "PXB", "PHB", "NODE", "SYS"]

# Closeness order used to rank paths (smaller = closer). NV# beats every PCIe path.
RELATION_RANK = {"X": 0, "NV": 1, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6}


def link_class(rel: str | None) -> str | None:
    """'NV12' -> 'NV', 'PIX' -> 'PIX', 'SOC' -> 'SYS'; None stays None."""
    if rel is None:
        return None
    if rel.startswith("NV"):
        return "NV"
    return "SYS" if rel == "SOC" else rel


def nvlink_count(rel: str | None) -> int:
    """Number of bonded NVLinks in an 'NV#' relation, 0 for anything else."""
    return int(rel[2:]) if rel and rel.startswith("NV") and rel[2:].isdigit() else 0


# PCIe generation -> GT/s per lane (PCI-SIG; table in rules/topology.toml with sources)
GEN_SPEED_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}


def speed_to_gen(gts: float | None) -> int | None:
    """GT/s per lane -> PCIe generation (2.5 -> 1, 32 -> 5); None when unknown."""
    if gts is None:
        return None
    for gen, s in GEN_SPEED_GTS.items():
        if abs(s - gts) < 0.05:
            return gen
    return None


def _tbl() -> dict:
    return data.load("topology")


def pcie_gbs(gts: float | None, width: int | None) -> float | None:
    """Line rate per direction (GB/s) of a PCIe link of ``gts`` GT/s per lane and ``width`` lanes.

    Source: rules/topology.toml [pcie] (PCIe generation table, compat-research.md 7a).
    """
    gen = speed_to_gen(gts)
    if gen is None or not width:
        return None
    per_lane = _tbl()["pcie"]["gbs_per_lane"].get(str(gen))
    return round(per_lane * width, 2) if per_lane else None


def link_class_of(rel: str | None) -> str | None:
    """'NV12' -> 'NV', 'SOC' -> 'SYS' (see :func:`link_class`)."""
    return link_class(rel)


def gen_of(gts: float | None) -> int | None:
    return speed_to_gen(gts)


#: nvmlDeviceGetNvLinkVersion returns an nvmlNvlinkVersion_t, not the NVLink generation (nvml.h; nvidia-ml-py:
#: NVML_NVLINK_VERSION_1_0 = 1, 2_0 = 2, 2_2 = 3, 3_0 = 4, 3_1 = 5, 4_0 = 6, 5_0 = 7, 6_0 = 8). Seen on the
#: 2 x H200 host: 6, i.e. NVLink 4.0 (docs/examples/h200-2gpu-2026-11-29/scan.json).
NVML_NVLINK_GENERATION = {1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 5, 8: 6}


def nvlink_generation(nvml_version: int | None) -> int | None:
    """NVLink generation (1-6) of an NVML nvmlNvlinkVersion_t value; None when unknown (0 = invalid)."""
    return NVML_NVLINK_GENERATION.get(nvml_version) if isinstance(nvml_version, int) else None


def nvlink_per_link_gbs(version: int | None, gpu_name: str | None) -> tuple[float, str]:
    """Per-link, per-direction NVLink bandwidth (GB/s) and how it was chosen (rules/topology.toml [nvlink]).

    ``version`` is NVML's nvmlNvlinkVersion_t value (6 = NVLink 4.0), mapped by :func:`nvlink_generation`."""
    t = _tbl()["nvlink"]
    if gpu_name and any(n in gpu_name for n in t["ga102_names"]):
        return t["ga102_per_link_gbs"], f"GA102 NVLink bridge ({gpu_name})"
    gen = nvlink_generation(version)
    if gen is not None and str(gen) in t["per_link_gbs"]:
        return t["per_link_gbs"][str(gen)], f"NVLink {gen}"
    return t["default_per_link_gbs"], "NVLink generation unknown: assumed 25 GB/s per link and direction"


def expected_nvlinks(gpu_name: str | None) -> tuple[int, str] | None:
    """(expected NVLink count, source) for a GPU model name, or None for models without an entry."""
    if not gpu_name:
        return None
    for e in _tbl()["nvlink"]["expected"]:
        if e["match"] in gpu_name and not (e.get("exclude") and e["exclude"] in gpu_name):
            return int(e["links"]), e["source"]
    return None


def expected_nvlink_gbs(gpu_name: str | None) -> tuple[float, str] | None:
    """(NVLink line rate of one GPU, GB/s per direction, and its basis) from the model name alone: the expected
    link count x the per-link rate of the part's generation (rules/topology.toml [[nvlink.expected]]); None for
    models without an entry (PCIe parts, bridges)."""
    if not gpu_name:
        return None
    t = _tbl()["nvlink"]
    for e in t["expected"]:
        if e["match"] in gpu_name and not (e.get("exclude") and e["exclude"] in gpu_name) and e.get("generation"):
            per = t["per_link_gbs"][str(e["generation"])]
            return int(e["links"]) * per, f"{e['links']} NVLink {e['generation']} links x {per:g} GB/s ({e['match']})"
    return None


def allreduce_ms(size_bytes: float, n: int, busbw_gbs: float) -> float:
    """Ring all-reduce time in ms: S x 2(n-1)/n / busbw (nccl-tests doc/PERFORMANCE.md)."""
    if n < 2 or busbw_gbs <= 0:
        return 0.0
    return size_bytes * 2.0 * (n - 1) / n / (busbw_gbs * 1e9) * 1e3


def _gpu_pcie(topo: TopologyFacts) -> dict[str, PcieDevice]:
    by = {d.bdf: d for d in topo.pcie}
    return {p.label: by[p.bdf] for p in topo.paths if p.label.startswith("GPU") and p.bdf in by}


def gpu_link_gbs(topo: TopologyFacts | None, nvml: NvmlFacts | None) -> tuple[float | None, str | None]:
    """The slowest GPU's PCIe line rate at its maximum (GB/s per direction) and its 'GenN xW' basis.

    Uses NVML's max generation/width when present, else sysfs max_link_speed/width.
    """
    best: list[tuple[float, str]] = []
    gts = _tbl()["pcie"]["gts"]
    if nvml and nvml.available:
        for g in nvml.gpus:
            if g.pcie_gen_max and g.pcie_width_max:
                bw = pcie_gbs(gts.get(str(g.pcie_gen_max)), g.pcie_width_max)
                if bw:
                    best.append((bw, f"PCIe Gen{g.pcie_gen_max} x{g.pcie_width_max}"))
    if not best and topo:
        for d in _gpu_pcie(topo).values():
            bw = pcie_gbs(d.link_speed_max_gts, d.link_width_max)
            if bw:
                best.append((bw, f"PCIe Gen{gen_of(d.link_speed_max_gts)} x{d.link_width_max}"))
    if not best:
        return None, None
    return min(best)


def build_link_classes(topo: TopologyFacts | None, nvml: NvmlFacts | None) -> list[LinkClass]:
    """The link classes (NV, PIX, PXB, PHB, NODE, SYS) with this host's line-rate bandwidth per direction.

    PCIe classes carry the GPUs' own PCIe line rate (the upper bound of any PCIe path; SYS
    and NODE paths may be slower still). NV carries per-link bandwidth times the largest
    NV# in the matrix when one is known.
    """
    t = _tbl()
    pc, basis = gpu_link_gbs(topo, nvml)
    version = next((x.version for x in (topo.nvlinks if topo else []) if x.version), None)
    name = next((g.name for g in nvml.gpus), None) if nvml and nvml.available and nvml.gpus else None
    per_link, nv_basis = nvlink_per_link_gbs(version, name)
    nmax = 0
    if topo and topo.matrix:
        for row in topo.matrix.matrix:
            for c in row or []:
                if c and c.startswith("NV") and c[2:].isdigit():
                    nmax = max(nmax, int(c[2:]))
    out = []
    for cls in CLASS_ORDER:
        meaning = t["classes"][cls]
        if cls == "NV":
            bw = round(per_link * nmax, 2) if nmax else per_link
            b = f"{nmax} links x {per_link:g} GB/s ({nv_basis})" if nmax else f"per link ({nv_basis})"
            out.append(LinkClass(name="NV#", meaning=meaning, bandwidth_gbs=bw, basis=b, source=t["nvlink"]["source"]))
        else:
            out.append(LinkClass(name=cls, meaning=meaning, bandwidth_gbs=pc,
                                 basis=(f"{basis} line rate (upper bound; P2P may be unavailable)" if pc else
                                        "GPU PCIe link unknown"),
                                 source=t["pcie"]["source"] + "; " + t["classes"]["source"]))
    return out


def pair_link_class(relation: str | None, nvml_ancestor: str | None, p2p: dict[str, str]) -> str | None:
    """A pair's link class: topo -m's relation, else NVLink when NVML's P2P status says so, else NVML's common
    ancestor (PIX ... SYS); None when no source says."""
    if relation:
        return link_class(relation)
    if p2p.get("nvlink") == "OK":
        return "NV"
    return nvml_ancestor if nvml_ancestor not in (None, "X") else None


def gpu_pairs(topo: TopologyFacts | None) -> list[TopoPair]:
    """Every GPU pair from the topo matrix and/or NVML pairs (indices are GPU numbers), with its link class;
    ``bandwidth_gbs`` is filled by :func:`finish`."""
    out: dict[tuple[int, int], TopoPair] = {}
    if topo is None:
        return []
    m = topo.matrix
    if m:
        gpus = m.gpus
        for x, a in enumerate(gpus):
            for b in gpus[x + 1:]:
                ia, ib = int(a[3:]), int(b[3:])
                out[(ia, ib)] = TopoPair(a=ia, b=ib, relation=m.rel(a, b))
    for p in topo.nvml_pairs:
        v = out.setdefault((p.a, p.b), TopoPair(a=p.a, b=p.b))
        v.nvml_common_ancestor, v.p2p = p.common_ancestor, dict(p.p2p)
    for v in out.values():
        v.link_class = pair_link_class(v.relation, v.nvml_common_ancestor, v.p2p)
    return [out[k] for k in sorted(out)]


def finish(topo: TopologyFacts, nvml: NvmlFacts | None = None) -> TopologyFacts:
    """Fill the derived parts (link classes with this host's bandwidth, the GPU pairs) in place; returns ``topo``."""
    topo.link_classes = build_link_classes(topo, nvml)
    bw = {("NV" if c.name == "NV#" else c.name): c.bandwidth_gbs for c in topo.link_classes}
    per_link = None
    for c in topo.link_classes:
        if c.name == "NV#":
            per_link = nvlink_per_link_gbs(next((x.version for x in topo.nvlinks if x.version), None), None)[0]
    pairs = []
    for p in gpu_pairs(topo):
        cls = p.link_class
        b = bw.get(cls) if cls else None
        if cls == "NV" and p.relation and p.relation[2:].isdigit() and per_link:
            b = round(per_link * int(p.relation[2:]), 2)
        p.bandwidth_gbs = b
        pairs.append(p)
    topo.pairs = pairs
    return topo


def gpu_count(topo: TopologyFacts | None, nvml: NvmlFacts | None) -> int | None:
    """Number of GPUs from NVML, else the topo matrix, else sysfs paths; None when nothing says."""
    if nvml is not None and nvml.available:
        return len(nvml.gpus)
    if topo is not None and topo.matrix is not None:
        return len(topo.matrix.gpus)
    if topo is not None and topo.paths:
        return sum(1 for p in topo.paths if p.label.startswith("GPU"))
    if nvml is not None and topo is not None and topo.lspci_available is not None:
        return 0  # probed this host: NVML sees no GPU, and no matrix or sysfs GPU says otherwise
    return None


def nvlink_components(topo: TopologyFacts, n: int) -> list[set[int]]:
    """Groups of GPUs connected to each other through NVLink (NV# pairs, NVSwitch links, NVML P2P nvlink OK)."""
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in gpu_pairs(topo):
        if p.a < n and p.b < n and p.link_class == "NV":
            parent[find(p.a)] = find(p.b)
    switch = sorted({x.gpu for x in topo.nvlinks
                     if x.active and x.remote_type == "switch" and x.gpu is not None and x.gpu < n})
    for g in switch[1:]:
        parent[find(g)] = find(switch[0])
    groups: dict[int, set[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), set()).add(i)
    return list(groups.values())

