"""Inputs that hold error names without an error having happened: a table of every CUDA error code and string is a
reference listing, not a log; an nvidia-smi CSV block ends where the log pasted after it begins."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers import detect as D
from gpudoctor.parsers.code_table import is_code_table, mask_code_tables, table_runs
from gpudoctor.parsers.smi_csv import parse_compute_apps_csv, parse_query_csv

FIX = Path(__file__).parent / "fixtures"
TABLE = FIX / "h200-text" / "cuda-error-strings.txt"  # cudaGetErrorName/String for every code, libcudart 13 on H200
runner = CliRunner()


def _check(*paths: Path) -> tuple[int, dict]:
    res = runner.invoke(app, ["check", *map(str, paths), "--format", "json"])
    return res.exit_code, (json.loads(res.stdout) if res.stdout.strip().startswith("{") else {})


def test_the_cuda_error_table_of_a_real_host_is_a_reference_listing():
    assert D.detect(TABLE.read_text()) == [D.CODE_TABLE]


def test_a_folder_holding_the_table_gets_no_error_findings_from_it(tmp_path):
    (tmp_path / "cuda-error-strings.txt").write_text(TABLE.read_text())
    (tmp_path / "nvidia-smi.txt").write_text((FIX / "h200-text" / "nvidia-smi.txt").read_text())
    rc, doc = _check(tmp_path)
    assert rc in (0, 1), doc
    assert not [f for f in doc["findings"] if f["rule_id"].startswith("SIG")]


def test_the_table_alone_is_refused_with_the_reason(tmp_path):
    p = tmp_path / "codes.txt"
    p.write_text(TABLE.read_text())
    res = runner.invoke(app, ["check", str(p)])
    assert res.exit_code == 2 and "table of error codes" in res.output


def test_other_table_shapes_are_recognised():
    names = ["ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError", "ncclInvalidArgument",
             "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclNumResults"]  # nccl.h.in, 2.28
    enum = "typedef enum {\n" + "".join(f"    {n} = {i},\n" for i, n in enumerate(names)) + "} ncclResult_t;\n"
    errno = "\n".join(f"{n}\t{i}\t{s}" for i, (n, s) in enumerate([
        ("EPERM", "Operation not permitted"), ("ENOENT", "No such file or directory"), ("ESRCH", "No such process"),
        ("EINTR", "Interrupted system call"), ("EIO", "Input/output error"), ("ENXIO", "No such device or address"),
        ("E2BIG", "Argument list too long"), ("ENOEXEC", "Exec format error"), ("EBADF", "Bad file descriptor")], 1))
    assert D.detect(errno) == [D.CODE_TABLE]
    assert is_code_table(enum)


def test_a_log_that_repeats_an_error_name_is_still_a_log():
    line = ("[rank{r}]: RuntimeError: CUDA error: an illegal memory access was encountered "
            "(cudaErrorIllegalAddress 700)\n")
    text = "".join(f"{r} cudaErrorIllegalAddress on rank {r}\n" + line.format(r=r) for r in range(16))
    assert D.CODE_TABLE not in D.detect(text)


_QUERY = ("index, name, memory.used [MiB], memory.total [MiB]\n"
          "0, NVIDIA H200, 140000 MiB, 143771 MiB\n"
          "1, NVIDIA H200, 1 MiB, 143771 MiB\n")


def test_a_query_csv_ends_at_the_first_line_that_is_not_a_row():
    log = ("[rank1]: Traceback (most recent call last):\n"
           "[rank1]:   x, y, z, w = batch\n"  # four comma-separated cells, as many as the header has
           "[rank1]: RuntimeError: NCCL error, rank 1, unhandled system error, NCCL version 2.21.5\n")
    facts = parse_query_csv(_QUERY + log)
    assert len(facts.gpus) == 2


def test_a_sample_loop_with_repeated_headers_keeps_every_sample():
    facts = parse_query_csv(_QUERY + _QUERY.replace("140000", "139000"))
    assert len(facts.gpus) == 2 and facts.gpus[0].memory_used_bytes == 139000 << 20


def test_a_compute_apps_csv_does_not_take_log_lines_as_processes():
    text = ("pid, process_name, used_gpu_memory [MiB]\n"
            "4242, python3, 70000 MiB\n"
            "12, epochs done, loss 0.52\n"  # three cells, the first a number: a log line, not a process
            "torch.OutOfMemoryError: CUDA out of memory, tried to allocate 2.00 GiB, GPU 0\n")
    rows = parse_compute_apps_csv(text)
    assert [p.pid for _, _, p in rows] == [4242]


_NCCL_ROWS = [("0", "ncclSuccess", "no error"), ("1", "ncclUnhandledCudaError", "unhandled cuda error"),
              ("2", "ncclSystemError", "unhandled system error"), ("3", "ncclInternalError", "internal error"),
              ("4", "ncclInvalidArgument", "invalid argument"), ("5", "ncclInvalidUsage", "invalid usage"),
              ("6", "ncclRemoteError", "remote process exited or there was a network error"),
              ("7", "ncclInProgress", "NCCL operation in progress")]  # ncclGetErrorString, src/misc/utils.cc


def _markdown(rows, header="| value | name | meaning |", row="| {0} | {1} | {2} |"):
    return ("# NCCL result codes\n\nFrom nccl.h and ncclGetErrorString().\n\n" + header + "\n|---|---|---|\n"
            + "".join(row.format(*r) + "\n" for r in rows))


def test_the_nccl_result_table_printed_on_a_real_host_is_a_reference_listing(tmp_path):
    # every ncclResult_t with ncclGetErrorString of NCCL 2.28.9 (H200 host, 2026-12-04, scripts/gpu_fault_logs.py)
    text = (FIX / "h200-text" / "nccl-result-codes.md").read_text()
    assert D.detect(text) == [D.CODE_TABLE]
    rc, doc = _check(FIX / "h200-text")
    assert not [f for f in doc["findings"] if f["rule_id"].startswith("SIG")]


def test_markdown_tables_of_result_codes_are_reference_listings():
    assert is_code_table(_markdown(_NCCL_ROWS))
    assert is_code_table(_markdown(_NCCL_ROWS[:6]))  # six rows, names without an error word among them
    assert is_code_table(_markdown(_NCCL_ROWS, "| code | meaning |", "| {0} | {2} ({1}) |"))  # the name in the text
    assert is_code_table(_markdown(_NCCL_ROWS, "| name | code | meaning |", "| `{1}` | {0} | {2} |"))
    assert is_code_table(_markdown(_NCCL_ROWS, "| name | meaning |", "| {1} | {2} |"))


def test_a_code_table_in_notes_above_a_log_is_blanked_and_the_log_still_read(tmp_path):
    log = ("[rank3]: Traceback (most recent call last):\n"
           "[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
           "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
           "NCCL version 2.21.5\n"
           "[rank3]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
           "[rank3]: Last error:\n[rank3]: Cuda failure 'out of memory'\n")
    notes = _markdown(_NCCL_ROWS) + "\nWhat we saw on node 3 last night:\n\n```\n" + log + "```\n"
    p = tmp_path / "notes.md"
    p.write_text(notes)
    assert not is_code_table(notes)
    masked = mask_code_tables(notes)
    assert masked.count("\n") == notes.count("\n") and "invalid usage" not in masked and "Cuda failure" in masked
    rc, doc = _check(p)
    sig = [f for f in doc["findings"] if f["rule_id"].startswith("SIG")]
    assert sig, doc
    text = json.dumps(sig)
    assert "remote process exited" not in text and "invalid usage" not in text


def test_a_folder_with_a_markdown_code_table_gets_nothing_from_it(tmp_path):
    (tmp_path / "codes.md").write_text(_markdown(_NCCL_ROWS[:6]))
    (tmp_path / "nvidia-smi.txt").write_text((FIX / "h200-text" / "nvidia-smi.txt").read_text())
    rc, doc = _check(tmp_path)
    assert not [f for f in doc["findings"] if f["rule_id"].startswith("SIG")], doc["findings"]


def test_look_alikes_of_a_table_stay_logs_and_dumps():
    env = "".join(f"NCCL_{k}={v}\n" for k, v in [("IB_TIMEOUT", 22), ("IB_RETRY_CNT", 7), ("NVLS_ENABLE", 0),
                                                  ("P2P_DISABLE", 1), ("SHM_DISABLE", 1), ("BUFFSIZE", 8388608)])
    assert not table_runs(env)
    srun = "".join(f"{r}: ncclCommInitRank comm 0x5555 rank {r} nranks 8 cudaDev {r} busId 1{r}000\n"
                   for r in range(8))
    assert not table_runs(srun)
    ranks = "".join(f"| {r} | ncclSystemError |\n" for r in range(8))  # a user's table of what each rank hit
    assert not table_runs("| rank | error |\n|---|---|\n" + ranks)
    smi = (FIX / "h200-text" / "nvidia-smi.txt").read_text()
    assert not table_runs(smi)


def test_a_report_saved_beside_its_log_does_not_count_the_log_twice(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n" * 3)
    res = runner.invoke(app, ["check", str(log), "--save", str(tmp_path / "report.json")])
    assert res.exit_code == 1 and (tmp_path / "report.json").is_file(), res.output
    rc, doc = _check(tmp_path)
    hit = next(f for f in doc["findings"] if f["rule_id"] == "SIG023")
    assert hit["data"]["count"] == 3
    assert sorted(Path(i["path"]).name for i in doc["snapshot"]["inputs"]) == ["report.json", "run.log"]


def test_a_copy_of_a_log_in_a_folder_is_read_once(tmp_path):
    text = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    (tmp_path / "run.log").write_text(text)
    (tmp_path / "run.log.bak").write_text(text)
    rc, doc = _check(tmp_path)
    assert next(f for f in doc["findings"] if f["rule_id"] == "SIG023")["data"]["count"] == 1
    skipped = [i for i in doc["snapshot"]["inputs"] if i["status"] == "skipped"]
    assert len(skipped) == 1 and "the same content as" in skipped[0]["reason"]


@pytest.mark.parametrize("big", [False, True])
def test_the_gz_beside_its_log_is_read_once(tmp_path, big):
    """`gzip -k` leaves run.log and run.log.gz: one content, compared decompressed (gzip's size from its trailer)."""
    import gzip

    filler = "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n" * (30000 if big else 1)
    text = filler + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    (tmp_path / "run.log").write_text(text)
    (tmp_path / "run.log.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "other.log.gz").write_bytes(gzip.compress((text + "later line\n").encode()))  # not the same
    rc, doc = _check(tmp_path)
    assert next(f for f in doc["findings"] if f["rule_id"] == "SIG023")["data"]["count"] == 2
    skipped = [Path(i["path"]).name for i in doc["snapshot"]["inputs"] if i["status"] == "skipped"]
    assert skipped == ["run.log.gz"]


def test_two_reruns_of_one_size_and_start_but_another_end_are_both_read(tmp_path):
    """Same size, same first MiB, different last lines (two re-runs of one job): compared whole, both are read."""
    start = "step 1 loss 0.5\n" * 70000  # past 1 MiB
    a = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    b = "RuntimeError: CUDA error: misaligned address XXXXXXXXXXXXXXXXXXXXX\n"
    (tmp_path / "job-1234.log").write_text(start + a)
    (tmp_path / "job-1299.log").write_text(start + b)
    assert (tmp_path / "job-1234.log").stat().st_size == (tmp_path / "job-1299.log").stat().st_size
    rc, doc = _check(tmp_path)
    assert [i["status"] for i in doc["snapshot"]["inputs"]] == ["read", "read"]
    assert {"SIG023", "SIG059"} <= {f["rule_id"] for f in doc["findings"]}


def test_large_xz_and_bz2_copies_of_a_log_are_read_once(tmp_path):
    """Over 1 MiB an xz / bzip2 copy has no cheap size: same first MiB, then the whole (decompressed) digests."""
    import bz2
    import lzma

    text = ("step 1 loss 0.5\n" * 70000 + "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    (tmp_path / "a.log").write_text(text)
    (tmp_path / "a.log.1.xz").write_bytes(lzma.compress(text.encode()))
    (tmp_path / "a.log.2.bz2").write_bytes(bz2.compress(text.encode()))
    rc, doc = _check(tmp_path)
    assert [i["status"] for i in doc["snapshot"]["inputs"]] == ["read", "skipped", "skipped"]
