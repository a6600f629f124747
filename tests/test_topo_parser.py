"""`nvidia-smi topo -m` parser: every real matrix we have, the facts listed next to it, garbage and fuzzing."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudoctor.parsers.topo import ParseError, link_class, nvlink_count, parse_topo_matrix

FIX = Path(__file__).parent / "fixtures" / "topology"
RAW = sorted((FIX / "topo").glob("*.txt"))


def read(p: Path) -> str:
    return p.read_text(encoding="utf-8")


def facts_of(path: Path) -> dict[str, str]:
    """The '- key: value' bullets of the .facts.md next to a raw file (written by the corpus authors)."""
    text = read(path.with_suffix(".facts.md"))
    section = text.split("## Facts a correct parser must extract", 1)[1].split("##", 1)[0]
    out = {}
    for line in section.splitlines():
        m = re.match(r"^- ([^:]+):\s*(.*)$", line.strip())
        if m:
            out[m.group(1).strip()] = m.group(2).strip()
    return out


def test_eight_real_matrices_of_four_and_eight_gpus_present():
    mats = [parse_topo_matrix(read(p)) for p in RAW]
    assert len(RAW) == 8
    assert sum(len(m.gpus) in (4, 8) for m in mats) >= 6


@pytest.mark.parametrize("path", RAW, ids=[p.stem for p in RAW])
def test_raw_matrix_facts(path):
    m = parse_topo_matrix(read(path))
    f = facts_of(path)
    assert len(m.gpus) == int(f["GPUs"].split()[0])
    nic_count = int(f["NIC columns/rows"].split()[0])
    assert len(m.nics) == nic_count
    names = re.search(r"\((.*)\)", f["NIC columns/rows"])
    if names and nic_count:
        assert m.nics == [x.strip() for x in names.group(1).split(",")]
    cols = re.sub(r"\(no [^)]*\)", "", f["Columns after the matrix"]).strip()
    assert m.columns == [c.strip() for c in cols.split(",")]
    for rel in f["Relations"].split(";"):
        pair, value = rel.strip().rsplit(" ", 1)
        a, b = pair.split("\u2013")
        assert m.rel(a, b) == value, (a, b)
        assert m.rel(b, a) == value
    distinct = {m.rel(a, b) for i, a in enumerate(m.gpus) for b in m.gpus[i + 1:]}
    assert distinct == {x.strip() for x in f["Distinct GPU\u2013GPU relation values"].split(",")}
    aff = {k: v for k, v in f.items() if re.match(r"GPU\d+ (CPU Affinity|NUMA Affinity|GPU NUMA ID)", k)}
    for key, val in aff.items():
        gpu, field = key.split(" ", 1)
        for part in [f"{field}: {val}"] if ";" not in val else [f"{field}: {val.split(';')[0]}"] + \
                [p.strip() for p in val.split(";")[1:]]:
            fname, fval = part.split(":", 1)
            got = {"CPU Affinity": m.info[gpu].cpu_affinity, "NUMA Affinity": m.info[gpu].numa_affinity,
                   "GPU NUMA ID": m.info[gpu].gpu_numa_id}[fname.strip()]
            assert (got if got is not None else "N/A") == fval.strip(), key
    assert f["Matrix symmetric"].startswith("True")
    legend = f["NIC Legend"]
    if "=" in legend:
        want = dict(x.strip().split("=") for x in legend.split(","))
        assert m.nic_legend == want
        assert all(m.info[k].nic_name == v for k, v in want.items())
    else:
        assert m.nic_legend == {}
    assert not m.truncated and m.warnings == []
    for i in range(len(m.devices)):
        assert m.matrix[i][i] == "X"


def test_h200_single_gpu_with_ansi_codes():
    text = read(FIX / "h200-topo-m.txt")
    assert "\x1b[4m" in text
    m = parse_topo_matrix(text)
    assert m.devices == ["GPU0"] and m.matrix == [["X"]]
    assert m.info["GPU0"].cpu_affinity == "0-15" and m.info["GPU0"].numa_affinity == "0"
    assert m.info["GPU0"].gpu_numa_id is None
    assert m.columns == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]


def test_p2p_matrix_is_rejected_not_misread():
    with pytest.raises(ParseError, match="topo -p2p"):
        parse_topo_matrix(read(FIX / "h200-topo-p2p.txt"))


def test_case_001_two_gpus_node_without_gpu_numa_id_column():
    m = parse_topo_matrix(read(FIX / "cases" / "001-topo.txt"))
    assert m.gpus == ["GPU0", "GPU1"] and m.rel("GPU0", "GPU1") == "NODE"
    assert m.columns == ["CPU Affinity", "NUMA Affinity"]
    assert m.info["GPU1"].cpu_affinity == "0-63" and m.info["GPU1"].numa_affinity == "0"


def test_case_011_cut_paste_keeps_every_known_relation():
    m = parse_topo_matrix(read(FIX / "cases" / "011-topo.txt"))
    assert m.truncated and m.missing_rows == ["GPU7", "mlx5_0", "mlx5_1"]
    assert len(m.gpus) == 8 and m.nics == ["mlx5_0", "mlx5_1"]
    assert {m.rel(a, b) for i, a in enumerate(m.gpus) for b in m.gpus[i + 1:]} == {"NV1", "NV2", "SYS"}
    assert [m.rel(g, "mlx5_0") for g in m.gpus[:7]] == ["NODE", "NODE", "PIX", "PIX", "SYS", "SYS", "SYS"]
    assert m.rel("GPU7", "GPU3") == "NV2"  # known from GPU3's row although GPU7's row is missing
    assert m.rel("mlx5_0", "mlx5_1") is None  # never invented
    assert m.info["GPU0"].cpu_affinity == "0-23,48-71" and m.info["GPU4"].cpu_affinity == "24-47,72-95"
    assert m.info["GPU7"].cpu_affinity is None


def test_case_027_phb_numa_not_available():
    m = parse_topo_matrix(read(FIX / "cases" / "027-topo.txt"))
    assert m.rel("GPU0", "GPU1") == "PHB"
    assert m.info["GPU0"].numa_affinity is None and m.info["GPU0"].cpu_affinity == "0-63"


def test_prose_before_the_header_is_skipped():
    m = parse_topo_matrix("GPU0 is hot and GPU1 too\n$ nvidia-smi topo -m\n" + read(FIX / "cases" / "001-topo.txt"))
    assert m.rel("GPU0", "GPU1") == "NODE"


def test_helpers():
    assert link_class("NV12") == "NV" and link_class("SOC") == "SYS" and link_class(None) is None
    assert nvlink_count("NV18") == 18 and nvlink_count("PIX") == 0


BASE = read(FIX / "topo" / "011-4xa30-nv4-pairs-1nic-intel.txt")


@pytest.mark.parametrize(
    "mutate,msg",
    [
        (lambda t: t.replace("GPU1    NV4      X      SYS", "GPU1    NV4      X      PIX"), "not symmetric"),
        (lambda t: t.replace("GPU2    SYS     SYS      X", "GPU2    SYS     SYS     NV4"), "diagonal"),
        (
            lambda t: t.replace("GPU3    SYS     SYS     NV4      X", "GPU3    SYS     SYS     FOO      X"),
            "not a topology relation",
        ),
        (
            lambda t: t.replace(
                "GPU2    SYS     SYS      X      NV4     PXB     24-47,72-95", "GPU2    SYS     SYS      X      NV4"
            ),
            "cells",
        ),
        (lambda t: t.replace("GPU1    NV4", "GPU9    NV4"), "not a device|row"),
        (lambda t: "\n".join(ln for ln in t.splitlines() if not ln.startswith("GPU1")), "row"),
        (lambda t: t.replace("0-23,48-71      0", "0-23,48-71      zero", 1), "CPU/NUMA"),
    ],
)
def test_broken_matrices_raise_clear_errors(mutate, msg):
    broken = mutate(BASE)
    assert broken != BASE
    with pytest.raises(ParseError, match=msg):
        parse_topo_matrix(broken)


@pytest.mark.parametrize("text", ["", "hello world", "GPU0 is hot\n", "nvidia-smi: command not found",
                                  "\tGPU0\tGPU1\n", "{\"a\": 1}", "\x00\x01\x02", "Legend:\n  X = Self\n"])
def test_garbage_raises_parse_error(text):
    with pytest.raises(ParseError):
        parse_topo_matrix(text)


# ---------------------------------------------------------------- fuzzing

@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("GPUNIC0123456789 \tXSYNODEPHBVAfinty-,\n\x1b[m")), max_size=400))
def test_fuzz_text_only_parse_error(text):
    try:
        m = parse_topo_matrix(text)
    except ParseError:
        return
    n = len(m.devices)  # anything accepted must be a consistent matrix
    for i in range(n):
        if m.matrix[i][0] is not None:
            assert m.matrix[i][i] == "X"
            for j in range(n):
                if m.matrix[j][0] is not None:
                    assert m.matrix[i][j] == m.matrix[j][i]


RELS = ["PIX", "PXB", "PHB", "NODE", "SYS", "NV1", "NV2", "NV4", "NV12", "NV18"]


@st.composite
def matrices(draw):
    g = draw(st.integers(1, 8))
    k = draw(st.integers(0, 4))
    labels = [f"GPU{i}" for i in range(g)] + [f"NIC{i}" for i in range(k)]
    n = len(labels)
    cells = [["X"] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            pool = RELS if (i < g and j < g) else RELS[:5]
            cells[i][j] = cells[j][i] = draw(st.sampled_from(pool))
    sep = draw(st.sampled_from(["\t", "    ", "  \t"]))
    ansi = draw(st.booleans())
    numa = draw(st.booleans())
    aff = [f"{i * 4}-{i * 4 + 3}" for i in range(g)]
    return labels, cells, sep, ansi, numa, aff, g


def render(labels, cells, sep, ansi, numa, aff, g):
    cols = ["CPU Affinity"] + (["NUMA Affinity", "GPU NUMA ID"] if numa else [])
    head = sep + sep.join(labels + cols)
    if ansi:
        head = "\x1b[4m" + head + "\x1b[0m"
    lines = [head]
    for i, lab in enumerate(labels):
        row = [lab] + [" X " if c == "X" else c for c in cells[i]]
        if i < g:
            row += [aff[i]] + (["0", "N/A"] if numa else [])
        lines.append(sep.join(row))
    return "\n".join(lines) + "\n\nLegend:\n\n  X    = Self\n"


@settings(max_examples=150, deadline=None, derandomize=True)
@given(matrices())
def test_fuzz_generated_matrices_round_trip(mat):
    labels, cells, sep, ansi, numa, aff, g = mat
    m = parse_topo_matrix(render(*mat))
    assert m.devices == labels and m.matrix == cells
    assert [m.info[x].cpu_affinity for x in labels[:g]] == aff
    assert m.gpus == labels[:g]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(matrices(), st.data())
def test_fuzz_one_changed_cell_is_caught(mat, data):
    labels, cells, sep, ansi, numa, aff, g = mat
    n = len(labels)
    if n < 2:
        return
    i = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(0, n - 1).filter(lambda x: x != i))
    new = data.draw(st.sampled_from([r for r in RELS + ["X"] if r != cells[i][j]]))
    bad = [row[:] for row in cells]
    bad[i][j] = new  # one cell changed: the matrix is no longer symmetric (or X leaves the diagonal)
    with pytest.raises(ParseError):
        parse_topo_matrix(render(labels, bad, sep, ansi, numa, aff, g))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(matrices(), st.data())
def test_fuzz_cut_paste_never_invents_rows(mat, data):
    text = render(*mat).split("\n\nLegend")[0]
    lines = text.splitlines()
    keep = data.draw(st.integers(2, len(lines)))
    try:
        m = parse_topo_matrix("\n".join(lines[:keep]))
    except ParseError:
        return
    cells = mat[1]
    got_rows = [r for r in m.matrix if r[0] is not None]
    assert len(got_rows) == keep - 1
    for i, row in enumerate(m.matrix):
        if row[0] is not None:
            assert row == cells[i]
