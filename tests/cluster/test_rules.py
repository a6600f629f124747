"""Cross-node rules (CLU) over node entries built from the real H200 scan capture, varied per node."""
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpudoctor.cluster.assemble import build_nodes, differing_findings, label
from gpudoctor.cluster.launch import LaunchInfo
from gpudoctor.facts.cluster import AllReduceResult, NodeEntry, PairResult, PairwiseResult
from gpudoctor.facts.findings import Report
from gpudoctor.rules import evaluate
from gpudoctor.rules.cluster import evaluate_cluster, ib_signature

SCAN = Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "scan.json"
BASE = json.loads(SCAN.read_text())


def node(i, tweak=None, host=None, **kw):
    doc = json.loads(json.dumps(BASE))
    if tweak:
        tweak(doc["snapshot"])
    report = evaluate(Report.model_validate(doc).snapshot)
    host = host or f"gpu{i:02d}"
    return NodeEntry(label=label(i, host), node_rank=i, hostname=host, ranks=[i], status="reported", report=report,
                     **kw)


def run(nodes, allreduce=None, pairwise=None):
    findings, outcomes = evaluate_cluster(nodes, allreduce, pairwise)
    return findings, {o.rule_id: o for o in outcomes}


def by_rule(findings, rid):
    return [f for f in findings if f.rule_id == rid]


def test_identical_nodes_pass_everything_that_applies():
    nodes = [node(i, clock_offset_ms=0.01 * i, clock_uncertainty_ms=0.02) for i in range(4)]
    findings, outcomes = run(nodes)
    assert findings == []
    for rid in ("CLU001", "CLU002", "CLU003", "CLU004", "CLU005", "CLU006", "CLU007"):
        assert outcomes[rid].status == "pass", (rid, outcomes[rid])
    assert outcomes["CLU008"].status == "not_assessed" and outcomes["CLU009"].status == "not_assessed"


def test_single_node_is_not_applicable():
    _, outcomes = run([node(0)])
    for rid in ("CLU001", "CLU005", "CLU008", "CLU009"):
        assert outcomes[rid].status == "not_applicable", rid


def set_path(path, value):
    def tweak(s):
        obj = s
        for p in path[:-1]:
            obj = obj[p]
        obj[path[-1]] = value
    return tweak


def test_driver_differs_names_the_odd_node():
    nodes = [node(0), node(1, set_path(["nvml", "driver_version"], "570.86.15")), node(2)]
    f = by_rule(run(nodes)[0], "CLU001")
    assert len(f) == 1
    assert f[0].data["odd_nodes"] == ["node1@gpu01"]
    assert f[0].data["majority"] == "580.159.04"
    assert "driver 570.86.15 on 1 node: node1@gpu01" in f[0].evidence


@pytest.mark.parametrize(
    "field,value,what",
    [
        ("version", "2.10.0+cu128", "torch"),
        ("nccl_version", "2.27.3", "NCCL"),
        ("cudnn_version", 90100, "cuDNN"),
        ("cuda", "12.8", "torch CUDA runtime"),
    ],
)
def test_torch_stack_differs(field, value, what):
    nodes = [node(0), node(1), node(2, set_path(["torch", field], value))]
    f = by_rule(run(nodes)[0], "CLU002")
    assert [x.data["what"] for x in f] == [what]
    assert f[0].data["odd_nodes"] == ["node2@gpu02"] and f[0].severity == "error"


def test_gpu_missing_on_one_node():
    def drop(s):
        s["nvml"]["gpus"] = []
        s["nvml"]["available"] = False
        s["nvml"]["error"] = "NVML init failed"
    f = by_rule(run([node(0), node(1), node(2, drop)])[0], "CLU003")
    assert len(f) == 1 and f[0].data["what"] == "GPU count"
    assert f[0].data["odd_nodes"] == ["node2@gpu02"]


def test_gpu_model_differs():
    f = by_rule(run([node(0, set_path(["nvml", "gpus", 0, "name"], "NVIDIA H100 80GB HBM3")), node(1), node(2)])[0],
                "CLU003")
    assert [x.data["what"] for x in f] == ["GPU models"]
    assert f[0].data["odd_nodes"] == ["node0@gpu00"]


def test_pcie_width_degraded_on_one_node_but_idle_gen_drop_is_ignored():
    nodes = [node(0, set_path(["nvml", "gpus", 0, "pcie_gen_current"], 1)),  # idle downshift: not a difference
             node(1, set_path(["nvml", "gpus", 0, "pcie_width_current"], 8)), node(2)]
    f = by_rule(run(nodes)[0], "CLU004")
    assert len(f) == 1 and f[0].data["odd_nodes"] == ["node1@gpu01"]
    assert "Gen5 x8" in " ".join(f[0].evidence)


def test_ib_rates_used_when_topology_is_present():
    def fake(rates):
        ports = [SimpleNamespace(state="ACTIVE" if r else "DOWN", rate_gbps=r) for r in rates]
        return SimpleNamespace(
            report=SimpleNamespace(snapshot=SimpleNamespace(topology=SimpleNamespace(ib_ports=ports)))
        )

    assert ib_signature(fake([400, 400])) == ("400 Gb/s", "400 Gb/s")
    assert ib_signature(fake([400, None])) == ("400 Gb/s", "down")
    assert ib_signature(fake([])) is None
    assert ib_signature(node(0)) is None  # the H200 capture has no topology section


def test_nccl_env_differs_names_the_variable_and_node():
    def env(s):
        s["env"]["variables"]["NCCL_ALGO"] = "Ring"
    nodes = [node(0), node(1, env), node(2)]
    findings, _ = run(nodes)
    f = by_rule(findings, "CLU005")
    assert len(f) == 1 and f[0].subject == "NCCL_ALGO"
    assert f[0].data["odd_nodes"] == ["node1@gpu01"] and f[0].data["majority"] == "(unset)"
    # the node-level finding NCL001 shows up as differing, only on node 1
    diff, common = differing_findings(nodes)
    d = [x for x in diff if x.rule_id == "NCL001"]
    assert d and d[0].nodes_with == ["node1@gpu01"] and d[0].nodes_without == ["node0@gpu00", "node2@gpu02"]
    assert all(c.rule_id != "NCL001" for c in common)
    assert {c.rule_id for c in common} == {f.rule_id for f in nodes[0].report.findings}


def test_tie_between_two_nodes_is_labelled():
    def env(s):
        s["env"]["variables"]["NCCL_IB_HCA"] = "mlx5_0"
    f = by_rule(run([node(0), node(1, env)])[0], "CLU005")
    assert f[0].data["tie"] is True and "no majority" in " ".join(f[0].evidence)


def test_clock_skew_beyond_uncertainty():
    nodes = [node(0, clock_offset_ms=0.0, clock_uncertainty_ms=0.0),
             node(1, clock_offset_ms=40.0, clock_uncertainty_ms=0.1),
             node(2, clock_offset_ms=6.0, clock_uncertainty_ms=3.0)]  # 6 ms but ±3: within 5 ms + uncertainty
    f = by_rule(run(nodes)[0], "CLU006")
    assert [x.subject for x in f] == ["node1@gpu01"]


def test_missing_and_hung_nodes_are_named():
    nodes = [node(0), node(1),
             NodeEntry(label="node2@gpu02", node_rank=2, hostname="gpu02", status="missing", detail="never joined"),
             NodeEntry(label="node3@gpu03", node_rank=3, hostname="gpu03", status="hung", detail="no scan")]
    f = by_rule(run(nodes)[0], "CLU007")
    assert [(x.subject, x.title) for x in f] == [("node2@gpu02", "Node never joined"), ("node3@gpu03", "Node hung")]


def test_slow_node_and_link_findings_from_pairwise():
    pw = PairwiseResult(rounds=3, nodes=4, reference_busbw_gbs=20.0, slow_fraction=0.7, slow_nodes=["node3@gpu03"],
                        slow_links=[["node0@gpu00", "node1@gpu01"]],
                        pairs=[PairResult(round=0, a="node0@gpu00", b="node1@gpu01", size_bytes=1, busbw_gbs=5.0,
                                          slow=True),
                               PairResult(round=0, a="node2@gpu02", b="node3@gpu03", size_bytes=1, busbw_gbs=2.0,
                                          slow=True)])
    f = by_rule(run([node(i) for i in range(4)], pairwise=pw)[0], "CLU008")
    assert [(x.title, x.subject) for x in f] == [("Slow node", "node3@gpu03"),
                                                  ("Slow link", "node0@gpu00 ↔ node1@gpu01")]
    quiet = PairwiseResult(rounds=1, nodes=2, reference_busbw_gbs=20.0, slow_fraction=0.7,
                           pairs=[PairResult(round=0, a="node0@gpu00", b="node1@gpu01", size_bytes=1, busbw_gbs=20.0)])
    assert by_rule(run([node(0), node(1)], pairwise=quiet)[0], "CLU008") == []


def test_allreduce_failure_and_wrong_sum():
    ok = AllReduceResult(ranks=2, nodes=2, backend="gloo", device="cpu", size_bytes=4, iters=1, warmup=0, correct=True)
    assert by_rule(run([node(0), node(1)], allreduce=ok)[0], "CLU009") == []
    bad = ok.model_copy(update={"correct": False})
    assert len(by_rule(run([node(0), node(1)], allreduce=bad)[0], "CLU009")) == 1
    err = ok.model_copy(update={"error": "rank 1: timed out"})
    assert "timed out" in by_rule(run([node(0), node(1)], allreduce=err)[0], "CLU009")[0].evidence[0]


def test_cluster_rules_never_run_in_a_single_host_scan():
    rep = evaluate(Report.model_validate(BASE).snapshot)
    assert not any(o.rule_id.startswith("CLU") for o in rep.outcomes)


def test_build_nodes_names_slurm_missing_rank_by_expected_host():
    launch = LaunchInfo(launcher="slurm", rank=0, world_size=3, local_rank=0, local_world_size=1, node_rank=0,
                        master_addr="gpu00", master_port=29500, host_store=True,
                        rank_hosts=["gpu00", "gpu01", "gpu02"], rank_nodes=[0, 1, 2])
    joins = {0: {"node_rank": 0, "hostname": "gpu00", "local_rank": 0},
             1: {"node_rank": 1, "hostname": "gpu01", "local_rank": 0}}
    snaps = {0: {"report": BASE, "scan_s": 1.0, "cuda_devices": 1}}
    nodes = build_nodes(launch, joins, snaps, {1: "scan"}, [0], {}, {}, {"join": 5, "scan": 5, "confirm": 5})
    st = {n.label: (n.status, n.last_phase) for n in nodes}
    assert st == {"node0@gpu00": ("reported", None), "node1@gpu01": ("hung", "scan"), "node2@gpu02": ("missing", None)}
    assert "last phase: scan" in nodes[1].detail and "Slurm node list" in nodes[2].detail


def test_build_nodes_expect_hosts_and_count():
    launch = LaunchInfo(launcher="torchrun", rank=0, world_size=1, local_rank=0, local_world_size=1, node_rank=0,
                        master_addr="h", master_port=1, host_store=False)
    joins = {0: {"node_rank": 0, "hostname": "gpu00", "local_rank": 0}}
    snaps = {0: {"report": BASE}}
    nodes = build_nodes(launch, joins, snaps, {}, [0], {}, {}, {}, expect_hosts=["gpu00", "gpu05"])
    assert [(n.label, n.status) for n in nodes] == [("node0@gpu00", "reported"), ("node?@gpu05", "missing")]
    nodes = build_nodes(launch, joins, snaps, {}, [0], {}, {}, {}, expect_nodes=3)
    assert [n.status for n in nodes] == ["reported", "missing", "missing"]


def test_build_nodes_without_confirmation_does_not_call_nodes_hung():
    launch = LaunchInfo(launcher="slurm", rank=0, world_size=2, local_rank=0, local_world_size=1, node_rank=0,
                        master_addr="gpu00", master_port=29500, host_store=True)
    joins = {r: {"node_rank": r, "hostname": f"gpu0{r}", "local_rank": 0} for r in (0, 1)}
    snaps = {r: {"report": BASE} for r in (0, 1)}
    quiet = build_nodes(launch, joins, snaps, {}, [0, 1], {}, {}, {}, expect_results=False)
    assert [n.status for n in quiet] == ["reported", "reported"]
    waited = build_nodes(launch, joins, snaps, {1: "pairs 1/1"}, [0, 1], {0: {}}, {}, {"confirm": 3})
    assert [n.status for n in waited] == ["reported", "hung"] and "pairs 1/1" in waited[1].detail


def test_ib_port_at_half_rate_on_one_node_uses_the_topology_section():
    def ib(rates):
        def tweak(s):
            s["topology"] = {"ib_present": True, "ib_ports": [
                {"device": f"mlx5_{i}", "port": 1, "state": "ACTIVE" if r else "DOWN", "rate_gbps": r or None}
                for i, r in enumerate(rates)]}
        return tweak
    nodes = [node(0, ib([400, 400])), node(1, ib([400, 200])), node(2, ib([400, 400])), node(3, ib([400, 0]))]
    assert nodes[0].report.snapshot.topology.ib_ports[0].rate_gbps == 400.0
    f = [x for x in by_rule(run(nodes)[0], "CLU004") if x.data["what"] == "IB ports"]
    assert len(f) == 1 and f[0].data["odd_nodes"] == ["node1@gpu01", "node3@gpu03"]
    assert "IB ports 1 × 400 Gb/s, 1 × down on 1 node: node3@gpu03" in f[0].evidence
    quiet = [node(i, ib([400, 400])) for i in range(3)]
    assert by_rule(run(quiet)[0], "CLU004") == []
