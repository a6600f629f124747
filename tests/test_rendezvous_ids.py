"""LOG012: torchrun agents of different hosts that joined rendezvous of different run ids (--rdzv-id) never form one
job; the rendezvous timeout that follows is reported inside that finding. Lines built from
torch/distributed/elastic/rendezvous/dynamic_rendezvous.py: "The node '{node}' attempts to join the next round of
the rendezvous '{run_id}'." and "The node '{node}' has joined round {round} of the rendezvous '{run_id}' as rank
{rank} in a world of size {world_size}."."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers.launch_ranks import node_host, parse_rendezvous_joins

runner = CliRunner()
_PREFIX = "[2026-12-04 12:00:00,002] torch.distributed.elastic.rendezvous.dynamic_rendezvous: [INFO] "
_ATTEMPT = _PREFIX + "The node '{node}' attempts to join the next round of the rendezvous '{run}'.\n"
_JOINED = (_PREFIX + "The node '{node}' has joined round 0 of the rendezvous '{run}' as rank {rank} in a world of "
           "size 2.\n")
_TIMEOUT = ("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError: The node 'x' could not join the "
            "rendezvous\n")


def _doc(*paths: Path) -> dict:
    res = runner.invoke(app, ["check", *map(str, paths), "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def _outcome(doc: dict, rule: str) -> str:
    return next(o["status"] for o in doc["outcomes"] if o["rule_id"] == rule)


def test_join_lines_are_read():
    text = _ATTEMPT.format(node="gpu-a_4242_0", run="j1") + _JOINED.format(node="gpu-a_4242_0", run="j1", rank=1)
    joins = parse_rendezvous_joins(text)
    assert [(j.node, j.run_id, j.round, j.rank, j.world_size) for j in joins] == [
        ("gpu-a_4242_0", "j1", None, None, None), ("gpu-a_4242_0", "j1", 0, 1, 2)]
    assert node_host("ip-10-0-0-7.ec2.internal_88_0") == "ip-10-0-0-7.ec2.internal" and node_host("odd") == "odd"


def test_hosts_in_rendezvous_of_different_ids_are_the_cause_of_the_timeout(tmp_path):
    (tmp_path / "node0.log").write_text(_ATTEMPT.format(node="gpu-a_4242_0", run="job-1733300000") + _TIMEOUT)
    (tmp_path / "node1.log").write_text(_ATTEMPT.format(node="gpu-b_5151_0", run="job-1733300004") + _TIMEOUT)
    doc = _doc(tmp_path)
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert [f["rule_id"] for f in errors] == ["LOG012"], [f["rule_id"] for f in errors]
    assert errors[0]["data"]["hosts"] == {"job-1733300000": ["gpu-a"], "job-1733300004": ["gpu-b"]}
    assert errors[0]["data"]["follow_on_signatures"] == ["SIG014"]


def test_the_same_id_on_every_host_passes_and_the_timeout_stays_its_own(tmp_path):
    (tmp_path / "node0.log").write_text(_ATTEMPT.format(node="gpu-a_4242_0", run="job-7") + _TIMEOUT)
    (tmp_path / "node1.log").write_text(_ATTEMPT.format(node="gpu-b_5151_0", run="job-7"))
    doc = _doc(tmp_path)
    assert _outcome(doc, "LOG012") == "pass"
    assert "SIG014" in {f["rule_id"] for f in doc["findings"]}


def test_one_host_running_two_jobs_in_turn_is_not_a_split(tmp_path):
    p = tmp_path / "node0.log"
    p.write_text(_ATTEMPT.format(node="gpu-a_4242_0", run="job-7") + _ATTEMPT.format(node="gpu-a_5000_0", run="job-8")
                 + _ATTEMPT.format(node="gpu-b_5151_0", run="job-8"))
    assert _outcome(_doc(p), "LOG012") == "pass"


def test_without_join_lines_it_is_not_assessed(tmp_path):
    p = tmp_path / "job.log"
    p.write_text(_TIMEOUT)
    assert _outcome(_doc(p), "LOG012") == "not_assessed"
