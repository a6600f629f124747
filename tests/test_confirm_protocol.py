"""The confirmation workers' wire protocol (gpudoctor/confirm/protocol.py): real captures conform, a misspelled
field is an error on the side that writes it and on the side that reads it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.confirm import gpuload, protocol, tasks, worker
from gpudoctor.confirm.plan import make_spec
from gpudoctor.confirm.protocol import (
    LaunchResult,
    ProtocolError,
    RankResult,
    RankState,
    Spec,
    check_message,
    parse_load_line,
)
from gpudoctor.confirm.runner import collect, launch
from gpudoctor.confirm.selftest import parse_lines

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "tests" / "fixtures" / "confirm"
PERF = ROOT / "tests" / "fixtures" / "perf"
RUNS = sorted(CONF.glob("gloo-2rank-*"))


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_captured_runs_conform(run):
    check_message(Spec, json.loads((run / "spec.json").read_text()))
    check_message(LaunchResult, json.loads((run / "result.json").read_text()))
    files = {**{p: RankState for p in run.glob("state-rank*.json")},
             **{p: RankResult for p in run.glob("result-rank*.json")}}
    assert files
    for path, cls in files.items():
        check_message(cls, json.loads(path.read_text()), path.name)


@pytest.mark.parametrize("name", ["gpuload-selftest.jsonl", "burn-lines.jsonl"])
def test_captured_h200_load_lines_conform(name):
    lines = [ln for ln in (PERF / name).read_text().splitlines() if ln.startswith("{")]
    parsed = [parse_load_line(ln) for ln in lines]
    assert len(parsed) == len(lines) and not [p for p in parsed if p["t"] == "error"]


@pytest.mark.parametrize("cpu", [True, False])
def test_plans_conform(cpu):
    spec = make_spec(cpu=cpu, nproc=2, tasks=["copy", "allreduce", "ddp"], timeout_s=30)
    assert check_message(Spec, spec) is spec


def test_nested_and_listed_fields_are_checked():
    spec = make_spec(cpu=True, nproc=2, tasks=["ddp"], timeout_s=30)
    spec["ddp"]["stpes"] = 3
    with pytest.raises(ProtocolError, match=r"Spec\.ddp: unknown field 'stpes'"):
        check_message(Spec, spec)
    with pytest.raises(ProtocolError, match=r"allreduce\[1\]: unknown field 'size'"):
        check_message(RankResult, {"rank": 0, "pid": 1, "allreduce": [{"dtype": "float32"}, {"size": 4}]})
    with pytest.raises(ProtocolError, match="missing field 'pid'"):
        check_message(RankResult, {"rank": 0})


def _bad_spec():
    return dict(make_spec(cpu=True, nproc=2, tasks=["allreduce"], timeout_s=30), timout_s=5.0)


def test_parent_refuses_a_misspelled_plan_field_before_starting_anything(monkeypatch):
    monkeypatch.setattr("gpudoctor.confirm.runner.run_cmd", lambda *a, **k: pytest.fail("worker started"))
    with pytest.raises(ProtocolError, match="timout_s"):
        launch(_bad_spec(), sys.executable)


def test_worker_refuses_a_misspelled_plan_field(tmp_path):
    (tmp_path / "spec.json").write_text(json.dumps(_bad_spec()))
    assert worker.main([str(tmp_path)]) == 0
    res = json.loads((tmp_path / "result.json").read_text())
    assert res["status"] == "error" and "timout_s" in res["message"]


def test_worker_refuses_to_write_a_misspelled_field(tmp_path):
    with pytest.raises(ProtocolError, match="peak_rss"):
        worker._save(str(tmp_path / "r.json"), {"rank": 0, "pid": 1, "peak_rss": 3})
    with pytest.raises(ProtocolError, match="elapsed"):
        worker._finish(str(tmp_path / "result.json"), {"status": "ok", "elapsed": 1.0})
    st = tasks.State(str(tmp_path), 0, 3)
    st.set("allreduce", "all-reduce", size_bytes=4)
    with pytest.raises(ProtocolError, match="size_byte"):
        st.set("allreduce", "all-reduce", size_byte=4)
    assert [p.name for p in tmp_path.glob("*.json")] == ["state-rank0.json"]  # the refused write left nothing
    assert json.loads((tmp_path / "state-rank0.json").read_text())["size_bytes"] == 4


def test_parent_refuses_a_misspelled_field_the_worker_wrote(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(CONF / "gloo-2rank-ok", run)
    spec = json.loads((run / "spec.json").read_text())
    assert collect(run, spec).run.status == "ok"
    res = json.loads((run / "result-rank0.json").read_text())
    res["ddp"]["grad_allreduce"] = res["ddp"].pop("grad_allreduce_s")
    (run / "result-rank0.json").write_text(json.dumps(res))
    launched = collect(run, spec)
    assert launched.run.status == "error" and "grad_allreduce" in (launched.run.message or "")
    assert launched.rank_results == {}


def test_load_worker_refuses_a_misspelled_line_and_the_parent_reports_one(capsys):
    gpuload.emit({"t": "round", "i": 0, "s": 1.0, "kind": "gemm", "value": 700.0})
    with pytest.raises(ProtocolError, match="vlaue"):
        gpuload.emit({"t": "round", "i": 0, "s": 1.0, "kind": "gemm", "vlaue": 700.0})
    with pytest.raises(ProtocolError, match="'rnd'"):
        gpuload.emit({"t": "rnd"})
    assert capsys.readouterr().out.count("\n") == 1
    lines = parse_lines('torch warning\n{"t": "done", "seconds": 1.0, "interupted": false}\n')
    assert lines[0]["t"] == "error" and lines[0]["i"] is None and "interupted" in lines[0]["error"]


def test_protocol_modules_import_with_the_standard_library_alone():
    # the target interpreter may have torch but not pydantic: -I -S, no site-packages at all
    code = ("import sys; sys.path.insert(0, sys.argv[1]); old = set(sys.modules); import gpudoctor.confirm.protocol; "
            "print(sorted(m for m in set(sys.modules) - old if m.split('.')[0] not in sys.stdlib_module_names))")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(ROOT)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert set(eval(out.stdout)) == {"gpudoctor", "gpudoctor.confirm", "gpudoctor.confirm.protocol",
                                     "gpudoctor.facts", "gpudoctor.facts.protocol"}
    assert protocol.LOAD_LINES["done"] is protocol.DoneLine
