"""Confirmation runs without running anything: plan, statistics, efficiency, verdicts, capture reading."""
from __future__ import annotations

import statistics
import time

import pytest
from confirm_helpers import CONF, capture_facts, capture_launch
from hypothesis import given
from hypothesis import strategies as st

from gpudoctor.confirm import analysis, plan
from gpudoctor.confirm.collectives import bandwidths, time_allreduce, timing_groups


# --- plan -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,expect", [("4096", 4096), ("64K", 65536), ("1M", 1 << 20), ("1MiB", 1 << 20),
                                         ("1G", 1 << 30), ("0.5M", 1 << 19), ("2 g", 2 << 30)])
def test_parse_size(text, expect):
    assert plan.parse_size(text) == expect


@pytest.mark.parametrize("text", ["", "1X", "-1M", "0", "M", "99999999999999999999", "257G"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        plan.parse_size(text)


def test_gpu_sweep_covers_1mib_to_1gib_and_bert_gradient():
    assert plan.GPU_SIZES[0] == plan.MiB and plan.GPU_SIZES[-1] == plan.GiB
    assert plan.BERT_BASE_GRAD_BYTES in plan.GPU_SIZES
    assert plan.fmt_size(plan.BERT_BASE_GRAD_BYTES) == "418 MiB"
    # the BERT-base parameter count of the constant is the one measured on the H200 host
    assert f"params {plan.BERT_BASE_PARAMS}" in (CONF / "bert-base-step.txt").read_text()


def test_make_spec_defaults_and_cpu_drops_copies():
    gpu = plan.make_spec(cpu=False, nproc=0, tasks=["copy", "allreduce", "ddp"], timeout_s=60)
    assert gpu["backend"] == "nccl" and gpu["tasks"] == ["copy", "allreduce", "ddp"]
    assert gpu["ddp"]["model"] == "builtin" and gpu["ddp"]["config"]["hidden"] == 768
    assert gpu["allreduce"]["dtypes"] == ["bfloat16", "float32"]
    cpu = plan.make_spec(cpu=True, nproc=2, tasks=["copy", "allreduce", "ddp"], timeout_s=60)
    assert cpu["backend"] == "gloo" and cpu["tasks"] == ["allreduce", "ddp"] and cpu["ddp"]["model"] == "tiny"


@pytest.mark.parametrize("kw", [{"nproc": -1}, {"tasks": ["train"]}, {"scaling": "medium"}, {"model": "gpt2"},
                                {"seq": 129},                                      # the tiny model has 128 positions
                                {"scaling": "strong", "batch": 3}])                # 3 samples over 2 ranks
def test_make_spec_rejects(kw):
    args = dict(cpu=True, nproc=2, tasks=["ddp"], timeout_s=10)
    args.update(kw)
    with pytest.raises(ValueError):
        plan.make_spec(**args)


def test_make_spec_drops_repeated_sizes_and_dtypes_and_allows_512_on_bert():
    spec = plan.make_spec(cpu=False, nproc=0, tasks=["allreduce", "ddp"], timeout_s=10, sizes=[1024, 1024, 2048],
                          dtypes=["fp32", "float32", "bf16"], seq=512, scaling="strong", batch=3)
    assert spec["allreduce"]["sizes"] == [1024, 2048] and spec["allreduce"]["dtypes"] == ["float32", "bfloat16"]
    assert (
        spec["ddp"]["seq"] == 512
    )  # BERT-base has 512 positions; strong scaling with nproc 0 is checked by the worker


def test_retry_spec_is_shorter_and_skips_copies():
    spec = plan.make_spec(cpu=False, nproc=4, tasks=["copy", "allreduce", "ddp"], timeout_s=90)
    r = plan.retry_spec(spec, 30)
    assert r["tasks"] == ["allreduce", "ddp"] and r["timeout_s"] == 30
    assert r["allreduce"]["iters"] < spec["allreduce"]["iters"] and r["ddp"]["baseline"] is False
    assert spec["allreduce"]["iters"] == 20  # the original plan is not modified


def test_parse_fault():
    assert plan.parse_fault("1:hang:allreduce") == {"rank": 1, "kind": "hang", "at": "allreduce"}
    assert plan.parse_fault(None) is None and plan.parse_fault("x:hang:init") is None
    assert plan.parse_fault("1:explode:init") is None
    armed = "1:hang:allreduce:unless=NCCL_P2P_DISABLE"
    assert plan.parse_fault(armed, {}) is not None
    assert plan.parse_fault(armed, {"NCCL_P2P_DISABLE": "1"}) is None


@pytest.mark.parametrize("name,expect", [("bf16", "bfloat16"), ("FP32", "float32"), ("half", "float16")])
def test_normalize_dtype(name, expect):
    assert plan.normalize_dtype(name) == expect


# --- statistics -----------------------------------------------------------------------------------
@given(st.lists(st.floats(min_value=1e-6, max_value=10, allow_nan=False), min_size=1, max_size=40))
def test_stat_agrees_with_statistics(values):
    s = analysis.stat(values)
    assert s.median == pytest.approx(statistics.median(values))
    assert s.min <= s.p25 <= s.median <= s.p75 <= s.max
    assert s.n == len(values)
    assert s.rel_spread == pytest.approx((max(values) - min(values)) / statistics.median(values))


def test_stat_of_nothing_is_none():
    assert analysis.stat([]) is None


@given(st.floats(0.001, 1.0), st.floats(0.001, 1.0), st.integers(2, 64), st.integers(1, 64))
def test_efficiency_weak_and_strong(tn, t1, n, b):
    one = analysis.stat([t1])
    many = analysis.stat([tn])
    e_weak, lo, hi = analysis.efficiency(many, one, n, global_batch=n * b, batch1=b)
    assert e_weak == pytest.approx(t1 / tn)                      # weak: per-GPU batch fixed
    e_strong, _, _ = analysis.efficiency(many, one, n, global_batch=n * b, batch1=n * b)
    assert e_strong == pytest.approx(t1 / tn / n)               # strong: (T1/Tn)/n
    assert lo == pytest.approx(e_weak) and hi == pytest.approx(e_weak)  # one sample: no spread


def test_transport_verdicts():
    assert analysis.transport_verdict(True, False)[0] == "p2p"
    assert analysis.transport_verdict(False, True)[0] == "shm"
    assert analysis.transport_verdict(True, True)[0] == "either"
    assert analysis.transport_verdict(False, False)[0] == "neither"


def test_nccl_warnings_from_real_logs():
    shm = (CONF / "nccl-004-devshm-64mb.log").read_text()
    assert analysis.nccl_warnings(shm) == [
        "include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device",
        "include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-250a7cc850ba9298-0-1-3 "
        "(size 9637888)"]
    perm = analysis.nccl_warnings((CONF / "nccl-005-devshm-permission.log").read_text())
    assert len(perm) == 2 and "shm_open failed : Permission denied" in perm[0]   # the INFO line is skipped
    assert analysis.nccl_warnings(shm, limit=1) == analysis.nccl_warnings(shm)[-1:]


# --- reading real run folders ---------------------------------------------------------------------
def test_clean_gloo_run_capture():
    f = capture_facts("gloo-2rank-ok")
    assert f.status == "ok" and f.world_size == 2 and f.backend == "gloo" and f.reason is None
    assert len(f.allreduce) == 6 and all(a.correct for a in f.allreduce)
    for a in f.allreduce:   # busbw = algbw * 2(n-1)/n with n = 2: equal
        assert a.algbw_gbs == pytest.approx(bandwidths(a.size_bytes, a.time_s.median, 2)[0])
        assert a.busbw_gbs == pytest.approx(a.algbw_gbs)
        assert a.time_s.n == a.iters == 5 and a.time_s.rel_spread > 0
    d = f.ddp
    assert d.world_size == 2 and d.model == "tiny" and d.params_max_abs_diff == 0.0 and d.loss_finite
    assert d.single is not None and d.nosync_step_s is not None and d.grad_allreduce_s is not None
    assert d.efficiency_low <= d.efficiency <= d.efficiency_high
    assert d.efficiency == pytest.approx(d.single.step_s.median / d.step.step_s.median)   # weak scaling
    assert [m.rank for m in d.memory] == [0, 1] and all(m.peak_rss_bytes for m in d.memory)
    assert f.runs[0].log_dir is not None   # collect() keeps logs by default (capture folders)


def test_attribution_on_the_clean_capture():
    d = capture_facts("gloo-2rank-ok").ddp
    att = analysis.attribute_loss(d)
    assert att["communication_s"] == pytest.approx(d.step.step_s.median - d.nosync_step_s.median)
    assert att["computation_s"] == pytest.approx(max(0.0, d.nosync_step_s.median - d.single.step_s.median))
    assert att["dominant"] == ("communication" if att["communication_s"] >= att["computation_s"] else "computation")


def test_hung_allreduce_capture_names_the_collective():
    launched, _ = capture_launch("gloo-2rank-hang-allreduce")
    run = launched.run
    assert run.status == "hung" and run.culprit_rank is None
    assert run.message == "hung: all-reduce bfloat16 64 KiB did not complete within 8 s (ranks 0, 1)"
    assert [r.exitcode for r in run.ranks] == [-9, -9] and all(r.joined for r in run.ranks)


def test_exit_capture_blames_the_rank_that_died_not_its_peer():
    launched, _ = capture_launch("gloo-2rank-exit-ddp")
    run = launched.run
    assert run.status == "failed" and run.culprit_rank == 1
    assert run.message.startswith("rank 1 exited with code 3 during DDP:")
    assert "Connection reset by peer" in run.ranks[0].error   # rank 0's error is only the symptom
    f = capture_facts("gloo-2rank-exit-ddp")
    assert len(f.allreduce) == 6 and f.ddp is None           # what finished before the failure is kept


def test_never_joined_capture():
    launched, _ = capture_launch("gloo-2rank-never-joins")
    assert launched.run.status == "hung"
    assert launched.run.message.startswith("rank 1 never joined the rendezvous on 127.0.0.1:")
    assert "rank 0 waited for it" in launched.run.message


def test_missing_result_means_the_launcher_was_killed(tmp_path):
    import json

    from gpudoctor.confirm.runner import collect
    from gpudoctor.probes.subproc import CmdResult

    spec = json.loads((CONF / "gloo-2rank-hang-allreduce" / "spec.json").read_text())
    cmd = CmdResult(["python"], -9, "", "", timed_out=True)
    got = collect(tmp_path, spec, cmd=cmd)
    assert got.run.status == "hung" and "launcher" in got.run.message
    assert [r.phase for r in got.run.ranks] == [None, None]


def test_culprit_prefers_a_real_error_over_peer_symptoms():
    from gpudoctor.facts.model import RankStatus

    ranks = [RankStatus(rank=0, exitcode=1, phase="error", error="RuntimeError: Connection closed by peer"),
             RankStatus(rank=1, exitcode=1, phase="error", error="torch.OutOfMemoryError: CUDA out of memory")]
    assert analysis.culprit(ranks, first_failed=0) == 1
    ranks[1].error = "RuntimeError: Connection reset by peer"
    assert analysis.culprit(ranks, first_failed=0) == 0


def test_ranks_killed_by_the_launcher_are_not_culprits():
    from gpudoctor.facts.model import RankStatus

    # rank 1 exited (code 3); rank 0 was still alive and got SIGKILLed by the launcher's clean-up
    ranks = [RankStatus(rank=0, exitcode=-9, phase="allreduce"), RankStatus(rank=1, exitcode=3, phase="allreduce")]
    assert analysis.culprit(ranks, first_failed=1, killed=[0]) == 1
    assert analysis.run_message("failed", ranks, 30, 1) == "rank 1 exited with code 3 during allreduce"
    ranks[1].exitcode = -11
    assert analysis.run_message("failed", ranks, 30, 1) == "rank 1 was killed by SIGSEGV during allreduce"


@pytest.mark.parametrize("iters, groups, expect", [(20, 5, [4, 4, 4, 4, 4]), (10, 5, [2] * 5), (7, 5, [2, 2, 1, 1, 1]),
                                                   (3, 5, [1, 1, 1]), (1, 5, [1])])
def test_timing_groups(iters, groups, expect):
    assert timing_groups(iters, groups) == expect and sum(expect) == iters


class _FakeDist:
    """torch.distributed stand-in for a CPU tensor: each all_reduce takes ``cost`` seconds."""

    def __init__(self, cost):
        self.cost, self.calls, self.barriers = cost, 0, 0

    def all_reduce(self, tensor, group=None):
        self.calls += 1
        time.sleep(self.cost)

    def barrier(self, group=None):
        self.barriers += 1


def test_time_allreduce_groups_calls_and_divides_by_the_group_size():
    class T:
        is_cuda = False

    d = _FakeDist(0.002)
    times = time_allreduce(d, T(), iters=8, warmup=2, groups=4)
    assert d.calls == 10 and d.barriers == 1 and len(times) == 4
    # per-call seconds, not per-group: each value is about one call's cost
    assert all(0.0015 < t < 0.05 for t in times)
    assert time_allreduce(_FakeDist(0), T(), iters=0, warmup=0) == []


@pytest.mark.parametrize(
    "free_gb, seq, expect",
    [
        (139, 128, 128),
        (79, 128, 128),
        (24, 128, 64),
        (16, 128, 32),
        (8, 128, 8),
        (4, 128, 8),
        (139, 512, 32),
        (139, 64, 128),
        (16, 512, 8),
    ],
)
def test_auto_batch_fits_the_memory_budget(free_gb, seq, expect):
    b, est = plan.auto_batch(free_gb * 1e9, seq)
    assert b == expect
    if free_gb >= 8:  # below that even the smallest batch does not fit: the fallback says so by its estimate
        assert est <= plan.AUTO_MEMORY_FRACTION * free_gb * 1e9


@pytest.mark.parametrize("batch, seq, measured_gb", [(32, 128, 5.2), (128, 128, 14.6), (32, 512, 14.6)])
def test_auto_batch_memory_model_matches_the_h200_measurements(batch, seq, measured_gb):
    """Peaks measured on the H200 (docs/examples/h200-1gpu-2026-11-29/confirm-compare.json, paired windows)."""
    est = plan.BERT_BASE_FIXED_BYTES + plan.BERT_BASE_BYTES_PER_TOKEN * batch * seq
    assert abs(est / 1e9 - measured_gb) / measured_gb < 0.1


def test_gpu_plan_defaults_to_auto_batch_and_cpu_to_4():
    assert plan.make_spec(cpu=False, nproc=0, tasks=["ddp"], timeout_s=60)["ddp"]["batch"] == "auto"
    assert plan.make_spec(cpu=True, nproc=2, tasks=["ddp"], timeout_s=60)["ddp"]["batch"] == 4
    assert plan.make_spec(cpu=False, nproc=0, tasks=["ddp"], timeout_s=60, batch=16)["ddp"]["batch"] == 16
