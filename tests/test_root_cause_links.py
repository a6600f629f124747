"""Follow-ons attached to their cause (issue 14 item 3): the CUDA errors of a process whose GPU failed are listed
inside the kernel log's Xid finding; NCCL's "unhandled system error" inside the failed connect that raised it; the
errno NCCL names under "Last error:" (the one that made the call fail) decides the connect's case, not a retry
before it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app

runner = CliRunner()


def _check(*paths: Path) -> list[dict]:
    res = runner.invoke(app, ["check", *map(str, paths), "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)["findings"]


def _errors(found: list[dict]) -> list[str]:
    return [f["rule_id"] for f in found if f["severity"] == "error"]


# open-gpu-kernel-modules nvrm: "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%d, name=%s, %s" (the pid / name since R525)
def _dmesg(xid: int, text: str) -> str:
    return f"[ 1234.567890] NVRM: Xid (PCI:0000:19:00): {xid}, pid=4242, name=python, {text}\n"


# c10/cuda/CUDAException.cpp "CUDA error: %s" with cudaGetErrorString's text; NCCL's CUDACHECK "Cuda failure '%s'"
_APP = ("[rank0]: Traceback (most recent call last):\n"
        "[rank0]:   File \"/workspace/train.py\", line 40, in <module>\n"
        "[rank0]:     loss.backward()\n"
        "[rank0]: RuntimeError: CUDA error: {err}\n"
        "node1:4242:4300 [0] NCCL WARN Cuda failure '{err}'\n")


@pytest.mark.parametrize("xid, text, err", [
    (79, "GPU has fallen off the bus.", "unspecified launch failure"),
    (48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 3, "
         "subpartition 1.", "uncorrectable ECC error encountered"),
    (119, "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL).",
     "unknown error"),
])
def test_the_cuda_errors_of_a_failed_gpu_are_listed_inside_its_xid(tmp_path, xid, text, err):
    (tmp_path / "dmesg.txt").write_text(_dmesg(xid, text))
    (tmp_path / "train.log").write_text(_APP.format(err=err))
    found = _check(tmp_path)
    assert _errors(found) == ["LOG001"], _errors(found)
    xid_finding = found[0]
    assert xid_finding["data"]["xid"] == xid and xid_finding["data"]["follow_on_signatures"]
    assert any("caused by this Xid" in e and f"CUDA error: {err}" in e for e in xid_finding["evidence"])


def test_an_application_xid_does_not_absorb_the_applications_error(tmp_path):
    # Xid 31 (MMU fault) is the kernel's echo of the illegal address the program made: the CUDA error stays its own
    fault = ("Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. "
             "Fault is of type FAULT_PDE ACCESS_TYPE_READ")
    (tmp_path / "dmesg.txt").write_text(_dmesg(31, fault))
    (tmp_path / "train.log").write_text(_APP.format(err="an illegal memory access was encountered"))
    assert "SIG023" in _errors(_check(tmp_path))


def test_without_a_kernel_log_the_cuda_error_is_the_finding(tmp_path):
    p = tmp_path / "train.log"
    p.write_text(_APP.format(err="unspecified launch failure"))
    assert "SIG058" in _errors(_check(p))


# NVIDIA/nccl src/misc/socket.cc "socketStartConnect: Connect to %s failed : %s"; torch ProcessGroupNCCL's
# "NCCL error in: %s:%d, %s" + "Last error:\n%s" (ncclGetLastError)
_CONNECT = ("node2:4471:4503 [1] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.5<45213> "
            "failed : {}\n")
_RAISED = ("[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
           "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
           "version 2.21.5\n[rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
           "failed or device error.\n[rank1]: Last error:\n"
           "[rank1]: socketStartConnect: Connect to 10.0.0.5<45213> failed : {}\n")


@pytest.mark.parametrize("first, last, needle", [
    ("Connection refused", "No route to host", "firewall"),
    ("No route to host", "Connection refused", "refused"),
])
def test_the_last_error_decides_which_connect_failure_it_was(tmp_path, first, last, needle):
    p = tmp_path / "nccl.log"
    p.write_text(_CONNECT.format(first) + _CONNECT.format(last) + _RAISED.format(last))
    found = _check(p)
    assert _errors(found) == ["SIG031"], _errors(found)
    assert needle in found[0]["title"].lower() and last in found[0]["title"]
    assert any("SIG008" in e for e in found[0]["evidence"])  # the system error NCCL raised is the connect's


def test_a_wrapper_whose_lines_another_signature_reads_is_folded_into_it(tmp_path):
    # NCCL's CUDACHECK "Cuda failure 'X'" carries CUDA's text: SIG058 reads it on that line and on torch's own line
    p = tmp_path / "train.log"
    p.write_text(_APP.format(err="unspecified launch failure"))
    found = _check(p)
    assert _errors(found) == ["SIG058"] and "SIG028" not in {f["rule_id"] for f in found}


def test_a_wrapper_with_a_line_of_its_own_stays_a_finding(tmp_path):
    p = tmp_path / "train.log"
    p.write_text(_APP.format(err="unspecified launch failure")
                 + "node1:4242:4300 [0] NCCL WARN Cuda failure 'frobnication not permitted'\n")
    assert "SIG028" in _errors(_check(p))


def test_the_containment_xid_of_an_ecc_error_is_part_of_it(tmp_path):
    # open-gpu-kernel-modules: Xid 48 (DBE) then Xid 94 "Contained: ..." for the same error on the same GPU
    p = tmp_path / "dmesg.txt"
    p.write_text("[ 100.1] NVRM: Xid (PCI:0000:b1:00): 48, pid=4242, name=python, An uncorrectable double bit error "
                 "(DBE) has been detected on GPU in the framebuffer at partition 3, subpartition 1.\n"
                 "[ 100.2] NVRM: Xid (PCI:0000:b1:00): 94, pid=4242, name=python, Contained: SM (0x1). RST: No\n"
                 "[ 200.2] NVRM: Xid (PCI:0000:3b:00): 94, pid=5151, name=python, Contained: SM (0x1). RST: No\n")
    xids = [(f["data"]["xid"], f["data"]["pci_bus_id"]) for f in _check(p) if f["rule_id"] == "LOG001"]
    assert xids == [(48, "0000:b1:00"), (94, "0000:3b:00")]  # the 94 of another GPU is its own fault


# torch ProcessGroupNCCL / NCCL's ncclRemoteError text on the ranks that lost a peer; socket.cc's closed connection
_PEERS = ("[rank0]:[E1204 10:40:00.000000000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process "
          "group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network "
          "error, NCCL version 2.21.5\n[rank4]: Last error:\n[rank4]: socketProgress: Connection closed by remote "
          "peer node01<50003>\n")


def test_an_exception_no_signature_explains_is_the_cause_of_the_peers_errors(tmp_path):
    p = tmp_path / "job.log"
    p.write_text("[rank2]: Traceback (most recent call last):\n"
                 "[rank2]:   File \"/work/train.py\", line 211, in <module>\n[rank2]:     loss = criterion(out, y)\n"
                 "[rank2]: ValueError: Expected input batch_size (16) to match target batch_size (8).\n" + _PEERS)
    found = _check(p)
    assert _errors(found) == ["LOG013"], _errors(found)
    f = found[0]
    assert f["data"]["rank"] == 2 and f["data"]["line"] == 4 and "ValueError" in f["evidence"][0]
    assert set(f["data"]["follow_on_signatures"]) >= {"SIG032"}


def test_a_known_cause_keeps_the_lead_over_an_unexplained_exception(tmp_path):
    p = tmp_path / "job.log"
    p.write_text("[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
                 "capacity of 79.15 GiB of which 1.10 GiB is free.\n[rank3]: KeyError: 'labels'\n" + _PEERS)
    errors = _errors(_check(p))
    assert errors[0] == "SIG012" and "LOG013" not in errors


def test_a_watchdog_timeout_after_another_ranks_shared_memory_crash_is_its_follow_on(tmp_path):
    (tmp_path / "rank00.log").write_text(
        "[rank0]:[E1204 14:12:00.000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out.\n")
    (tmp_path / "rank09.log").write_text("RuntimeError: DataLoader worker (pid 4711) is killed by signal: Bus error. "
                                         "It is possible that dataloader's workers are out of shared memory.\n")
    assert _errors(_check(tmp_path)) == ["SIG006"]


def test_the_same_pci_address_on_two_hosts_is_two_gpus(tmp_path):
    line = ("Dec 04 14:0{m}:10 {host} kernel: NVRM: Xid (PCI:0000:9a:00): 13, pid={pid}, name=python, Graphics SM Warp "
            "Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n")
    (tmp_path / "kern-a.txt").write_text(line.format(m=2, host="node-a", pid=41005))
    (tmp_path / "kern-b.txt").write_text(line.format(m=2, host="node-b", pid=41013)
                                         + line.format(m=3, host="node-b", pid=41099))
    found = [f for f in _check(tmp_path) if f["rule_id"] == "LOG001"]
    assert sorted(f["data"]["host"] for f in found) == ["node-a", "node-b"]
    assert not any("different processes" in e for f in found for e in f["evidence"])


def test_a_line_is_attributed_to_the_rank_its_own_prefix_names(tmp_path):
    # an NCCL WARN line has no rank prefix: "[Rank 5]" on the next line is not its rank
    p = tmp_path / "job.log"
    p.write_text("gpu-a17:5104:5300 [4] include/alloc.h:185 NCCL WARN Cuda failure 'an illegal memory access was "
                 "encountered'\n[rank5]:[E1204 10:40:00.000 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) "
                 "Rank 5] Process group watchdog thread terminated with exception: CUDA error: unspecified launch "
                 "failure\n")
    res = runner.invoke(app, ["check", str(p), "--format", "json"])
    hits = {h["id"]: h for h in json.loads(res.stdout)["snapshot"]["logs"]["signatures"]}
    assert hits["SIG023"]["ranks"] == [] and hits["SIG023"]["gpus"] == ["cuda:4@gpu-a17"]


def test_without_any_error_signature_the_first_failure_rule_is_not_assessed(tmp_path):
    p = tmp_path / "job.log"
    p.write_text("[rank2]: ValueError: Expected input batch_size (16) to match target batch_size (8).\n")
    res = runner.invoke(app, ["check", str(p), "--format", "json"])
    outcome = next(o for o in json.loads(res.stdout)["outcomes"] if o["rule_id"] == "LOG013")
    assert outcome["status"] == "not_assessed"  # nothing it could be the cause of: never a pass


# the MMU fault (Xid 31) and graphics exception (Xid 13) the kernel logged for the process whose kernel faulted: the
# kernel's record of the application's error, one fault (nvrm's "MMU Fault: ENGINE %s ... Fault is of type %s")
_MMU = "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3a_12340000. Fault is of " \
       "type FAULT_PDE ACCESS_TYPE_VIRT_READ"
_SM = "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address"


@pytest.mark.parametrize("err,sid", [("an illegal memory access was encountered", "SIG023"),
                                     ("unspecified launch failure", "SIG058")])
def test_the_kernels_record_of_an_application_fault_is_listed_with_it(tmp_path, err, sid):
    (tmp_path / "dmesg.txt").write_text(_dmesg(31, _MMU) + _dmesg(13, _SM) + _dmesg(43, "Ch 00000008"))
    (tmp_path / "train.log").write_text(_APP.format(err=err))
    found = _check(tmp_path / "dmesg.txt", tmp_path / "train.log")
    assert [f["rule_id"] for f in found if f["rule_id"] in ("LOG001", sid)] == [sid]  # one fault, one finding
    ev = " ".join(next(f for f in found if f["rule_id"] == sid)["evidence"])
    assert "the kernel's record of this fault: Xid 13" in ev and "Xid 31" in ev


def test_an_application_xid_alone_or_hitting_many_processes_stays_its_own_finding(tmp_path):
    (tmp_path / "dmesg.txt").write_text(_dmesg(31, _MMU))
    assert [f["rule_id"] for f in _check(tmp_path / "dmesg.txt")] == ["LOG001"]  # no CUDA error to attach it to
    many = "".join(_dmesg(31, _MMU).replace("pid=4242, name=python", f"pid={p}, name={n}")
                   for p, n in ((11, "python"), (12, "ffmpeg"), (13, "a.out")))
    (tmp_path / "dmesg.txt").write_text(many)
    (tmp_path / "train.log").write_text(_APP.format(err="an illegal memory access was encountered"))
    found = _check(tmp_path / "dmesg.txt", tmp_path / "train.log")
    xid = next(f for f in found if f["rule_id"] == "LOG001")  # three programs, one GPU: the GPU is suspect
    assert "3 different processes" in " ".join(xid["evidence"])
    assert "kernel's record" not in " ".join(e for f in found for e in f["evidence"])


def test_a_hardware_xid_still_takes_the_application_error_as_its_follow_on(tmp_path):
    (tmp_path / "dmesg.txt").write_text(_dmesg(79, "GPU has fallen off the bus.") + _dmesg(13, _SM))
    (tmp_path / "train.log").write_text(_APP.format(err="an illegal memory access was encountered"))
    found = _check(tmp_path / "dmesg.txt", tmp_path / "train.log")
    assert found[0]["rule_id"] == "LOG001" and found[0]["data"]["xid"] == 79
    assert "SIG023" not in [f["rule_id"] for f in found]
    assert found[0]["data"]["follow_on"] == {"13": 1}  # the process's Xid on the GPU that fell off: listed there


def _xid_of(xid: int, bus: str, pid: int, name: str, text: str) -> str:
    return f"[ 1234.567890] NVRM: Xid (PCI:0000:{bus}:00): {xid}, pid={pid}, name={name}, {text}\n"


def test_the_jobs_own_mmu_fault_is_its_cause_not_an_ecc_error_of_another_gpu(tmp_path):
    (tmp_path / "dmesg.txt").write_text(_xid_of(48, "86", 1, "init", "An uncorrectable double bit error (DBE) has "
                                                 "been detected on GPU in the framebuffer at partition 2.")
                                        + _xid_of(31, "18", 4242, "python", _MMU))
    (tmp_path / "train.log").write_text(_APP.format(err="an illegal memory access was encountered"))
    found = _check(tmp_path / "dmesg.txt", tmp_path / "train.log")
    sig = next(f for f in found if f["rule_id"] == "SIG023")
    assert any("the kernel's record of this fault: Xid 31" in e for e in sig["evidence"])
    ecc = next(f for f in found if f["rule_id"] == "LOG001" and f["data"]["xid"] == 48)
    assert ecc["data"]["follow_on_signatures"] == []  # not caused by the ECC error of GPU 86:00


def test_another_programs_graphics_exception_is_not_the_jobs_record(tmp_path):
    (tmp_path / "dmesg.txt").write_text(_xid_of(13, "3b", 50011, "other_job", _SM))
    (tmp_path / "train.log").write_text(_APP.format(err="an illegal memory access was encountered"))
    found = _check(tmp_path / "dmesg.txt", tmp_path / "train.log")
    assert {f["rule_id"] for f in found} >= {"SIG023", "LOG001"}
    assert not any("kernel's record" in e for f in found for e in f["evidence"])


def test_a_processs_xid_on_a_gpu_that_failed_is_listed_with_the_gpus_xid(tmp_path):
    (tmp_path / "dmesg.txt").write_text(_xid_of(48, "18", 4242, "python", "An uncorrectable double bit error (DBE) "
                                                 "has been detected on GPU in the framebuffer at partition 2.")
                                        + _xid_of(31, "18", 4242, "python", _MMU))
    found = _check(tmp_path / "dmesg.txt")
    assert [(f["rule_id"], f["data"]["xid"]) for f in found] == [("LOG001", 48)]
    assert found[0]["data"]["follow_on"] == {"31": 1}


def test_one_program_restarted_three_times_does_not_point_at_the_gpu(tmp_path):
    (tmp_path / "dmesg.txt").write_text("".join(_xid_of(31, "18", p, "python3", _MMU) for p in (11, 12, 13)))
    f, = _check(tmp_path / "dmesg.txt")
    assert "different processes" not in " ".join(f["evidence"])
    programs = ((11, "python3"), (12, "ffmpeg"), (13, "a.out"))
    (tmp_path / "dmesg.txt").write_text("".join(_xid_of(31, "18", p, n, _MMU) for p, n in programs))
    f, = _check(tmp_path / "dmesg.txt")
    assert "3 different processes" in " ".join(f["evidence"])
