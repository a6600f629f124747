"""The gloo path for real: world size 2 on this machine's CPU cores, faults injected through the
test-only GPUDOCTOR_CONFIRM_FAULT variable, every run checked for leftover processes with psutil."""
from __future__ import annotations

import ast
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from confirm_helpers import h200_snap
from conftest import SESSION_ENV, SESSION_ID

from gpudoctor.confirm.plan import FAULT_ENV, RUN_ENV
from gpudoctor.confirm.runner import Progress, confirm, for_scan
from gpudoctor.facts.findings import Report
from gpudoctor.facts.model import ConfirmationFacts

ROOT = Path(__file__).resolve().parent.parent
from conftest import needs_torch  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90), needs_torch]


def leftovers() -> list[int]:
    """PIDs of any confirmation-run process (launcher or rank) of this test session still alive."""
    pids = []
    for p in psutil.process_iter():
        try:
            env = p.environ()
            if RUN_ENV in env and env.get(SESSION_ENV) == SESSION_ID and p.status() != psutil.STATUS_ZOMBIE:
                pids.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return pids


def cleanup(facts: ConfirmationFacts) -> None:
    for r in facts.runs:
        if r.log_dir:
            shutil.rmtree(r.log_dir, ignore_errors=True)


CLI = ("import sys\nfrom gpudoctor.cli import app\ntry:\n    app.app(sys.argv[1:])\nexcept SystemExit as e:\n"
       "    code = e.code\nsys.stderr.write(f'\\nTORCH_IMPORTED={\"torch\" in sys.modules}\\n')\nsys.exit(code)\n")


def gd(*args, env=None, timeout=120):
    e = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    e.pop(FAULT_ENV, None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, timeout=timeout, env=e,
                          cwd=str(ROOT))


def test_smoke_cpu_json_end_to_end():
    t0 = time.monotonic()
    r = gd("smoke", "--cpu", "--nproc", "2", "--json")
    took = time.monotonic() - t0
    assert r.returncode in (0, 1), r.stderr
    rep = Report.model_validate(json.loads(r.stdout))          # stdout is the JSON document and nothing else
    assert "TORCH_IMPORTED=False" in r.stderr                    # gpudoctor's own process never imported torch
    c = rep.snapshot.confirmation
    assert c.status == "ok" and c.backend == "gloo" and c.world_size == 2 and c.tasks == ["ddp"]
    d = c.ddp
    assert d.timed_steps == 6 and d.step.step_s.n == 6 and d.step.step_s.rel_spread >= 0
    assert d.step.step_s.p25 <= d.step.step_s.median <= d.step.step_s.p75
    assert d.params_max_abs_diff == 0.0 and d.loss_finite and d.single is not None
    assert d.efficiency_low <= d.efficiency <= d.efficiency_high and d.scaling == "weak"
    assert (d.per_rank_batch, d.batch_choice) == (4, "default of the tiny model")
    assert {o.rule_id for o in rep.outcomes} == {"CNF001", "CNF002", "CNF003", "CNF004", "CNF005", "CNF006"}
    assert not any(f.severity == "error" for f in rep.findings)
    assert took < 60 and leftovers() == []


def test_bench_allreduce_cpu_json_and_save(tmp_path):
    out = tmp_path / "bench.json"
    r = gd("bench", "allreduce", "--cpu", "--json", "--save", str(out), "--sizes", "64K,1M", "--iters", "3")
    assert r.returncode == 0, r.stderr
    rep = Report.model_validate(json.loads(r.stdout))
    assert Report.model_validate_json(out.read_text()) == rep
    ar = rep.snapshot.confirmation.allreduce
    assert [(a.dtype, a.size_bytes) for a in ar] == [("bfloat16", 65536), ("bfloat16", 1 << 20),
                                                     ("float32", 65536), ("float32", 1 << 20)]
    for a in ar:
        assert a.correct and a.iters == 3 and a.time_s.n == 3
        assert a.busbw_gbs == pytest.approx(a.algbw_gbs)         # 2(n-1)/n = 1 for n = 2
        assert a.algbw_gbs == pytest.approx(a.size_bytes / a.time_s.median / 1e9)
    assert leftovers() == []


def test_strong_scaling_splits_the_global_batch():
    facts = confirm(python=sys.executable, cpu=True, nproc=2, timeout_s=60, tasks=["ddp"], batch=4, steps=3,
                    warmup_steps=1, scaling="strong")
    d = facts.ddp
    assert facts.status == "ok" and d.scaling == "strong"
    assert (d.per_rank_batch, d.global_batch, d.single.batch) == (2, 4, 4)
    assert d.batch_choice == "given (--batch)"
    assert d.efficiency == pytest.approx(d.single.step_s.median / (2 * d.step.step_s.median))
    assert leftovers() == []


def test_smoke_without_gpu_is_a_clear_usage_error():
    r = gd("smoke")
    assert r.returncode == 2 and "--cpu runs the same code" in r.stderr and r.stdout == ""


def test_hung_rank_is_detected_cleaned_up_and_the_transport_named(monkeypatch):
    # rank 1 hangs in its first all-reduce unless NCCL_P2P_DISABLE is set: the main run and the
    # SHM-disabled re-run hang, the P2P-disabled re-run passes -> verdict 'p2p'
    monkeypatch.setenv(FAULT_ENV, "1:hang:allreduce:unless=NCCL_P2P_DISABLE")
    events: list[Progress] = []
    facts = confirm(python=sys.executable, cpu=True, nproc=2, timeout_s=8, retry_timeout_s=8, retry_transports=True,
                    tasks=["allreduce"], on_progress=events.append)
    try:
        main, p2p, shm = facts.runs
        assert facts.status == "hung" and main.status == "hung"
        assert main.message == "hung: all-reduce bfloat16 64 KiB did not complete within 8 s (ranks 0, 1)"
        assert main.seconds < 8 + 4                              # bounded by the timeout
        assert [r.exitcode for r in main.ranks] == [-9, -9]      # the launcher SIGKILLed both ranks
        assert main.orphans_killed == 0 and leftovers() == []  # and left nothing behind
        assert (p2p.name, p2p.status, shm.name, shm.status) == (
            "NCCL_P2P_DISABLE=1",
            "ok",
            "NCCL_SHM_DISABLE=1",
            "hung",
        )
        assert p2p.env == {"NCCL_P2P_DISABLE": "1"} and facts.transport_verdict == "p2p"
        assert Path(main.log_dir, "rank1.log").exists() and p2p.log_dir is None
        labels = {e.label for e in events}
        assert "all-reduce bfloat16 64 KiB" in labels and {e.run for e in events} == {"main", p2p.name, shm.name}
    finally:
        cleanup(facts)


def test_rank_exit_fails_fast_and_names_the_rank(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "1:exit:allreduce")
    t0 = time.monotonic()
    facts = confirm(python=sys.executable, cpu=True, nproc=2, timeout_s=30, tasks=["allreduce"])
    try:
        assert time.monotonic() - t0 < 20                         # not left to run into the timeout
        assert facts.status == "failed" and facts.runs[0].culprit_rank == 1 and len(facts.runs) == 1  # gloo: no re-runs
        assert facts.reason == "rank 1 exited with code 3 during all-reduce bfloat16 64 KiB"
        assert leftovers() == []
    finally:
        cleanup(facts)


def test_rank_that_never_joins(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "1:hang:init")
    facts = confirm(python=sys.executable, cpu=True, nproc=2, timeout_s=8, tasks=["allreduce"])
    try:
        assert facts.status == "hung" and facts.reason.startswith("rank 1 never joined the rendezvous on 127.0.0.1:")
        assert facts.allreduce == [] and leftovers() == []
    finally:
        cleanup(facts)


def test_gpu_run_on_a_host_without_cuda_is_an_error_not_a_crash():
    facts = confirm(python=sys.executable, cpu=False, nproc=1, timeout_s=30)
    assert facts.status == "error" and "torch.cuda.is_available() is False" in facts.reason
    # issue 15 item 8: a run that could not start has its reason in the message and leaves no folder behind
    assert facts.runs[0].log_dir is None and facts.log_dir is None
    cleanup(facts)


def test_for_scan_states():
    snap = h200_snap()
    assert for_scan(snap, run=False).status == "skipped"
    snap.torch.cuda_available = False
    got = for_scan(snap)
    assert got.status == "error" and "is_available() is False" in got.reason
    snap.nvml.gpus, snap.nvml.gpu_count = [], 0
    assert for_scan(snap).status == "not_applicable"


def test_scan_on_a_host_without_gpu_says_not_applicable():
    r = gd("scan", "--json", "--fail-on", "never")
    rep = Report.model_validate(json.loads(r.stdout))
    assert rep.snapshot.confirmation.status == "not_applicable"
    assert {o.status for o in rep.outcomes if o.rule_id.startswith("CNF")} == {"not_applicable"}
    r = gd("scan", "--json", "--fail-on", "never", "--no-confirm")
    assert Report.model_validate(json.loads(r.stdout)).snapshot.confirmation.status == "skipped"


def test_progress_bar_on_a_terminal_and_silent_otherwise():
    from rich.console import Console

    from gpudoctor.reports.progress import RunProgress

    buf = io.StringIO()
    with RunProgress(Console(file=buf, force_terminal=True, width=120)) as prog:
        prog(Progress("main", "all-reduce float32 64 MiB", 5, 14, 1.5))
        prog(Progress("NCCL_P2P_DISABLE=1", "DDP: 1 warm-up + 2 timed steps", 3, 9, 0.5))
    text = buf.getvalue()
    assert "all-reduce float32 64 MiB" in text and "re-run NCCL_P2P_DISABLE=1" in text
    quiet = io.StringIO()
    with RunProgress(Console(file=quiet, force_terminal=False)) as prog:
        prog(Progress("main", "all-reduce float32 64 MiB", 5, 14, 1.5))
    assert quiet.getvalue() == ""


WORKER_SIDE = ["confirm/worker.py", "confirm/tasks.py", "confirm/ddp_task.py", "confirm/plan.py",
               "confirm/collectives.py", "confirm/bert.py", "confirm/protocol.py", "confirm/gpuload.py",
               "facts/units.py", "facts/protocol.py", "facts/clock_reasons.py"]
#: the gpudoctor modules the worker side may import: each is in WORKER_SIDE, so checked the same way
WORKER_MODULES = {"gpudoctor.confirm"} | {"gpudoctor." + n[:-3].replace("/", ".") for n in WORKER_SIDE}


@pytest.mark.parametrize("name", WORKER_SIDE)
def test_worker_side_imports_only_stdlib_torch_and_itself(name):
    # the target interpreter may have torch but not pydantic/rich/typer/psutil (pipx installs)
    # pynvml: the GPU load worker's optional NVML samples (imported inside a try)
    allowed = set(sys.stdlib_module_names) | {"torch", "transformers", "gpudoctor", "pynvml"}
    tree = ast.parse((ROOT / "gpudoctor" / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            mods = [node.module]
        else:
            continue
        for m in mods:
            assert m.split(".")[0] in allowed, f"{name} imports {m}"
            if m.startswith("gpudoctor"):
                assert m in WORKER_MODULES, m
