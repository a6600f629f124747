"""Every CNF rule both ways, on facts rebuilt from real captures (gloo runs here, the H200 host)."""
from __future__ import annotations

import pytest
from confirm_helpers import CONF, capture_facts, capture_launch, copy_capture, h200_copy_facts, h200_snap

from gpudoctor.confirm.analysis import stat
from gpudoctor.confirm.runner import facts_from
from gpudoctor.facts.model import AllReduceResult, ConfirmationFacts, ConfirmDevice, NvLinkState
from gpudoctor.rules import REGISTRY, evaluate
from gpudoctor.rules.confirmation import link_class, pcie_line_gbs
from gpudoctor.rules.engine import Ctx

CNF = [rid for rid in REGISTRY if rid.startswith("CNF")]


def run(snap, *only):
    return evaluate(snap, only=list(only) or CNF)


def ids(rep, severity=None):
    return sorted({f.rule_id for f in rep.findings if severity is None or f.severity == severity})


def outcome(rep, rid):
    return next(o for o in rep.outcomes if o.rule_id == rid)


def with_conf(facts, snap=None):
    snap = snap or h200_snap()
    snap.confirmation = facts
    return snap


def test_family_registered_with_sources_and_area():
    assert CNF == ["CNF001", "CNF002", "CNF003", "CNF004", "CNF005", "CNF006"]
    for rid in CNF:
        spec = REGISTRY[rid]
        assert spec.area == "Confirmation runs" and spec.sources and spec.what


@pytest.mark.parametrize("facts,status", [
    (None, "not_applicable"),
    (ConfirmationFacts(status="skipped", reason="skipped (--no-confirm)"), "not_applicable"),
    (ConfirmationFacts(status="not_applicable", reason="no NVIDIA GPU on this host"), "not_applicable"),
    (ConfirmationFacts(status="error", reason="torch.cuda.is_available() is False"), "not_assessed"),
])
def test_runs_not_run_are_never_a_pass(facts, status):
    rep = run(with_conf(facts))
    assert rep.findings == []
    assert {outcome(rep, rid).status for rid in CNF} == {status}


def test_clean_gloo_capture_passes_what_applies():
    rep = run(with_conf(capture_facts("gloo-2rank-ok")))
    for rid in ("CNF001", "CNF002", "CNF005"):
        assert outcome(rep, rid).status == "pass"
    assert outcome(rep, "CNF003").status == "not_applicable"       # gloo on CPU: no GPU link
    assert outcome(rep, "CNF004").status == "not_applicable"       # no copies on CPU


# --- CNF001 ---------------------------------------------------------------------------------------
def test_cnf001_hang_names_the_collective():
    rep = run(with_conf(capture_facts("gloo-2rank-hang-allreduce")), "CNF001")
    f = rep.findings[0]
    assert f.rule_id == "CNF001" and f.severity == "error" and f.title == "Confirmation run hung"
    assert "all-reduce bfloat16 64 KiB did not complete within 8 s" in f.evidence[0]
    assert any(e.startswith("per-rank logs:") for e in f.evidence)


def test_cnf001_failure_blames_rank_1():
    rep = run(with_conf(capture_facts("gloo-2rank-exit-ddp")), "CNF001")
    assert rep.findings[0].subject == "rank 1" and rep.findings[0].data["culprit_rank"] == 1


def test_cnf001_quiet_on_clean_run():
    assert run(with_conf(capture_facts("gloo-2rank-ok")), "CNF001").findings == []


def test_cnf001_shm_verdict_with_real_nccl_warnings(tmp_path):
    # a hung run whose rank 1 NCCL log holds the /dev/shm warnings of a real case (corpus 004)
    hung = copy_capture("gloo-2rank-hang-allreduce", tmp_path)
    (hung / "nccl-rank1.log").write_text((CONF / "nccl-004-devshm-64mb.log").read_text())
    main, spec = capture_launch("", where=hung)
    facts = facts_from(main, spec, "python")
    p2p_off, _ = capture_launch("gloo-2rank-hang-allreduce", "NCCL_P2P_DISABLE=1", {"NCCL_P2P_DISABLE": "1"})
    shm_off, _ = capture_launch("gloo-2rank-ok", "NCCL_SHM_DISABLE=1", {"NCCL_SHM_DISABLE": "1"})
    facts.runs += [p2p_off.run, shm_off.run]
    facts.transport_verdict = "shm"
    f = run(with_conf(facts), "CNF001").findings[0]
    assert any("posix_fallocate failed: No space left on device" in e for e in f.evidence)
    assert "re-run with NCCL_P2P_DISABLE=1: hung" in " ".join(f.evidence)
    assert any(e.startswith("verdict: the SHM transport") for e in f.evidence)
    assert "--shm-size" in f.remedy


def test_cnf001_p2p_verdict_points_at_acs():
    facts = capture_facts("gloo-2rank-hang-allreduce")
    ok, _ = capture_launch("gloo-2rank-ok", "NCCL_P2P_DISABLE=1", {"NCCL_P2P_DISABLE": "1"})
    hung, _ = capture_launch("gloo-2rank-hang-allreduce", "NCCL_SHM_DISABLE=1", {"NCCL_SHM_DISABLE": "1"})
    facts.runs += [ok.run, hung.run]
    facts.transport_verdict = "p2p"
    f = run(with_conf(facts), "CNF001").findings[0]
    assert "ACS" in f.remedy and any("P2P transport" in e for e in f.evidence)


# --- CNF002 ---------------------------------------------------------------------------------------
def test_cnf002_wrong_values_fire():
    facts = capture_facts("gloo-2rank-ok")
    facts.allreduce[2].correct, facts.allreduce[2].max_abs_error = False, 3.0
    rep = run(with_conf(facts), "CNF002")
    assert ids(rep) == ["CNF002"] and rep.findings[0].subject == "bfloat16 4 MiB"


def test_cnf002_quiet_and_not_applicable_without_allreduce():
    facts = capture_facts("gloo-2rank-ok")
    assert run(with_conf(facts), "CNF002").findings == []
    facts.tasks = ["ddp"]
    assert outcome(run(with_conf(facts), "CNF002"), "CNF002").status == "not_applicable"


# --- CNF003 ---------------------------------------------------------------------------------------
def eight_gpu_snap(links: int, version: int = 6):
    """The H200 snapshot with its GPU replicated 8 times (distinct UUIDs) and ``links`` active NVLinks.
    ``version`` is NVML's nvmlNvlinkVersion_t value, as the real host reports it: 6 = NVLink 4.0, 4 = 3.0."""
    snap = h200_snap()
    g0 = snap.nvml.gpus[0]
    gpus = []
    for i in range(8):
        g = g0.model_copy(deep=True)
        g.index, g.uuid, g.pci_bus_id = i, f"GPU-00000000-0000-0000-0000-00000000000{i}", f"00000000:{i + 1:02X}:00.0"
        g.nvlinks = [NvLinkState(link=k, active=True, version=version) for k in range(links)]
        gpus.append(g)
    snap.nvml.gpus, snap.nvml.gpu_count = gpus, 8
    return snap


def allreduce_facts(busbw: float, n: int = 8) -> ConfirmationFacts:
    """A 1 GiB bf16 all-reduce whose median time gives ``busbw`` GB/s on ``n`` ranks."""
    size = 1 << 30
    algbw = busbw / (2 * (n - 1) / n)
    t = size / (algbw * 1e9)
    devs = [ConfirmDevice(rank=i, index=i, uuid=f"00000000-0000-0000-0000-00000000000{i}") for i in range(n)]
    return ConfirmationFacts(status="ok", backend="nccl", device="cuda", world_size=n, tasks=["allreduce"],
                             devices=devs, allreduce=[AllReduceResult(dtype="bfloat16", size_bytes=size, iters=10,
                                                                      time_s=stat([t]), algbw_gbs=algbw,
                                                                      busbw_gbs=busbw, correct=True)])


def test_cnf003_quiet_at_the_nccl_reference_for_h100_nvswitch():
    # NVIDIA (nccl-tests #212): 8x H100 SXM reach ~370 GB/s busbw with NCCL_ALGO=RING (450/dir line rate)
    rep = run(with_conf(allreduce_facts(370.0), eight_gpu_snap(18)), "CNF003")
    assert rep.findings == [] and outcome(rep, "CNF003").status == "pass"


def test_cnf003_fires_when_an_nvlink4_box_gives_a100_level_busbw():
    # 230 GB/s is NVIDIA's figure for 8x A100 (nccl-tests #149): on 18 NVLink4 links that is 51% of line rate
    rep = run(with_conf(allreduce_facts(230.0), eight_gpu_snap(18)), "CNF003")
    f = rep.findings[0]
    assert f.rule_id == "CNF003" and f.data["expected_gbs"] == pytest.approx(450.0)
    assert "NVLink4 x18" in f.evidence[1]


def test_cnf003_one_rank_and_unmatched_gpus():
    one = allreduce_facts(370.0)
    one.world_size, one.devices = 1, one.devices[:1]
    assert outcome(run(with_conf(one), "CNF003"), "CNF003").status == "not_applicable"
    facts = allreduce_facts(370.0)
    for d in facts.devices:
        d.uuid = None
    snap = eight_gpu_snap(18)
    snap.env.variables["CUDA_VISIBLE_DEVICES"] = "0,1,2,3,4,5,6,7"
    assert outcome(run(with_conf(facts, snap), "CNF003"), "CNF003").status == "not_assessed"


def test_link_class_bridged_pairs_use_pcie_beyond_two_ranks():
    snap = with_conf(allreduce_facts(20.0), eight_gpu_snap(4, version=4))
    ctx = Ctx(snap, REGISTRY["CNF003"])
    label, rate, fraction = link_class(ctx, snap.confirmation)
    assert label.startswith("PCIe Gen5 x16") and rate == pytest.approx(pcie_line_gbs(5, 16)) and fraction == 0.5
    two = allreduce_facts(20.0, n=2)
    snap2 = with_conf(two, eight_gpu_snap(4, version=4))
    label2, rate2, _ = link_class(Ctx(snap2, REGISTRY["CNF003"]), two)
    assert label2.startswith("NVLink3 x4") and rate2 == pytest.approx(100.0)


def test_nvml_nvlink_version_values_map_to_generations():
    """NVML returns nvmlNvlinkVersion_t (the real 2 x H200 host: 6), not the generation; a raw 6 once made the
    expected line rate 0 GB/s, so CNF003 could never fire on an NVLink host."""
    from gpudoctor.facts.topology import nvlink_generation, nvlink_per_link_gbs

    assert [nvlink_generation(v) for v in (0, 1, 2, 3, 4, 5, 6, 7, 8, None)] == [None, 1, 2, 2, 3, 3, 4, 5, 6, None]
    assert nvlink_per_link_gbs(6, "NVIDIA H200")[0] == 25.0 and nvlink_per_link_gbs(7, None)[0] == 50.0
    rep = run(with_conf(allreduce_facts(230.0), eight_gpu_snap(18, version=7)), "CNF003")  # NVLink 5: 900 GB/s
    assert rep.findings[0].data["expected_gbs"] == pytest.approx(900.0)


def test_pcie_table_matches_the_h200_capture():
    # Gen5 x16 = 63.0 GB/s per direction; the H200 host's pinned copies reached 55 GB/s
    assert pcie_line_gbs(5, 16) == pytest.approx(63.0, rel=1e-3)
    assert pcie_line_gbs(None, 16) is None


# --- CNF004 ---------------------------------------------------------------------------------------
def test_cnf004_quiet_on_the_h200_capture():
    snap = h200_snap()
    rep = run(with_conf(h200_copy_facts(snap), snap), "CNF004")
    assert rep.findings == [] and outcome(rep, "CNF004").status == "pass"


def test_cnf004_fires_at_the_slow_copy_figures_of_the_capture():
    snap = h200_snap()
    rep = run(with_conf(h200_copy_facts(snap, "pageable"), snap), "CNF004")   # 16.8 / 5.5 GB/s
    f = rep.findings[0]
    assert f.rule_id == "CNF004" and f.subject == "GPU 0" and f.data["line_gbs"] == pytest.approx(63.0, rel=1e-3)


def test_cnf004_fires_when_nvml_claims_a_faster_link():
    snap = h200_snap()
    snap.nvml.gpus[0].pcie_gen_max = 6            # 55 GB/s is 45% of Gen6 x16
    assert ids(run(with_conf(h200_copy_facts(snap), snap), "CNF004")) == ["CNF004"]


def test_cnf004_not_assessed_without_nvml():
    snap = h200_snap()
    facts = h200_copy_facts(snap)
    snap.nvml = None
    assert outcome(run(with_conf(facts, snap), "CNF004"), "CNF004").status == "not_assessed"


# --- CNF005 ---------------------------------------------------------------------------------------
def test_cnf005_quiet_on_clean_capture_and_fires_both_ways():
    facts = capture_facts("gloo-2rank-ok")
    assert run(with_conf(facts), "CNF005").findings == []
    facts.ddp.params_max_abs_diff = 1e-3
    assert [f.title for f in run(with_conf(facts), "CNF005").findings] == ["DDP smoke step: ranks out of sync"]
    facts.ddp.params_max_abs_diff, facts.ddp.loss_finite, facts.ddp.loss_last = 0.0, False, float("nan")
    assert [f.title for f in run(with_conf(facts), "CNF005").findings] == ["DDP smoke step: loss not finite"]


def test_cnf005_not_assessed_when_the_step_did_not_finish():
    assert outcome(run(with_conf(capture_facts("gloo-2rank-exit-ddp")), "CNF005"), "CNF005").status == "not_assessed"


# --- CNF006 ---------------------------------------------------------------------------------------
def test_cnf006_follows_the_measured_efficiency():
    facts = capture_facts("gloo-2rank-ok")
    e = facts.ddp.efficiency
    rep = run(with_conf(facts), "CNF006")
    assert (ids(rep) == ["CNF006"]) == (e < 0.7)


def test_cnf006_fires_below_70_and_attributes_the_loss():
    facts = capture_facts("gloo-2rank-ok")
    facts.ddp.efficiency = 0.54
    f = run(with_conf(facts), "CNF006").findings[0]
    assert f.severity == "info"                       # CPU run: shows the method only
    assert f.data["dominant"] in ("communication", "computation") and f.title.endswith(f"{f.data['dominant']} on CPU")
    assert any("no_sync" in e for e in f.evidence) and any("gradient takes" in e for e in f.evidence)
    # issue 15 item 4: no GPU advice ("fix the interconnect first") for gloo on CPU
    assert "fix the interconnect" not in f.remedy and "NUMA" not in f.remedy and "Nothing to fix" in f.remedy
    facts.device = "cuda"
    g = run(with_conf(facts), "CNF006").findings[0]
    assert g.severity == "warning" and g.title.endswith(f"{g.data['dominant']}-bound")
    assert g.remedy.startswith(g.data["dominant"].capitalize())


def test_cnf006_quiet_at_or_above_70_and_not_applicable_on_one_rank():
    facts = capture_facts("gloo-2rank-ok")
    facts.ddp.efficiency = 0.7
    assert run(with_conf(facts), "CNF006").findings == []
    facts.ddp.world_size = 1
    assert outcome(run(with_conf(facts), "CNF006"), "CNF006").status == "not_applicable"


def test_cnf006_without_baseline_is_not_assessed():
    facts = capture_facts("gloo-2rank-ok")
    facts.ddp.single, facts.ddp.efficiency = None, None
    assert outcome(run(with_conf(facts), "CNF006"), "CNF006").status == "not_assessed"
