"""Root cause first (issue 14 item 3): the report's findings are ordered worst, then cause first
(gpudoctor.rules.order); `check` opens with a diagnosis block in that order; a message that only carries another
error's text folds into the signature that reads it; a traceback without its source lines still has its exception
read."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.facts.findings import Finding
from gpudoctor.parsers.signatures import match_signatures
from gpudoctor.rules.order import cause_first

runner = CliRunner()
W = "gpu-a17:51204:51377 [0] "


def _finding(rule_id: str, severity: str = "error", **data) -> Finding:
    return Finding(rule_id=rule_id, severity=severity, area="Logs & errors", title=rule_id, evidence=[], remedy="-",
                   sources=[], data=data)


def test_order_is_severity_then_hardware_then_facts_then_first_appearance():
    fs = [_finding("SIG000", "warning"),
          _finding("SIG032", first_line=40, files=["b.log"]),
          _finding("SIG012", first_line=900, files=["a.log"]),
          _finding("SIG013", first_line=12, files=["a.log"]),
          _finding("TRC001"),
          _finding("SIG086", "warning", first_line=1, files=["a.log"]),
          _finding("LOG001", xid=79, blame="GPU"),
          _finding("LOG001", xid=13, blame="application"),
          _finding("LOG002"),
          _finding("SIG011", family="kernel", first_line=99, files=["b.log"])]
    got = [(f.rule_id, f.data.get("xid")) for f in cause_first(fs, ["a.log", "b.log"])]
    assert got == [("SIG011", None), ("LOG001", 79), ("TRC001", None), ("SIG013", None), ("SIG012", None),
                   ("SIG032", None), ("LOG001", 13), ("LOG002", None), ("SIG086", None), ("SIG000", None)]


def test_check_json_and_terminal_put_the_earliest_cause_first(tmp_path: Path):
    """A DataLoader worker killed at line 2, then the NCCL and store errors of the ranks that lost it: the json
    `findings` and the diagnosis block start with the worker."""
    log = tmp_path / "train.log"
    log.write_text(
        "epoch 3 step 1200 loss 2.113\n"
        "RuntimeError: DataLoader worker (pid 88121) is killed by signal: Killed.\n"
        + W + "NCCL WARN Cuda failure 'invalid device ordinal'\n"
        "[rank1]: torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 3/4 clients "
        "joined.\n")
    doc = json.loads(runner.invoke(app, ["check", str(log), "--format", "json"]).stdout)
    errors = [f["rule_id"] for f in doc["findings"] if f["severity"] == "error"]
    assert errors[0] == "SIG081", errors
    lines = [f["data"]["first_line"] for f in doc["findings"] if f["rule_id"].startswith("SIG")
             and f["severity"] == "error"]
    assert lines == sorted(lines), lines
    out = runner.invoke(app, ["check", str(log)]).stdout
    block = out.split("Diagnosis", 1)[1].split("\n\n", 1)[0]
    assert block.index("SIG081") < block.index("SIG065") and "fix first" in block, block
    # areas whose every rule lacks its facts share one line; the Logs section keeps the details
    assert "not assessed, their facts are not in the inputs: Driver & NVML, PyTorch" in out
    assert "[?] Driver & NVML" not in out


def test_no_diagnosis_block_when_nothing_is_wrong(tmp_path: Path):
    log = tmp_path / "ok.log"
    log.write_text("epoch 1 step 10 loss 3.2\nepoch 1 step 20 loss 3.1\n")
    assert "Diagnosis" not in runner.invoke(app, ["check", str(log)]).stdout


def test_a_cuda_failure_read_by_a_specific_signature_is_not_reported_twice(tmp_path: Path):
    """NCCL's "Cuda failure 'X'" (SIG028) folds into the signature that reads X on the same line; alone, or with
    an X no signature reads, it stays."""
    for err, want in (("invalid device ordinal", "SIG065"), ("out of memory", "SIG200")):
        log = tmp_path / "nccl.log"
        log.write_text(W + f"init.cc:1722 NCCL WARN Cuda failure '{err}'\n")
        doc = json.loads(runner.invoke(app, ["check", str(log), "--format", "json"]).stdout)
        ids = [f["rule_id"] for f in doc["findings"] if f["rule_id"].startswith("SIG")]
        assert want in ids and "SIG028" not in ids, (err, ids)
    log.write_text(W + "proxy.cc:1473 NCCL WARN Cuda failure 'misaligned address'\n")
    doc = json.loads(runner.invoke(app, ["check", str(log), "--format", "json"]).stdout)
    assert "SIG028" in [f["rule_id"] for f in doc["findings"]]


def test_a_traceback_without_source_lines_still_has_its_exception_read():
    """Source lines are missing when the file is not on disk (a zipapp, `python -c`, a trimmed paste): the exception
    line right under the last `File "...", line N` line is output, not an echo of code. A real echo is indented
    deeper than its File line."""
    for prefix in ("", "[rank1]:", "[default3]:"):
        text = (f"{prefix}Traceback (most recent call last):\n"
                f'{prefix}  File "/opt/app/train.py", line 210, in <module>\n'
                f"{prefix}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
                "capacity of 79.15 GiB of which 1.20 GiB is free.\n")
        assert [h.id for h in match_signatures(text)] == ["SIG012"], prefix
        echoed = text.replace('line 210, in <module>\n', 'line 210, in <module>\n'
                              f'{prefix}    raise RuntimeError("CUDA error: device-side assert triggered")\n')
        assert [h.id for h in match_signatures(echoed)] == ["SIG012"], prefix


def test_a_warning_cause_takes_the_severity_of_the_failure_it_caused(tmp_path: Path):
    """Fabric Manager's NV_WARN_NOTHING_TO_DO alone is a warning (harmless without NVSwitches); followed by CUDA
    error 802 it stopped the job, so the cause is reported as an error with the 802 folded in."""
    fm = ("[Jan 14 2026 08:02:11] [ERROR] [tid 4101] request to query NVSwitch device information from NVSwitch "
          "driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n")
    log = tmp_path / "fm.log"
    log.write_text(fm)
    alone = json.loads(runner.invoke(app, ["check", str(log), "--format", "json"]).stdout)
    assert [(f["rule_id"], f["severity"]) for f in alone["findings"] if f["rule_id"] == "SIG415"] == [
        ("SIG415", "warning")]
    log.write_text(fm + "[rank0]: RuntimeError: CUDA error: system not yet initialized\n")
    both = json.loads(runner.invoke(app, ["check", str(log), "--format", "json"]).stdout)
    sig = [(f["rule_id"], f["severity"]) for f in both["findings"] if f["rule_id"].startswith("SIG")]
    assert sig[0] == ("SIG415", "error") and "SIG003" not in dict(sig), sig


def test_a_terminal_capture_of_nvidia_smi_and_lspci_keeps_both(tmp_path: Path):
    """`$ nvidia-smi` printing "No devices were found", then `$ lspci | grep -i nvidia`: the nvidia-smi answer is
    read (its pipe-free command line, then the message), and DRV001 names the GPU lspci saw on the bus."""
    cap = tmp_path / "capture.txt"
    cap.write_text("user@gpu-07:~$ nvidia-smi\nNo devices were found\nuser@gpu-07:~$ lspci | grep -i nvidia\n"
                   "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)\n")
    doc = json.loads(runner.invoke(app, ["check", str(cap), "--format", "json"]).stdout)
    drv = next(f for f in doc["findings"] if f["rule_id"] == "DRV001")
    assert drv["title"] == "NVIDIA driver loaded but no GPU visible"
    assert any("0000:3b:00.0" in e and "on the PCI bus" in e for e in drv["evidence"]), drv["evidence"]
    # a real table followed by the same words elsewhere in the capture is still read as the table
    table = (Path(__file__).parent / "fixtures" / "h200-text" / "nvidia-smi-busy.txt").read_text()
    cap.write_text("$ nvidia-smi\n" + table + "$ grep -c 'No devices were found' old.log\n0\n")
    doc = json.loads(runner.invoke(app, ["check", str(cap), "--format", "json"]).stdout)
    assert len(doc["snapshot"]["nvml"]["gpus"]) >= 1


def test_the_desync_report_names_the_ranks_the_watchdog_timeout_waited_for(tmp_path: Path):
    """TORCH_NCCL_DESYNC_DEBUG's report (TraceUtils.h analyzeLaggingRanks / analyzeMissingRanks): the watchdog
    timeout folds into the finding that names the lagging or missing ranks."""
    head = ("[rank2]:[E1104 09:12:44.512233482 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1843, OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, "
            "Timeout(ms)=600000) ran for 600043 milliseconds before timing out.\n"
            "[rank2]:[E1104 09:12:44.521370004 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 2] \n"
            "\t - [2] Timeout at collective: ALLREDUCE, #1843\n"
            "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n")
    for body, words in (("\t     [5, 6] finished collective #1842, but didn't join collective #1843 (count from 1)\n",
                         ("5, 6", "#1842", "host side")),
                        ("\t     [3] joined but didn't finish collective #1843 (count from 1)\n",
                         ("3", "stuck inside")),
                        ("\t - To our best knowledge, ranks [8, 9, 10, 11] are the lagging ranks that caused this "
                         "timeout. They never joined any collectives\n", ("8, 9, 10, 11", "never joined"))):
        log = tmp_path / "desync.log"
        log.write_text(head + body)
        doc = json.loads(runner.invoke(app, ["check", str(log), "--format", "json"]).stdout)
        sig = [f for f in doc["findings"] if f["rule_id"].startswith("SIG")]
        assert sig[0]["rule_id"] == "SIG387" and "SIG022" not in {f["rule_id"] for f in sig}, sig
        assert all(w in sig[0]["data"]["conclusion"] for w in words), sig[0]["data"]["conclusion"]


def test_an_environment_dump_line_is_not_an_error_line():
    from gpudoctor.parsers.signatures import unexplained_error_lines

    text = "NCCL_DEBUG=WARN\nexport TORCH_CPP_LOG_LEVEL=ERROR\nRuntimeError: something odd happened\n"
    spans: list = []
    match_signatures(text, spans=spans)
    assert unexplained_error_lines(text, spans) == ["RuntimeError: something odd happened"]


def test_two_generic_forms_on_one_line_do_not_hide_each_other(tmp_path: Path):
    """torch's lazy-init wrapper carrying a CUDA init failure matches two generic signatures of the cuda family
    (SIG401 and SIG066): one must be reported, never neither (the paste used to come out clean)."""
    log = tmp_path / "lazy.log"
    log.write_text("torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: CUDA "
                   "unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable "
                   "CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.\n")
    res = runner.invoke(app, ["check", str(log), "--format", "json"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 1 and [f["rule_id"] for f in doc["findings"] if f["severity"] == "error"] == ["SIG066"]


def test_a_library_error_after_a_kernel_fault_folds_under_the_fault(tmp_path: Path):
    log = tmp_path / "fault.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n"
                   "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n")
    doc = json.loads(runner.invoke(app, ["check", str(log), "--format", "json"]).stdout)
    ids = [f["rule_id"] for f in doc["findings"] if f["rule_id"].startswith("SIG")]
    assert ids[0] == "SIG023" and "SIG071" not in ids, ids


# --- per-rank logs: the earliest failure by wall clock, whatever the files are called ---------------------------

def test_per_rank_logs_are_ordered_by_the_time_their_first_error_carries(tmp_path: Path):
    # glog as torch's C++ prints it ("[rank0]:[E1204 14:12:10.000000 ...]"), Python logging ("2024-12-04 14:02:10,000")
    (tmp_path / "rank0.log").write_text(
        "[rank0]:[E1204 14:12:10.000000 11 c.cpp:1] step 900\n[rank0]: torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.21 GiB is free.\n")
    (tmp_path / "rank9.log").write_text(
        "2024-12-04 14:02:10,000 - ERROR - loader\n[rank9]: RuntimeError: DataLoader worker (pid 4242) is killed by "
        "signal: Killed.\n")
    res = runner.invoke(app, ["check", str(tmp_path), "--format", "json"])
    found = json.loads(res.stdout)["findings"]
    assert [(f["rule_id"], f["data"]["first_time"]) for f in found] == [
        ("SIG081", "12-04 14:02:10.000000"), ("SIG012", "12-04 14:12:10.000000")]
    (tmp_path / "rank9.log").write_text("[rank9]: RuntimeError: DataLoader worker (pid 4242) is killed by signal: "
                                        "Killed.\n")  # no time on one side: the files' order decides
    res = runner.invoke(app, ["check", str(tmp_path), "--format", "json"])
    assert [f["rule_id"] for f in json.loads(res.stdout)["findings"]] == ["SIG012", "SIG081"]


def test_one_file_keeps_its_line_order_even_with_times():
    fs = [_finding("SIG012", first_line=9, files=["a.log"], first_time="12-04 14:00:00.000000"),
          _finding("SIG013", first_line=2, files=["a.log"], first_time="12-04 14:05:00.000000")]
    assert [f.rule_id for f in cause_first(fs, ["a.log"])] == ["SIG013", "SIG012"]


def test_line_times_and_the_nearest_stamp_above_a_match():
    from gpudoctor.parsers.hit_origin import line_time, time_at

    assert line_time("[rank9]:[E1204 14:02:10.123456 4242 ProcessGroupNCCL.cpp:632] x") == "12-04 14:02:10.123456"
    assert line_time("Dec  4 14:02:10 node-b kernel: NVRM: Xid ...") == "12-04 14:02:10.000000"
    assert line_time("[Fri Dec  4 10:01:02 2026] NVRM: Xid ...") == "12-04 10:01:02.000000"
    assert line_time("  time      : 2024-05-14_10:22:31") == "05-14 10:22:31.000000"
    assert line_time("[ 1234.567890] NVRM: Xid ...") is None  # seconds since boot: no wall clock
    assert line_time("RuntimeError: step 1204 13:02 failed") is None
    text = "2024-05-14 10:22:31,5 ERROR x\nTraceback (most recent call last):\n  File \"t.py\"\nRuntimeError: boom\n"
    assert time_at(text, text.index("RuntimeError")) == "05-14 10:22:31.500000"
    assert time_at("RuntimeError: boom\n", 0) is None


def test_time_order_over_new_year_and_no_time_borrowed_from_another_record():
    fs = [_finding("SIG012", first_line=9, files=["a.log"], first_time="01-01 00:00:05.000000"),
          _finding("SIG013", first_line=2, files=["b.log"], first_time="12-31 23:59:50.000000"),
          _finding("SIG000", "info")]
    assert [f.rule_id for f in cause_first(fs, ["a.log", "b.log"])] == ["SIG013", "SIG012", "SIG000"]
    from gpudoctor.parsers.hit_origin import time_at

    text = "2024-12-04 09:00:00 INFO starting training\nstep 1 loss 2.0\nstep 2 loss 1.9\nBus error (core dumped)\n"
    assert time_at(text, text.index("Bus error")) is None  # the steps between are other records
