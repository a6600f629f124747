"""`ibstat` and `ibv_devinfo -v` pasted into `check`: their RDMA ports feed the topology rules (TOP008 port state
and rate, TOP009 NCCL_IB_DISABLE with active ports) as the sysfs probe's do."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers import detect as D
from gpudoctor.parsers.ibstat import parse_ib_ports

FIX = Path(__file__).resolve().parent / "fixtures" / "ib"


def test_ibstat_ports_states_and_rates():
    ports = parse_ib_ports((FIX / "ibstat-one-port-init.txt").read_text())
    assert [(p.device, p.port, p.state, p.phys_state, p.rate_gbps, p.link_layer, p.hca_type) for p in ports] == [
        ("mlx5_0", 1, "ACTIVE", "LinkUp", 200.0, "InfiniBand", "MT4123"),
        ("mlx5_1", 1, "INIT", "LinkUp", 200.0, "InfiniBand", "MT4123"),
        ("mlx5_2", 1, "ACTIVE", "LinkUp", 100.0, "InfiniBand", "MT4123")]


def test_ibv_devinfo_rate_is_width_times_speed():
    ports = parse_ib_ports((FIX / "ibv_devinfo-v.txt").read_text())
    assert [(p.device, p.state, p.phys_state, p.rate_gbps, p.link_layer, p.hca_type) for p in ports] == [
        ("mlx5_0", "ACTIVE", "LinkUp", 200.0, "Ethernet", "MT4129"),
        ("mlx5_1", "DOWN", "Disabled", None, "Ethernet", "MT4129")]


def test_detected_and_diagnosed_by_the_topology_rules(tmp_path):
    for name in ("ibstat-one-port-init.txt", "ibv_devinfo-v.txt"):
        assert D.IBSTAT in D.detect((FIX / name).read_text())
    res = CliRunner().invoke(app, ["check", str(FIX / "ibstat-one-port-init.txt"), "--format", "json"])
    found = json.loads(res.stdout)["findings"]
    assert [(f["rule_id"], f["subject"]) for f in found] == [("TOP008", "mlx5_1 port 1"), ("TOP008", "mlx5_2 port 1")]
    env = tmp_path / "env.txt"
    env.write_text("NCCL_IB_DISABLE=1\nWORLD_SIZE=16\nLOCAL_WORLD_SIZE=8\n")
    res = CliRunner().invoke(app, ["check", str(FIX / "ibv_devinfo-v.txt"), str(env), "--format", "json"])
    f = next(f for f in json.loads(res.stdout)["findings"] if f["rule_id"] == "TOP009")
    assert f["severity"] == "warning" and "mlx5_0/1 Ethernet 200 Gb/sec" in " ".join(f["evidence"])


def test_look_alikes_are_not_ib_listings():
    assert D.IBSTAT not in D.detect("CA 'mlx5_0' is mentioned in this sentence\nand nothing else\n")
    assert D.IBSTAT not in D.detect("hca_id: mlx5_0\n")
    assert D.IBSTAT not in D.detect("NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n")
