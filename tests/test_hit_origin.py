"""Signature hits grouped by rank / host / GPU with the lines of the first and last match (issue 14 item 3).

Lines are built from the prefix formats: NCCL src/debug.cc (``"%s:%d:%d " hostname, pid, tid``, then ``"[%d] NCCL INFO
%s"`` or ``"[%d] %s:%d (%s) NCCL WARN %s"`` with the CUDA device, after the optional NCCL_DEBUG_TIMESTAMP_FORMAT
stamp), torchrun's ``[rankN]:`` tee prefix, c10d's ``[PG ID n PG GUID n(name) Rank N]`` / ``[Rank N]`` log prefix,
and the kernel's ``NVRM: Xid (PCI:dddd:bb:dd): N, ...``.
"""
from __future__ import annotations

from gpudoctor.parsers import stream
from gpudoctor.parsers.hit_origin import describe, origin
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.parsers.signatures import match_signatures
from gpudoctor.rules import evaluate


def nccl_warn(host: str, dev: int, msg: str, stamp: str = "") -> str:
    return f"{stamp}{host}:{4000 + dev}:{4100 + dev} [{dev}] include/shm.h:27 (ncclShmOpen) NCCL WARN {msg}"


SHM = "Call to shm_open failed : Permission denied"
WATCHDOG = ("[rank{r}]:[E1201 10:00:00.000000 123 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.")


def test_origin_of_each_prefix_format():
    assert origin(nccl_warn("nodeA", 3, SHM)) == (None, "nodeA", "cuda:3@nodeA")
    assert origin(nccl_warn("node-b", 1, SHM, stamp="[2026-12-01 10:00:00] ")) == (None, "node-b", "cuda:1@node-b")
    assert origin("gpu7:123:456 [5] NCCL INFO Init COMPLETE") == (None, "gpu7", "cuda:5@gpu7")
    assert origin("[rank12]:" + nccl_warn("nodeC", 4, SHM)) == (12, "nodeC", "cuda:4@nodeC")
    assert origin(WATCHDOG.format(r=9)) == (9, None, None)
    c10d_old = "[E ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout"
    assert origin(c10d_old) == (2, None, None)
    assert origin("[ 2201.114523] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus") == (None, None,
                                                                                                 "0000:44:00")


def test_benign_look_alikes_name_nothing():
    assert origin("step 3 loss 2.0 Rank 4 of the matrix") == (None, None, None)  # no brackets
    assert origin("10.0.0.1:8080:1 connection refused") == (None, None, None)   # no [cudaDev] after pid:tid
    assert origin("see [rank3] in the docs") == (None, None, None)               # not the line's tee prefix
    assert origin("NVRM: loading NVIDIA UNIX x86_64 Kernel Module") == (None, None, None)


def test_hits_grouped_by_rank_host_gpu_with_first_and_last_line():
    lines = ["step 1"] * 5 + [WATCHDOG.format(r=3)] + ["step 2"] * 100 + [WATCHDOG.format(r=7)] * 2
    lines += [nccl_warn("nodeA", 3, SHM), "x", nccl_warn("nodeB", 0, SHM)]
    hits = {h.id: h for h in match_signatures("\n".join(lines) + "\n", file="train.log")}
    wd = hits["SIG022"]
    assert (wd.count, wd.ranks, wd.hosts, wd.first_line, wd.last_line) == (3, [3, 7], [], 6, 108)
    assert describe(wd) == "on ranks 3, 7, 3 matches in train.log, lines 6–108"
    shm = hits["SIG007"]
    assert (shm.hosts, shm.gpus, shm.first_line, shm.last_line) == (["nodeA", "nodeB"], ["cuda:3@nodeA",
                                                                                        "cuda:0@nodeB"], 109, 111)


def test_chunked_input_keeps_file_line_numbers_and_unites_ranks(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "WHOLE_BYTES", 3000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 2000)
    lines = []
    for k in range(40):
        lines += [f"step {k} loss 2.0"] * 30 + [WATCHDOG.format(r=k % 8)]
    p = tmp_path / "ranks.log"
    p.write_text("\n".join(lines) + "\n")
    snap, errors = build_snapshot([str(p)])
    assert not errors
    hit = next(h for h in snap.logs.signatures if h.id == "SIG022")
    assert hit.count == 40 and hit.ranks == list(range(8))
    assert (hit.first_line, hit.last_line) == (31, 40 * 31)  # the 31st line of each block of 31
    rep = evaluate(snap)
    f = next(f for f in rep.findings if f.rule_id == "SIG022")
    assert f"matched (on ranks 0-7, 40 matches in {p}, lines 31–1240):" in f.evidence
    assert f.data["ranks"] == list(range(8)) and f.data["last_line"] == 1240


def test_several_files_name_first_and_last(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("x\n" + WATCHDOG.format(r=1) + "\n")
    b.write_text("y\ny\n" + WATCHDOG.format(r=5) + "\n")
    snap, _ = build_snapshot([str(a), str(b)])
    hit = next(h for h in snap.logs.signatures if h.id == "SIG022")
    assert hit.ranks == [1, 5]
    assert describe(hit).endswith(f"first at {a}:2, last at {b}:3")


def test_pasted_error_without_prefix_gives_count_and_line_only():
    hit = next(h for h in match_signatures("RuntimeError: CUDA error: out of memory\n") if h.id)
    assert (hit.ranks, hit.hosts, hit.gpus) == ([], [], [])
    assert describe(hit) == "1 match, line 1"
