"""Issue 16: the GPU self-test's parsing, the PRF rules (fires / quiet / not assessed), the SKU table, the
fleet baseline, and the burn-in's analysis and Ctrl-C handling.

Real captures from the H200 host (tests/fixtures/perf, 2026-12-01): the worker's raw self-test lines, a
2-minute burn-in's lines, `scan --json` on the idle GPU and with a second process computing on it.
Variations are made from those captures by changing one figure at a time.
"""
from __future__ import annotations

import _thread
import copy
import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from gpudoctor.confirm import baseline as bl
from gpudoctor.confirm.burn import _alive, run_burn
from gpudoctor.confirm.selftest import parse_lines, summarize
from gpudoctor.facts.model import Snapshot
from gpudoctor.facts.perf import SelfTestFacts, explain
from gpudoctor.rules import REGISTRY, evaluate
from gpudoctor.rules import burn as judge
from gpudoctor.rules.performance import sku_for

FIX = Path(__file__).parent / "fixtures" / "perf"
PRF = [r for r in REGISTRY if r.startswith("PRF")]


def raw_lines() -> list[dict[str, Any]]:
    return parse_lines((FIX / "gpuload-selftest.jsonl").read_text())


def burn_lines() -> list[dict[str, Any]]:
    return parse_lines((FIX / "burn-lines.jsonl").read_text())


def snap(name: str = "scan-idle.json") -> Snapshot:
    return Snapshot.model_validate(copy.deepcopy(json.loads((FIX / name).read_text())["snapshot"]))


def outcome(report, rid: str) -> tuple[str, list]:
    o = next(o for o in report.outcomes if o.rule_id == rid)
    return o.status, [f for f in report.findings if f.rule_id == rid]


def with_gpus(s: Snapshot, lines: list[dict[str, Any]]) -> Snapshot:
    assert s.confirmation is not None
    s.confirmation.selftest = SelfTestFacts(status="ok", gpus=summarize(lines))
    return s


def scaled(lines: list[dict[str, Any]], kind: str, factor: float, gpu: int = 0) -> list[dict[str, Any]]:
    out = copy.deepcopy(lines)
    for ln in out:
        if ln.get("t") == "round" and ln.get("kind") == kind and ln.get("i") == gpu:
            ln["value"] *= factor
    return out


def multi_gpu(lines: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The one-GPU capture replicated as GPUs 0..n-1 (same figures)."""
    out = []
    for ln in lines:
        if "i" in ln and isinstance(ln["i"], int):
            for i in range(n):
                out.append(dict(copy.deepcopy(ln), i=i))
        else:
            out.append(ln)
    return out


# --- self-test parsing --------------------------------------------------------------------------------------

def test_summarize_real_capture() -> None:
    (g,) = summarize(raw_lines())
    assert g.name == "NVIDIA H200" and g.gemm_dtype == "bfloat16"
    assert 650 < (g.gemm_tflops or 0) < 720  # sustained at the power cap (the warm-up's 795 is excluded)
    assert 4100 < (g.d2d_gbs or 0) < 4400
    assert g.samples is not None and g.samples.n > 5 and g.samples.max_sm_mhz == 1980
    assert explain(g)[0] == "power-cap"


def test_explain_kinds() -> None:
    (g,) = summarize(raw_lines())
    assert g.samples is not None
    g2 = g.model_copy(deep=True)
    g2.samples.reasons = {"HwSlowdown": 0.5, "SwPowerCap": 0.5}  # type: ignore[union-attr]
    assert explain(g2)[0] == "fault"
    g3 = g.model_copy(deep=True)
    g3.samples.temp_c_max = 86  # type: ignore[union-attr]
    g3.samples.slowdown_temp_c = 89  # type: ignore[union-attr]
    assert explain(g3)[0] == "hot"
    g4 = g.model_copy(deep=True)
    g4.samples = None
    assert explain(g4)[0] == "unknown"


# --- PRF rules on the real reports ----------------------------------------------------------------------------

def test_idle_report_quiet() -> None:
    r = evaluate(snap(), only=PRF)
    for rid in ("PRF001", "PRF002", "PRF004", "PRF005"):
        assert outcome(r, rid)[0] == "pass", rid
    assert outcome(r, "PRF003")[0] == "not_applicable"  # one GPU
    assert outcome(r, "PRF006")[0] == "not_applicable"  # no baseline


def test_contention_report_fires_with_reason() -> None:
    r = evaluate(snap("scan-contention.json"), only=PRF)
    st, fs = outcome(r, "PRF001")
    assert st == "fail" and fs[0].severity == "error"
    d = fs[0].data
    assert d["reason_kind"] == "contention" and 0.3 < d["ratio"] < 0.6 and d["expected"] == 687
    assert outcome(r, "PRF002")[1][0].data["reason_kind"] == "contention"
    (ddp,) = outcome(r, "PRF004")[1]
    assert ddp.severity == "error" and ddp.data["ratio"] > 2
    assert any("the GPU figures explain it" in e for e in ddp.evidence)
    assert outcome(r, "PRF005")[1][0].severity == "warning"


def test_gemm_warning_band_and_unknown_sku() -> None:
    s = with_gpus(snap(), scaled(raw_lines(), "gemm", 0.75))  # 0.6 <= ratio < 0.85
    st, fs = outcome(evaluate(s, only=["PRF001"]), "PRF001")
    assert st == "fail" and fs[0].severity == "warning"
    lines = copy.deepcopy(raw_lines())
    for ln in lines:
        if ln.get("t") == "gpu":
            ln["name"] = "Mystery Accelerator 9000"
    s = with_gpus(snap(), lines)
    assert outcome(evaluate(s, only=["PRF001", "PRF002"]), "PRF001")[0] == "not_assessed"
    assert outcome(evaluate(s, only=["PRF001", "PRF002"]), "PRF002")[0] == "not_assessed"


def test_not_assessed_without_selftest() -> None:
    s = snap()
    assert s.confirmation is not None
    s.confirmation.selftest = None
    r = evaluate(s, only=PRF)
    for rid in ("PRF001", "PRF002", "PRF005"):
        assert outcome(r, rid)[0] == "not_assessed", rid


def test_derived_expectation_caps_at_warning() -> None:
    lines = copy.deepcopy(raw_lines())
    for ln in lines:
        if ln.get("t") == "gpu":
            ln["name"] = "NVIDIA H100 NVL"  # only datasheet x fallback fraction known
    s = with_gpus(snap(), scaled(lines, "gemm", 0.1))
    (f,) = outcome(evaluate(s, only=["PRF001"]), "PRF001")[1]
    assert f.severity == "warning" and f.data["derived"] is True


def test_siblings() -> None:
    lines = multi_gpu(raw_lines(), 4)
    s = with_gpus(snap(), lines)
    assert outcome(evaluate(s, only=["PRF003"]), "PRF003")[0] == "pass"
    s = with_gpus(snap(), scaled(lines, "gemm", 0.5, gpu=2))
    st, fs = outcome(evaluate(s, only=["PRF003"]), "PRF003")
    assert st == "fail" and [f.subject for f in fs] == ["GPU 2"] and fs[0].data["metric"] == "GEMM"
    # an SKU without any table entry is still covered
    for ln in lines:
        if ln.get("t") == "gpu":
            ln["name"] = "Mystery Accelerator 9000"
    s = with_gpus(snap(), scaled(lines, "copy", 0.7, gpu=1))
    fs = outcome(evaluate(s, only=["PRF003"]), "PRF003")[1]
    assert [f.subject for f in fs] == ["GPU 1"] and fs[0].data["metric"] == "device copy"


def test_ddp_rule_quiet_noisy_batch_and_unknown() -> None:
    s = snap()
    assert s.confirmation is not None and s.confirmation.ddp is not None
    s.confirmation.ddp.per_rank_batch = 32
    assert outcome(evaluate(s, only=["PRF004"]), "PRF004")[0] == "not_assessed"
    s = snap()
    s.confirmation.ddp.seq_len = 512  # type: ignore[union-attr]
    assert outcome(evaluate(s, only=["PRF004"]), "PRF004")[0] == "not_assessed"


def test_fault_reason_is_error() -> None:
    lines = copy.deepcopy(raw_lines())
    for ln in lines:
        if ln.get("t") == "sample":
            ln["reasons"] = ["HwSlowdown"]
    (f,) = outcome(evaluate(with_gpus(snap(), lines), only=["PRF005"]), "PRF005")[1]
    assert f.severity == "error" and f.data["reason_kind"] == "fault"
    no_samples = [ln for ln in raw_lines() if ln.get("t") != "sample"]
    for ln in no_samples:
        if ln.get("t") == "gpu":
            ln["nvml"] = False
    assert outcome(evaluate(with_gpus(snap(), no_samples), only=["PRF005"]), "PRF005")[0] == "not_assessed"


# --- SKU table ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,key", [
    ("NVIDIA H200", "H200"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H100 NVL", "H100 NVL"), ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"), ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"), ("NVIDIA L40S", "L40S"), ("NVIDIA L4", "L4"), ("NVIDIA A10G", "A10G"),
    ("NVIDIA A10", "A10"), ("NVIDIA GeForce RTX 4090", "RTX 4090"), ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("NVIDIA RTX A6000", "RTX A6000"), ("Tesla V100-SXM2-16GB", "V100 SXM2"), ("Tesla V100-PCIE-32GB", "V100 PCIe"),
    ("Tesla V100S-PCIE-32GB", "V100S"), ("Tesla T4", "T4"), ("NVIDIA B200", "B200"), ("NVIDIA H20", "H20"),
    ("NVIDIA GB200", "GB200"),
])
def test_sku_match(name: str, key: str) -> None:
    row = sku_for(name)
    assert row is not None and row["key"] == key


def test_sku_rows_have_sources() -> None:
    from gpudoctor.rules.performance import table

    for row in table()["sku"]:
        for fig, src in (("gemm_peak", "gemm_peak_source"), ("gemm_expected", "gemm_expected_source"),
                         ("gemm_fallback", "gemm_fallback_source"), ("hbm_peak", "hbm_source"),
                         ("copy_expected", "copy_source"), ("ddp_step_ms", "ddp_source")):
            if fig in row:
                assert row.get(src), f"{row['key']}: {fig} without {src}"
        assert row["gemm_dtype"] in ("bfloat16", "float16")
    assert sku_for("Tesla T4")["gemm_dtype"] == "float16"  # type: ignore[index]


# --- baseline -----------------------------------------------------------------------------------------------

def test_baseline_roundtrip_and_override(tmp_path: Path) -> None:
    s = snap()
    assert s.confirmation is not None
    b = bl.from_confirmation(s.confirmation, "h200-node", "2026-12-01T07:08:44Z")
    m = b.models["NVIDIA H200"]
    assert m.gemm_tflops and m.d2d_gbs and m.h2d_gbs and m.ddp_step_ms
    path = tmp_path / "base.json"
    bl.save(b, str(path))
    doc = json.loads(path.read_text())
    assert doc["host"] == "h200-node" and "NVIDIA H200" in doc["models"]
    loaded = bl.load(str(path))
    # the idle node judged against its own baseline: quiet; PRF006 assessed (pinned copies)
    s.confirmation.baseline = loaded
    r = evaluate(s, only=PRF)
    assert outcome(r, "PRF001")[0] == "pass" and outcome(r, "PRF006")[0] == "pass"
    # a baseline twice as fast overrides the table: now the same figures fire
    loaded.models["NVIDIA H200"].gemm_tflops = 2 * (m.gemm_tflops or 0)
    loaded.models["NVIDIA H200"].h2d_gbs = 2 * (m.h2d_gbs or 0)
    r = evaluate(s, only=PRF)
    (f,) = outcome(r, "PRF001")[1]
    assert "baseline" in f.data["expected_source"] and f.severity == "error"
    assert [x.severity for x in outcome(r, "PRF006")[1]] == ["error"]


def test_baseline_load_errors(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(bl.BaselineError, match="not a gpudoctor baseline"):
        bl.load(str(bad))
    with pytest.raises(bl.BaselineError, match="cannot read"):
        bl.load(str(tmp_path / "missing.json"))


# --- burn-in ------------------------------------------------------------------------------------------------

def test_burn_real_series_quiet() -> None:
    lines = burn_lines()
    assert judge.analyze(lines) == []
    (s,) = judge.per_gpu_summary(lines)
    assert s["gemm_rounds"] > 100 and 650 < s["gemm_tflops_median"] < 720


def test_burn_drift_and_dips() -> None:
    lines = copy.deepcopy(burn_lines())
    rounds = [ln for ln in lines if ln.get("t") == "round" and ln.get("kind") == "gemm"]
    for k, ln in enumerate(rounds):  # falls linearly to 70 % by the end
        ln["value"] *= 1.0 - 0.3 * k / len(rounds)
    ids = {f.rule_id for f in judge.analyze(lines)}
    assert "BRN001" in ids
    lines = copy.deepcopy(burn_lines())
    rounds = [ln for ln in lines if ln.get("t") == "round" and ln.get("kind") == "copy"]
    for ln in rounds[::5]:
        ln["value"] *= 0.5
    assert {f.rule_id for f in judge.analyze(lines)} == {"BRN002"}


def test_burn_counters_reasons_heat_xids() -> None:
    lines = copy.deepcopy(burn_lines())
    after = next(ln for ln in lines if ln.get("t") == "counters" and ln.get("when") == "after")
    after["ecc"] = dict(after.get("ecc") or {}, uncorrected=(after.get("ecc") or {}).get("uncorrected", 0) + 2)
    for ln in lines:
        if ln.get("t") == "sample":
            ln["reasons"] = ["SwPowerCap", "HwThermalSlowdown"]
            ln["temp_c"] = 87
    fs = {f.rule_id: f for f in judge.analyze(lines, ["NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off"])}
    assert fs["BRN006"].severity == "error" and "ecc.uncorrected" in fs["BRN006"].data["deltas"]
    assert fs["BRN003"].severity == "error" and fs["BRN004"].severity == "warning"
    assert fs["BRN007"].severity == "error"


FAKE_WORKER = r'''
import json, signal, sys, time
stop = []
signal.signal(signal.SIGINT, lambda *a: stop.append(1))
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit({"t": "gpu", "i": 0, "name": "Fake GPU", "static": {}, "nvml": False})
emit({"t": "mark", "what": "timed", "s": 0.0})
s = 0.0
while not stop:
    s += 0.05
    emit({"t": "round", "i": 0, "s": round(s, 3), "kind": "gemm", "value": 100.0})
    time.sleep(0.05)
emit({"t": "done", "seconds": s, "interrupted": True})
'''


def test_burn_ctrl_c_keeps_measurements_and_leaves_no_process(tmp_path: Path) -> None:
    worker = tmp_path / "fake_worker.py"
    worker.write_text(FAKE_WORKER)
    interp = tmp_path / "fakepython"
    interp.write_text(f"#!/bin/sh\nexec {sys.executable} {worker}\n")
    interp.chmod(interp.stat().st_mode | stat.S_IEXEC)
    pids: list[int] = []
    seen = threading.Event()

    def on_line(obj: dict[str, Any]) -> None:
        if obj.get("t") == "round" and not seen.is_set():
            seen.set()
            threading.Timer(0.5, _thread.interrupt_main).start()  # Ctrl-C half a second into the load

    import gpudoctor.confirm.burn as burn_mod

    real_popen = burn_mod.subprocess.Popen

    def spy(*a: Any, **k: Any) -> Any:
        p = real_popen(*a, **k)
        pids.append(p.pid)
        return p

    burn_mod.subprocess.Popen = spy  # type: ignore[misc]
    # a shell's background job starts with SIGINT ignored: make Ctrl-C raise KeyboardInterrupt as on a terminal
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run = run_burn(str(interp), 20.0, on_line)
    finally:
        burn_mod.subprocess.Popen = real_popen  # type: ignore[misc]
        signal.signal(signal.SIGINT, old)
    assert run.interrupted and not run.timed_out
    assert sum(1 for ln in run.lines if ln.get("t") == "round") >= 3
    assert any(ln.get("t") == "done" for ln in run.lines)  # the worker ended on its own after SIGINT
    assert run.seconds < 15
    assert pids and not any(_alive(p) for p in pids) and run.leftover_pids == []
    if os.path.exists(f"/proc/{pids[0]}"):
        assert not _alive(pids[0])


# --- command line -------------------------------------------------------------------------------------------

def _cli(*args: str, cwd: Path | None = None) -> Any:
    import subprocess

    root = Path(__file__).resolve().parent.parent
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd or root, env=dict(os.environ, PYTHONPATH=str(root), NO_COLOR="1"))


def test_cli_baseline_from_report_and_bad_baseline(tmp_path: Path) -> None:
    out = tmp_path / "fleet.json"
    r = _cli("baseline", "save", str(out), "--from", str(FIX / "scan-idle.json"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["gpudoctor_baseline"] == 1 and doc["models"]["NVIDIA H200"]["gemm_tflops"] > 600
    r = _cli("scan", "--baseline", str(tmp_path / "missing.json"), "--no-confirm")
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_cli_check_rejudges_saved_report() -> None:
    r = _cli("check", str(FIX / "scan-contention.json"), "--json")
    assert r.returncode == 1
    rep = json.loads(r.stdout)
    prf = {f["rule_id"]: f for f in rep["findings"] if f["rule_id"].startswith("PRF")}
    assert prf["PRF001"]["data"]["expected"] == 687  # today's table, not the one the report was made with
    assert prf["PRF001"]["data"]["reason_kind"] == "contention"


def test_idle_context_is_info_busy_context_is_warning() -> None:
    lines = copy.deepcopy(raw_lines())
    for ln in lines:
        if ln.get("t") == "sample":
            ln["others"] = [{"pid": 4242, "used_mib": 500, "name": "jupyter"}]
    (f,) = outcome(evaluate(with_gpus(snap(), lines), only=["PRF005"]), "PRF005")[1]
    assert f.severity == "info" and "pid 4242" in f.evidence[0]
    (f,) = outcome(evaluate(with_gpus(snap(), scaled(lines, "gemm", 0.5)), only=["PRF005"]), "PRF005")[1]
    assert f.severity == "warning"


def test_burn_on_a_host_without_gpu_is_one_line_not_a_traceback() -> None:
    """`gpudoctor burn` checks for a GPU (and torch) before starting the load: one line naming the cause, exit 2
    (it used to start the load worker and quote its traceback, e.g. 'No module named torch')."""
    import subprocess
    import sys

    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:  # a GPU host: the burn would really run; this test is about hosts without one
        pynvml.nvmlShutdown()
        return
    res = subprocess.run([sys.executable, "-m", "gpudoctor", "burn", "--minutes", "0.1"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2 and "no NVIDIA GPU to run on" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
