"""Launcher variables: torchrun (real captured environment) and Slurm (srun's documented variables)."""
import json
from pathlib import Path

import pytest

from gpudoctor.cluster.launch import LaunchError, detect, expand_hostlist, expand_tasks_per_node

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "cluster"


def load_env(rank):
    return json.loads((FIX / f"torchrun-c10d-2nodes-rank{rank}.json").read_text())


@pytest.mark.parametrize("rank", [0, 1])
def test_torchrun_c10d_capture(rank):
    env = load_env(rank)
    info = detect(env)
    assert info.launcher == "torchrun"
    assert (info.rank, info.world_size, info.node_rank, info.local_rank) == (rank, 2, rank, 0)
    assert info.master_addr == env["MASTER_ADDR"] and info.master_port == int(env["MASTER_PORT"])
    # torchrun serves the store from its agent: no worker may try to listen on MASTER_PORT
    assert info.host_store is False
    assert info.is_leader


def test_torchrun_without_agent_store_rank0_serves():
    env = dict(load_env(0))
    env.pop("TORCHELASTIC_USE_AGENT_STORE")
    assert detect(env).host_store is True
    env1 = dict(load_env(1))
    env1.pop("TORCHELASTIC_USE_AGENT_STORE")
    assert detect(env1).host_store is False


def test_torchrun_wins_over_slurm():
    env = dict(load_env(1), SLURM_PROCID="0", SLURM_NTASKS="1")
    assert detect(env).launcher == "torchrun"


def slurm_env(**kw):
    env = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_NODEID": "1",
           "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_JOB_ID": "123456",
           "SLURM_STEP_ID": "0"}
    env.update(kw)
    return env


def test_slurm_block_distribution_and_defaults():
    info = detect(slurm_env())
    assert info.launcher == "slurm"
    assert (info.rank, info.world_size, info.local_rank, info.node_rank, info.local_world_size) == (3, 4, 1, 1, 2)
    assert info.master_addr == "gpu07"  # first host of the node list
    assert info.master_port == 20000 + 123456 % 20000
    assert info.rank_hosts == ["gpu07", "gpu07", "gpu08", "gpu08"]
    assert info.rank_nodes == [0, 0, 1, 1]
    assert not info.host_store and not info.is_leader
    assert detect(slurm_env(SLURM_PROCID="0", SLURM_LOCALID="0", SLURM_NODEID="0")).host_store


def test_slurm_master_addr_and_port_honoured_and_step_list_preferred():
    info = detect(slurm_env(MASTER_ADDR="10.0.0.5", MASTER_PORT="29400", SLURM_STEP_NODELIST="gpu08",
                            SLURM_STEP_TASKS_PER_NODE="4"))
    assert (info.master_addr, info.master_port) == ("10.0.0.5", 29400)
    assert info.rank_hosts == ["gpu08"] * 4


@pytest.mark.parametrize("env,msg", [
    ({}, "not started by a distributed launcher"),
    ({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "RANK='x'"),
    ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, "outside world size"),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "1"}, "MASTER_ADDR"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, "MASTER_ADDR nor"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "not a TCP port"),
])
def test_bad_environments_raise_one_line(env, msg):
    with pytest.raises(LaunchError, match=msg):
        detect(env)


@pytest.mark.parametrize("text,hosts", [
    ("node1", ["node1"]),
    ("gpu[01-03,07]", ["gpu01", "gpu02", "gpu03", "gpu07"]),
    ("a[8-10],b", ["a8", "a9", "a10", "b"]),
    ("gpu[08-10]", ["gpu08", "gpu09", "gpu10"]),
    ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]),
    ("login-[1-2]x,c[3]", ["login-1x", "login-2x", "c3"]),
])
def test_expand_hostlist(text, hosts):
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("bad", ["gpu[01-03", "gpu[3-1]", "gpu[a-b]", "gpu]1["])
def test_expand_hostlist_rejects(bad):
    with pytest.raises(LaunchError):
        expand_hostlist(bad)


def test_tasks_per_node():
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    assert expand_tasks_per_node("8") == [8]
    with pytest.raises(LaunchError):
        expand_tasks_per_node("2(y3)")
