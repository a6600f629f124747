"""Formats users paste that used to be refused (issue 14 item 5, break-it pass of 2026-12-03): JSON-lines logs
(docker's json-file driver, Kubernetes exports, structured loggers), UTF-16 text from PowerShell, nccl-tests output."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers import stream
from gpudoctor.parsers._text import unwrap_json_lines

runner = CliRunner()
OOM = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
       "of 79.15 GiB of which 1.20 GiB is free.\n")


def _docker(lines: list[str]) -> str:
    return "".join(json.dumps({"log": x, "stream": "stderr", "time": "2024-06-01T10:00:00.1Z"}) + "\n" for x in lines)


def _check(path: Path) -> tuple[int, dict]:
    res = runner.invoke(app, ["check", str(path), "--format", "json"])
    return res.exit_code, json.loads(res.stdout) if res.stdout.lstrip().startswith("{") else {}


def test_a_docker_json_log_is_read_as_its_log_lines(tmp_path):
    p = tmp_path / "container-json.log"
    p.write_text(_docker(["epoch 1 step 100 loss 3.21\n"] * 20 + [OOM]))
    code, doc = _check(p)
    assert code == 1 and [f["rule_id"] for f in doc["findings"] if f["severity"] == "error"] == ["SIG012"]


def test_a_large_json_lines_log_is_read_chunk_by_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "WHOLE_BYTES", 100_000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 150_000)
    p = tmp_path / "big.jsonl"
    p.write_text(_docker([f"epoch 1 step {i} loss 3.21\n" for i in range(6000)] + [OOM]))
    code, doc = _check(p)
    hit = next(f for f in doc["findings"] if f["rule_id"] == "SIG012")
    assert code == 1 and hit["data"]["first_line"] == 6001


def test_json_documents_that_are_not_logs_are_left_alone():
    report = json.dumps({"schema_version": "2.2", "kind": "gpudoctor-report", "message": "x"})
    assert unwrap_json_lines(report) == report
    other = "\n".join(json.dumps({"a": i}) for i in range(5))
    assert unwrap_json_lines(other) == other
    k8s = json.dumps({"textPayload": "RuntimeError: CUDA error: out of memory", "severity": "ERROR"})
    assert unwrap_json_lines(k8s) == "RuntimeError: CUDA error: out of memory\n"


def test_utf16_with_a_byte_order_mark_is_text(tmp_path):
    p = tmp_path / "smi.txt"
    p.write_bytes("RuntimeError: CUDA error: an illegal memory access was encountered\n".encode("utf-16"))
    code, doc = _check(p)
    assert code == 1 and "SIG023" in {f["rule_id"] for f in doc["findings"]}


NT = ("# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 0\n#\n# Using devices\n#  Rank  0 Group  0 Pid  51230 on    node001 device  0 [0x18] "
      "NVIDIA H100 80GB HBM3\n#\n#       size         count      type   redop    root     time   algbw   busbw "
      "#wrong     time   algbw   busbw #wrong\n  8589934592    2147483648     float     sum      -1  23456.1  366.21  "
      "640.87  {w}  23410.2  366.93  642.13  {w}\n# Out of bounds values : {n} {ok}\n"
      "# Avg bus bandwidth    : 129.635 \n")


def test_nccl_tests_output_is_accepted_and_wrong_results_are_an_error(tmp_path):
    p = tmp_path / "allreduce.txt"
    p.write_text(NT.format(w=0, n=0, ok="OK"))
    code, doc = _check(p)
    assert code == 0 and doc["snapshot"]["inputs"][0]["kinds"] == ["nccl-tests output"]
    p.write_text(NT.format(w=12, n=12, ok="FAILED"))
    code, doc = _check(p)
    assert code == 1 and [f["rule_id"] for f in doc["findings"] if f["severity"] == "error"] == ["SIG426"]


def test_package_lists_give_torch_facts(tmp_path):
    """`pip list` filtered through grep (no header), `pip freeze` and `conda list`: torch's version, its CUDA variant
    where the list shows it, and torchvision's, so CMP001 judges the pair."""
    cases = {
        "pip-list.txt": ("$ pip list | grep -iE 'torch|nvidia'\nnvidia-nccl-cu12          2.21.5\n"
                         "torch                     2.5.1\ntorchvision               0.19.1\n", ("2.5.1", None), True),
        "freeze.txt": ("filelock==3.13.1\nJinja2==3.1.3\ntorch==2.4.0+cu121\ntorchvision==0.19.0+cu121\n"
                       "triton==3.0.0\n", ("2.4.0+cu121", "12.1"), False),
        "conda.txt": ("# packages in environment at /opt/conda:\n#\n"
                      "# Name                    Version                   Build  Channel\n"
                      "pytorch                   2.1.0           py3.10_cuda11.8_cudnn8.7.0_0    pytorch\n"
                      "torchvision               0.16.0              py310_cu118    pytorch\n",
                      ("2.1.0", "11.8"), False),
    }
    for name, (text, (version, cuda), mismatch) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        code, doc = _check(p)
        t = doc["snapshot"]["torch"]
        assert (t["version"], t["cuda"]) == (version, cuda), name
        assert ("cuda" in doc["snapshot"]["known_fields"]["torch"]) == (cuda is not None), name
        assert ("CMP001" in {f["rule_id"] for f in doc["findings"]}) == mismatch, name


def test_a_coloured_terminal_capture_of_a_report_is_recognised_as_gpudoctor_output(tmp_path):
    """`script -qc "gpudoctor scan"` keeps colours and the spinner's overwritten frames: still gpudoctor's own text,
    never searched for signatures (it quotes them)."""
    from gpudoctor.cli.app import app as _app

    src = Path(__file__).parent / "fixtures" / "own-scan-terminal-capture.txt"
    res = CliRunner().invoke(_app, ["check", str(src)])
    assert res.exit_code == 2 and "a gpudoctor text report" in (res.output or "")


def test_collect_envs_library_block_alone_is_a_package_list_and_two_nccl_majors_are_flagged(tmp_path):
    """The "Versions of relevant libraries" lines of collect_env pasted on their own: torch 2.9.0+cu130 with both
    nvidia-nccl-cu12 and -cu13 installed (pytorch/pytorch#186591) is TRC006, whose fix removes the cu12 wheel."""
    p = tmp_path / "libs.txt"
    p.write_text("[pip3] numpy==1.26.4\n[pip3] nvidia-nccl-cu12==2.29.3\n[pip3] nvidia-nccl-cu13==2.29.7\n"
                 "[pip3] torch==2.9.0+cu130\n[conda] nvidia-cudnn-cu13 9.13.0.50 pypi_0 pypi\n")
    doc = json.loads(CliRunner().invoke(app, ["check", str(p), "--format", "json"]).stdout)
    assert doc["snapshot"]["torch"]["nvidia_wheels"]["nvidia-cudnn-cu13"] == "9.13.0.50"
    f = next(f for f in doc["findings"] if f["rule_id"] == "TRC006")
    assert f["remedy"].startswith("pip uninstall nvidia-nccl-cu12;")


def test_one_cuda_major_of_each_wheel_passes(tmp_path):
    p = tmp_path / "libs.txt"
    p.write_text("[pip3] nvidia-nccl-cu12==2.21.5\n[pip3] nvidia-cudnn-cu12==9.1.0.70\n[pip3] torch==2.5.1+cu124\n")
    doc = json.loads(CliRunner().invoke(app, ["check", str(p), "--format", "json"]).stdout)
    assert next(o for o in doc["outcomes"] if o["rule_id"] == "TRC006")["status"] == "pass"


def test_compressed_inputs_are_recognised_by_their_first_bytes(tmp_path):
    """A .gz saved under another name and gzip on stdin are read (magic bytes), a zip is refused with what to do."""
    import gzip
    import zipfile

    q = (Path(__file__).parent / "fixtures" / "h200-text" / "nvidia-smi-q.txt").read_bytes()
    named = tmp_path / "q.txt"
    named.write_bytes(gzip.compress(q))
    res = CliRunner().invoke(app, ["check", str(named), "--format", "json"])
    assert res.exit_code in (0, 1) and json.loads(res.stdout)["snapshot"]["nvml"]["gpus"][0]["name"] == "NVIDIA H200"
    res = CliRunner().invoke(app, ["check", "-", "--format", "json"], input=gzip.compress(q))
    assert res.exit_code in (0, 1) and json.loads(res.stdout)["snapshot"]["nvml"]["driver_version"]
    z = tmp_path / "logs.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("q.txt", q)
    res = CliRunner().invoke(app, ["check", str(z)])
    assert res.exit_code == 2 and "zip archive" in (res.output or "")
