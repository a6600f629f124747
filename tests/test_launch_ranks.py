"""LOG005: the same global ranks started twice and others never, from the launchers' rank lines (format strings in
gpudoctor/parsers/launch_ranks.py); a restart (every rank again) or one node's log (a subset, once each) is quiet."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers.launch_ranks import parse_rank_announcements
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate

runner = CliRunner()


def lightning(ranks, world, new=True):
    word = "Initializing distributed" if new else "initializing ddp"
    return "".join(f"{word}: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{world}\n" for r in ranks)


def agent(ranks, world, restart=0, node_rank=0):
    return ("[2026-03-02 10:00:01,118] torch.distributed.elastic.agent.server.api: [INFO] [default] Rendezvous "
            f"complete for workers. Result:\n  restart_count={restart}\n  master_addr=gpu-a01\n  master_port=29500\n"
            f"  group_rank={node_rank}\n  group_world_size=2\n  local_ranks={list(range(len(ranks)))}\n"
            f"  role_ranks={list(ranks)}\n  global_ranks={list(ranks)}\n  role_world_sizes={[world] * len(ranks)}\n"
            f"  global_world_sizes={[world] * len(ranks)}\n  event_log_handler=null\n")


def _log005(tmp_path: Path, text: str) -> tuple[str, list[dict]]:
    p = tmp_path / "job.log"
    p.write_text(text)
    doc = json.loads(runner.invoke(app, ["check", str(p), "--format", "json"]).stdout)
    status = next(o["status"] for o in doc["outcomes"] if o["rule_id"] == "LOG005")
    return status, [f for f in doc["findings"] if f["rule_id"] == "LOG005"]


@pytest.mark.parametrize("text", [
    "GPU available: True (cuda), used: True\n" + lightning(range(4), 8) + lightning(range(4), 8),  # srun, no tasks/node
    lightning([1, 0, 2, 3], 8, new=False) + lightning([0, 3, 2, 1], 8, new=False),                # Lightning 1.0-1.5
    agent(range(4), 8) + agent(range(4), 8),                                       # two nodes with --node-rank 0
])
def test_ranks_started_twice_while_others_never_started(tmp_path, text):
    status, fs = _log005(tmp_path, text)
    assert status == "fail" and len(fs) == 1
    assert fs[0]["data"]["duplicated"] == [0, 1, 2, 3] and fs[0]["data"]["missing"] == [4, 5, 6, 7]
    assert "0-3" in fs[0]["evidence"][0] and "4-7" in fs[0]["evidence"][0]


@pytest.mark.parametrize("text", [
    lightning(range(8), 8) + lightning(range(8), 8),                               # a restart: every rank again
    lightning(range(4), 8),                                                        # one node's log of two
    agent(range(4), 8, node_rank=0) + agent(range(4, 8), 8, node_rank=1),          # a correct two-node launch
    agent(range(4), 8, restart=0) + agent(range(4), 8, restart=1) + agent(range(4, 8), 8) + agent(range(4, 8), 8, 1),
])
def test_a_correct_launch_a_restart_or_one_nodes_log_is_quiet(tmp_path, text):
    status, fs = _log005(tmp_path, text)
    assert status == "pass" and fs == []


def test_without_rank_lines_it_is_not_assessed(tmp_path):
    assert _log005(tmp_path, "RuntimeError: CUDA error: out of memory\n")[0] == "not_assessed"


def test_the_parser_reads_ranks_world_size_and_restart():
    got = parse_rank_announcements(agent([4, 5], 8, restart=2))
    assert [(a.rank, a.world_size, a.restart, a.source) for a in got] == [(4, 8, 2, "torchrun"), (5, 8, 2, "torchrun")]
    assert [(a.rank, a.world_size) for a in parse_rank_announcements("[rank: 3] " + lightning([3], 16))] == [(3, 16)]


def _init(rank, nranks=16, what="START", cid="0x9e02c3a51fd7a884", host="nodeA"):
    return (f"{host}:{1100 + rank}:{1190 + rank} [{rank % 8}] NCCL INFO ncclCommInitRank comm 0x55c1a0e2f9{rank:02d} "
            f"rank {rank} nranks {nranks} cudaDev {rank % 8} nvmlDev {rank % 8} busId 18000 commId {cid} - Init "
            f"{what}\n")


def test_an_nccl_init_that_only_some_ranks_started_is_named(tmp_path):
    """NCCL 2.17+ init.cc: 'comm %p rank %d nranks %d ... commId 0x%llx - Init START' per rank; 8 of 16 started and
    none completed: the other 8 never called ncclCommInitRank (LOG006). Completed, or all started: quiet."""
    hang = "".join(_init(r) for r in range(8))
    p = tmp_path / "nccl.log"
    p.write_text(hang)
    doc = json.loads(runner.invoke(app, ["check", str(p), "--format", "json"]).stdout)
    f = [x for x in doc["findings"] if x["rule_id"] == "LOG006"]
    assert len(f) == 1 and f[0]["data"]["missing"] == list(range(8, 16)) and "8-15" in f[0]["evidence"][1]
    for quiet in (hang + "".join(_init(r, what="COMPLETE") for r in range(8)),   # one node's log of a good start
                  "".join(_init(r) for r in range(16))):                          # all started, still running
        p.write_text(quiet)
        doc = json.loads(runner.invoke(app, ["check", str(p), "--format", "json"]).stdout)
        assert not [x for x in doc["findings"] if x["rule_id"] == "LOG006"]
        assert next(o["status"] for o in doc["outcomes"] if o["rule_id"] == "LOG006") == "pass"


def test_without_init_lines_the_init_check_is_not_assessed(tmp_path):
    """An NCCL log whose init lines are missing (NCCL_DEBUG=WARN, or NCCL before 2.17 without commId) says nothing
    about who joined: LOG006 is not assessed, never passed."""
    p = tmp_path / "warn.log"
    p.write_text("nodeA:1101:1190 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
                 "nodeA:1101:1190 [0] NCCL INFO comm 0x55c1 rank 0 nranks 16 cudaDev 0 busId 18000 - Init COMPLETE\n")
    doc = json.loads(runner.invoke(app, ["check", str(p), "--format", "json"]).stdout)
    assert next(o["status"] for o in doc["outcomes"] if o["rule_id"] == "LOG006") == "not_assessed"


def _nccl_net_log(nets: dict[str, str]) -> str:
    return "".join(f"{host}:{1000 + i}:{2000 + i} [0] NCCL INFO Using network {net}\n"
                   for i, (host, net) in enumerate(nets.items()))


@pytest.mark.parametrize("nets, status", [
    ({"node-a": "IB", "node-b": "IB", "node-c": "Socket"}, "fail"),
    ({"node-a": "IB", "node-b": "IB"}, "pass"),
    ({"node-a": "Socket"}, "not_assessed"),
])
def test_nodes_that_chose_different_nccl_networks(tmp_path, nets, status):
    p = tmp_path / "nccl.log"
    p.write_text(_nccl_net_log(nets))
    snap, _ = build_snapshot([str(p)])
    out = next(o for o in evaluate(snap).outcomes if o.rule_id == "LOG008")
    assert out.status == status


def _timeout(rank: int, seq: int, op: str) -> str:
    return (f"[rank{rank}]:[E225 10:42:51.1 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
            "for 600087 milliseconds before timing out.\n")


@pytest.mark.parametrize("lines, status", [
    ([(0, 48213, "_ALLGATHER_BASE"), (1, 47987, "_REDUCE_SCATTER_BASE"), (3, 48213, "_ALLGATHER_BASE")], "fail"),
    ([(0, 120, "ALLREDUCE"), (1, 120, "ALLREDUCE")], "pass"),
    ([(4, 20518, "ALLREDUCE"), (1, 369526, "GATHER")], "not_applicable"),  # two runs' timeouts pasted together
])
def test_ranks_timed_out_in_different_collectives(tmp_path, lines, status):
    p = tmp_path / "job.log"
    p.write_text("".join(_timeout(*x) for x in lines))
    snap, _ = build_snapshot([str(p)])
    doc = evaluate(snap)
    assert next(o for o in doc.outcomes if o.rule_id == "LOG010").status == status
    if status == "fail":
        f = next(f for f in doc.findings if f.rule_id == "LOG010")
        assert f.subject == "rank(s) 1" and doc.findings[0].rule_id == "LOG010"  # the cause leads
