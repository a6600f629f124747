"""A pasted nccl-tests run (issue 14 item 5; parsers/nccl_tests.py, rule LOG007): rows and rank lines in the forms of
nccl-tests' printing code (src/common.cu before 2.14, src/util.cu after), judged against the GPUs' NVLink rate."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers.nccl_tests import parse_nccl_tests

runner = CliRunner()

HEADER = ("# nThread 1 nGpus {g} minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
          "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n")
TABLE = """#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    38.12    0.00    0.00      0    37.55    0.00    0.00      0
   268435456      67108864     float     sum      -1   9012.3   29.79   {bw1}      0   9020.1   29.76   {bw1}      0
  8589934592    2147483648     float     sum      -1   286201   30.01   {bw2}      0   286310   30.00   {bw2}      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 31.4219
#
# Collective test concluded: all_reduce_perf
"""


def _ranks(n: int, name: str, hosts: int = 1, new: bool = True) -> str:
    per = n // hosts
    bus = "[0000:{b:02x}:00]" if new else "[0x{b:02x}]"
    group = " Group  0" if new else ""
    return "".join(f"#  Rank {r:2d}{group} Pid  4123{r // per} on node-{r // per:02d} device {r % per:2d} "
                   f"{bus.format(b=0x18 + r)} {name}\n" for r in range(n))


def _run(tmp_path: Path, text: str) -> dict:
    p = tmp_path / "nccl-tests.txt"
    p.write_text("$ ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 8\n" + text)
    res = runner.invoke(app, ["check", str(p), "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def _log007(doc: dict) -> dict:
    return next(o for o in doc["outcomes"] if o["rule_id"] == "LOG007")


def test_rows_rank_lines_and_footer_parse_in_both_layouts():
    for new in (True, False):
        runs = parse_nccl_tests(HEADER.format(g=8) + _ranks(8, "NVIDIA A100-SXM4-80GB", new=new)
                                + TABLE.format(bw1=200.1, bw2=231.5))
        (run,) = runs
        assert run.collective == "all_reduce" and run.ranks == list(range(8)) and run.hosts == ["node-00"]
        assert [r.size_bytes for r in run.rows] == [8, 268435456, 8589934592]
        assert run.rows[-1].busbw_gbs == 231.5 and run.rows[-1].wrong == 0 and run.avg_busbw_gbs == 31.4219
        assert run.out_of_bounds == 0 and set(run.gpus) == {"NVIDIA A100-SXM4-80GB"}


def test_per_iteration_columns_and_unvalidated_rows():
    text = (HEADER.format(g=2) + _ranks(2, "NVIDIA H100 80GB HBM3") +
            "#       size         count      type   redop    root     time   algbw   busbw #wrong    i_min    i_max "
            "   i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%\n"
            "  1073741824     268435456     float     sum      -1   4000.1  268.4  268.4    N/A   3990.0   4010.0   "
            "4009.0     0.10   4001.0  268.3  268.3    N/A   3991.0   4011.0   4010.0     0.11\n")
    (run,) = parse_nccl_tests(text)
    assert run.rows[0].busbw_gbs == 268.4 and run.rows[0].wrong is None


def test_a_run_far_below_nvlink_is_a_warning(tmp_path):
    doc = _run(tmp_path, HEADER.format(g=8) + _ranks(8, "NVIDIA H100 80GB HBM3") + TABLE.format(bw1=52.1, bw2=52.5))
    assert _log007(doc)["status"] == "fail"
    f = next(f for f in doc["findings"] if f["rule_id"] == "LOG007")
    assert f["data"]["busbw_gbs"] == 52.5 and f["data"]["line_rate_gbs"] == 450


@pytest.mark.parametrize("ranks, status", [
    (_ranks(8, "NVIDIA H100 80GB HBM3"), "pass"),                 # 370 of 450: NCCL's ring
    (_ranks(16, "NVIDIA H100 80GB HBM3", hosts=2), "not_assessed"),  # two hosts: the NICs bound it
    (_ranks(8, "NVIDIA L40S"), "not_assessed"),                   # PCIe GPUs: no line rate to judge by
    ("", "not_assessed"),                                         # rank lines cut off
])
def test_healthy_multi_node_pcie_or_cut_runs_are_not_flagged(tmp_path, ranks, status):
    doc = _run(tmp_path, HEADER.format(g=8) + ranks + TABLE.format(bw1=330.0, bw2=370.2))
    assert _log007(doc)["status"] == status


def test_a_run_that_stops_after_its_header_on_pcie_p2p_is_a_p2p_hang(tmp_path):
    """NCCL 2.16 on two RTX 4090s: channels via P2P/IPC, Init COMPLETE, then no result row (nccl-tests#117 class)."""
    src = Path(__file__).parent / "fixtures" / "nccl-tests-p2p-hang-rtx4090.txt"
    doc = _run(tmp_path, src.read_text())
    f = next(f for f in doc["findings"] if f["rule_id"] == "LOG009")
    assert "NCCL_P2P_DISABLE=1" in f["remedy"]


def test_a_finished_run_over_pcie_p2p_is_not_a_hang(tmp_path):
    text = (HEADER.format(g=2) + _ranks(2, "NVIDIA GeForce RTX 4090")
            + "ws:1:1 [0] NCCL INFO Channel 00/0 : 0[2c000] -> 1[2d000] via P2P/IPC\n"
            + TABLE.format(bw1=20.1, bw2=21.5))
    doc = _run(tmp_path, text)
    assert next(o for o in doc["outcomes"] if o["rule_id"] == "LOG009")["status"] == "pass"
