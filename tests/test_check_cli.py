"""`gpudoctor check PATH...`: files, folders, bad inputs (one-line error naming the file, exit 2, the rest
still diagnosed), saved reports (round trip, newer schema refused)."""
import json

import pytest
from conftest import FIX as FIXROOT
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.facts.model import SCHEMA_VERSION

runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()


def run(*args):
    res = runner.invoke(app, ["check", *map(str, args)])
    err = getattr(res, "stderr", "") or ""
    return res.exit_code, res.stdout, err


def test_one_error_file_findings_exit_1(fix):
    code, out, err = run(fix / "h200-errors/duplicate-gpu.txt")
    assert code == 1 and "SIG010" in out and err == ""


def test_folder_of_a_corpus_case(fix, tmp_path):
    case = fix / "corpus/004-nccl-devshm-64mb-docker"
    code, out, err = run("--json", case / "nccl.log")
    rep = json.loads(out)
    assert code == 1 and "SIG006" in {f["rule_id"] for f in rep["findings"]}
    assert rep["snapshot"]["inputs"][0]["kinds"] == ["NCCL log", "error text"]


def test_healthy_dumps_exit_0_and_mark_sources(fix):
    d = fix / "h200-text"
    code, out, err = run("--json", d / "nvidia-smi-q.xml", d / "collect_env.txt", d / "devshm.txt", d / "ulimit.txt")
    rep = json.loads(out)
    assert code == 0, [f["rule_id"] for f in rep["findings"]]
    snap = rep["snapshot"]
    assert "nvidia-smi -q -x" in snap["nvml"]["source"] and "collect_env" in snap["nvml"]["source"]
    assert snap["memory"]["shm_total_bytes"] == 128 * 2**30 and snap["memory"]["memlock_soft_bytes"] == "unlimited"
    assert "nvml.gpus" in snap["known_fields"]


@pytest.mark.parametrize("content,expect", [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 4, "binary file"),
    (b"", "empty file"),
    (b"   \n\n", "empty file"),
    (b"hello world\nthis is a shopping list\n", "unknown format"),
    (json.dumps({"schema_version": "99.0", "gpudoctor_version": "9", "created_at": "x"}).encode(), "newer than"),
    (b"{not json", "unknown format"),  # a brace alone does not make a report: text, and not a log either
    (b'{"kind": "gpudoctor-report", "schema_version": "2.3", "snapshot": {"gpu', "not valid JSON"),  # a cut report
])
def test_bad_input_is_one_line_exit_2_and_others_still_diagnosed(fix, tmp_path, content, expect):
    bad = tmp_path / "bad.dat"
    bad.write_bytes(content)
    code, out, err = run(bad, fix / "h200-errors/no-visible-gpu.txt")
    assert code == 2
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and str(bad) in lines[0] and expect in lines[0]
    assert "SIG015" in out  # the good file was diagnosed and reported


def test_enormous_input_is_streamed_not_refused(fix, tmp_path, monkeypatch):
    """No size cap (issue 14): a large input is read in chunks; a signature in a late chunk still fires."""
    import gpudoctor.parsers.stream as stream

    monkeypatch.setattr(stream, "WHOLE_BYTES", 1000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 700)
    big = tmp_path / "big.log"
    big.write_text("host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n" * 200
                   + (fix / "h200-errors/cuda-oom.txt").read_text())
    code, out, err = run(big)
    assert "larger than" not in err and "SIG012" in out


def test_only_bad_inputs(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("nothing to see\n")
    code, out, err = run(p, tmp_path / "missing.txt")
    assert code == 2 and out == "" and "unknown format" in err and "no such file" in err


def test_saved_report_round_trip(fix, tmp_path):
    saved = tmp_path / "r.json"
    res = runner.invoke(app, ["check", "--save", str(saved), "--json", str(fix / "h200-text/nvidia-smi-q.txt"),
                              str(fix / "h200-errors/cuda-oom.txt")])
    assert res.exit_code == 1
    first = json.loads(res.stdout)
    code, out, err = run("--json", saved)
    again = json.loads(out)
    assert code == 1
    assert sorted(f["rule_id"] for f in again["findings"]) == sorted(f["rule_id"] for f in first["findings"])
    assert again["snapshot"]["known_fields"] == first["snapshot"]["known_fields"]


def test_saved_live_scan_still_checks(fix):
    code, out, err = run("--json", fix / "h200/scan.json")
    rep = json.loads(out)
    assert code in (0, 1) and rep["schema_version"] == SCHEMA_VERSION


def test_folder_recursion_skips_hidden(fix, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "oom.txt").write_text((fix / "h200-errors/cuda-oom.txt").read_text())
    (tmp_path / ".hidden").write_text("garbage")
    code, out, err = run("--json", tmp_path)
    assert code == 1 and err == "" and "SIG012" in out


def test_scan_rereads_nvlink_counters_after_the_confirmation_runs(monkeypatch, tmp_path):
    """Wiring: after the runs, `scan` re-reads the NVLink error counters, and TOP006 judges the difference."""
    import gpudoctor.confirm.runner as confirm_runner
    import gpudoctor.probes.registry as registry
    import gpudoctor.probes.topology as topology
    from gpudoctor.facts.model import ConfirmationFacts, ConfirmationRun, Snapshot

    snap = Snapshot.model_validate(json.loads((FIXROOT / "h200x2" / "scan.json").read_text())["snapshot"])
    snap.confirmation = None
    monkeypatch.setattr(registry, "scan", lambda opts, probes=None: snap)
    monkeypatch.setattr(confirm_runner, "for_scan", lambda s, **kw: ConfirmationFacts(
        status="ok", runs=[ConfirmationRun(name="main", status="ok", seconds=1.0, timeout_s=60.0)]))
    seen = []

    def recheck(facts, timeout=30.0, run=None):
        seen.append(len(facts.nvlinks))
        for d in facts.nvlinks:
            d.errors_after = {k: v + (7 if (d.gpu, d.link) == (1, 3) else 0) for k, v in d.errors.items()}

    monkeypatch.setattr(topology, "recheck_nvlink_errors", recheck)
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["scan", "--json", "--save", str(out), "--fail-on", "never"])
    assert res.exit_code == 0, res.output
    assert seen and seen[0] > 0
    top006 = [f for f in json.loads(out.read_text())["findings"] if f["rule_id"] == "TOP006"]
    assert [(f["severity"], f["subject"]) for f in top006] == [("warning", "GPU 1"), ("info", "GPU 0")]  # worst first


def test_compute_apps_csv_with_no_process_is_not_a_bad_input(tmp_path):
    """nvidia-smi --query-compute-apps prints only its header when no compute process runs: a valid input (exit 0),
    not 'nothing could be read' (exit 2)."""
    f = tmp_path / "apps.txt"
    f.write_text("pid, process_name, used_gpu_memory [MiB]\n")
    code, out, err = run(f)
    assert code == 0 and "nothing could be read" not in err


def test_the_report_is_never_written_over_an_input(tmp_path):
    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    log = tmp_path / "train.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    for opt in ("--output", "--save"):
        res = CliRunner().invoke(app, ["check", str(log), opt, str(log)])
        assert res.exit_code == 2 and "is one of the inputs" in res.stderr
        assert log.read_text().startswith("torch.OutOfMemoryError")
    res = CliRunner().invoke(app, ["check", str(log), "--save", str(tmp_path / "r"), "-o", str(tmp_path / "r")])
    assert res.exit_code == 2 and "same file" in res.stderr


def test_one_file_named_twice_is_read_once(tmp_path):
    from gpudoctor.parsers.offline import expand_paths

    log = tmp_path / "a.log"
    log.write_text("x\n")
    files, errors = expand_paths([str(log), str(log), str(tmp_path / "." / "a.log"), str(tmp_path)])
    assert files == [str(log)] and errors == []
