"""Host outputs in the forms users paste them (issue 14 item 5): zsh's and fish's `ulimit -a`, and a
`nvidia-smi topo -m` whose NV# counts show one GPU with links down."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers import detect as D
from gpudoctor.parsers.host_text import parse_ulimit

runner = CliRunner()


def _check(tmp_path: Path, name: str, body: str) -> dict:
    p = tmp_path / name
    p.write_text(body)
    res = runner.invoke(app, ["check", str(p), "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def _outcome(doc: dict, rule: str) -> dict:
    return next(o for o in doc["outcomes"] if o["rule_id"] == rule)


ZSH = """-t: cpu time (seconds)              unlimited
-f: file size (blocks)              unlimited
-s: stack size (kbytes)             8192
-c: core file size (blocks)         0
-u: processes                       63541
-n: file descriptors                1024
-l: locked-in-memory size (kbytes)  64
-v: address space (kbytes)          unlimited
"""
FISH = """Maximum size of core files created                           (kB, -c) 0
Maximum size that may be locked into memory                  (kB, -l) unlimited
Maximum number of open file descriptors                          (-n) 65536
"""


@pytest.mark.parametrize("text, memlock, nofile", [(ZSH, 64 * 1024, 1024), (FISH, "unlimited", 65536)])
def test_zsh_and_fish_ulimit(text, memlock, nofile):
    assert D.ULIMIT in D.detect(text)
    m = parse_ulimit(text)
    assert (m.memlock_soft_bytes, m.nofile_soft) == (memlock, nofile)


def _matrix(n: int, rel) -> str:
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity\n"
    rows = [f"GPU{i}\t" + "\t".join(" X " if i == j else rel(i, j) for j in range(n)) + "\t0-63\t0"
            for i in range(n)]
    legend = "\n\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n"
    return head + "\n".join(rows) + legend


def test_one_gpu_with_fewer_nvlinks_than_its_peers_is_links_down(tmp_path):
    doc = _check(tmp_path, "topo.txt", _matrix(8, lambda i, j: "NV12" if 5 in (i, j) else "NV18"))
    o = _outcome(doc, "TOP006")
    assert o["status"] == "fail"
    f = next(f for f in doc["findings"] if f["rule_id"] == "TOP006")
    assert f["subject"] == "GPU5" and "NV18" in f["evidence"][0]


# DGX-1 hybrid cube mesh: pairs differ (NV1/NV2/SYS) but every V100 has its 6 links
_CUBE = {(0, 1): 1, (0, 2): 1, (0, 3): 2, (0, 4): 2, (1, 2): 2, (1, 3): 1, (1, 5): 2, (2, 3): 2, (2, 6): 1,
         (3, 7): 1, (4, 5): 1, (4, 6): 1, (4, 7): 2, (5, 6): 2, (5, 7): 1, (6, 7): 2}


@pytest.mark.parametrize("n, rel", [
    (8, lambda i, j: "NV18"),
    (8, lambda i, j: f"NV{_CUBE[(min(i, j), max(i, j))]}" if (min(i, j), max(i, j)) in _CUBE else "SYS"),
    (4, lambda i, j: "NV4" if {i, j} in ({0, 1}, {2, 3}) else "SYS"),  # two bridged pairs
    (4, lambda i, j: ("NV4" if {i, j} == {0, 1} else "NV2") if {i, j} in ({0, 1}, {2, 3}) else "SYS"),
])
def test_even_or_ambiguous_nvlink_matrices_stay_quiet(tmp_path, n, rel):
    doc = _check(tmp_path, "topo.txt", _matrix(n, rel))
    assert _outcome(doc, "TOP006")["status"] != "fail"


V100_Q = """==============NVSMI LOG==============

Driver Version                            : 460.32.03
CUDA Version                              : 11.2

Attached GPUs                             : 2
GPU 00000000:00:1E.0
    Product Name                          : Tesla V100-SXM2-16GB
    Retired Pages
        Single Bit ECC                    : {sbe0}
        Double Bit ECC                    : {dbe0}
        Pending Page Blacklist            : {pending0}
GPU 00000000:00:1F.0
    Product Name                          : Tesla V100-SXM2-16GB
    Retired Pages
        Single Bit ECC                    : 0
        Double Bit ECC                    : 0
        Pending Page Blacklist            : No
"""


@pytest.mark.parametrize("sbe0, dbe0, pending0, status, severity", [
    (2, 3, "Yes", "fail", "warning"),      # pending: reload the driver
    (40, 22, "Yes", "fail", "error"),      # table full and one more pending (Azure NHC2018)
    (41, 22, "No", "fail", "warning"),     # full, nothing pending yet
    (1, 0, "No", "pass", None),
])
def test_pre_ampere_page_retirement(tmp_path, sbe0, dbe0, pending0, status, severity):
    doc = _check(tmp_path, "q.txt", V100_Q.format(sbe0=sbe0, dbe0=dbe0, pending0=pending0))
    assert _outcome(doc, "GPU010")["status"] == status
    found = [f for f in doc["findings"] if f["rule_id"] == "GPU010"]
    assert [f["severity"] for f in found] == ([severity] if severity else [])
    assert all(f["subject"] == "GPU 0" for f in found)


def test_page_retirement_is_not_applicable_on_row_remapping_gpus(fix, tmp_path):
    doc = _check(tmp_path, "q.txt", (fix / "h200-text/nvidia-smi-q.txt").read_text())
    assert _outcome(doc, "GPU010")["status"] == "not_applicable"


def test_a_windows_nvidia_smi_table_lists_its_gpus(fix, tmp_path):
    """Windows prints Driver-Model (WDDM/TCC) where Linux prints Persistence-M: the GPUs are read, desktop C+G
    processes are graphics clients, and nothing says no GPU is visible."""
    doc = _check(tmp_path, "smi.txt", (fix / "windows-nvidia-smi-wddm.txt").read_text())
    gpus = doc["snapshot"]["nvml"]["gpus"]
    assert [g["name"] for g in gpus] == ["NVIDIA GeForce RTX 4090"] * 2
    assert all(g.get("persistence_mode") is None for g in gpus)
    assert {p["kind"] for p in gpus[0]["processes"]} == {"graphics"}
    assert _outcome(doc, "DRV001")["status"] == "pass"


@pytest.mark.parametrize("name", ["h200-text/nvidia-smi-q-page-retirement.txt",
                                  "h200-text/nvidia-smi-retired-pages.csv"])
def test_page_retirement_na_on_an_h200_capture_is_not_applicable(fix, tmp_path, name):
    """Captured on the H200 (2026-12-03 15:15 UTC): -q -d PAGE_RETIREMENT and --query-gpu=retired_pages.* print N/A."""
    doc = _check(tmp_path, Path(name).name, (fix / name).read_text())
    assert _outcome(doc, "GPU010")["status"] == "not_applicable"
