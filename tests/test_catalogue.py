"""The error catalogue as data (issue 14): every signature against its own format-string instantiation and a
benign look-alike, the CUDA error and Xid tables, and root-cause grouping (follow-ons attached to their cause)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpudoctor.compat import data
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.parsers.signatures import catalogue, match_signatures
from gpudoctor.rules import evaluate
from gpudoctor.rules.logs import RULE_CAUSES

FAMILIES = {"nccl", "c10d", "ddp", "cuda", "build", "dataloader", "container", "kernel", "nvidia-smi", "checkpoint",
            "autograd"}
ENTRIES = catalogue()
IDS = {e["id"] for e in ENTRIES}
FACT_RULES = set(data.load("rule_meta"))  # the fact rules a signature may restate
WITH_EXAMPLE = [e for e in ENTRIES if "example" in e]


def _rx(e: dict) -> re.Pattern[str]:
    return re.compile(e["regex"], re.IGNORECASE | re.MULTILINE)


def test_every_entry_has_family_and_valid_links():
    for e in ENTRIES:
        assert e.get("family") in FAMILIES, e["id"]
        for f in e.get("follows", []):  # fact rules: RULE_CAUSES (rules/logs.py) or a restated fact (rules/restated.py)
            assert (f in IDS or f in RULE_CAUSES or f in FACT_RULES) and f != e["id"], (e["id"], f)
        if "example" in e:
            assert e.get("origin") and e.get("negative"), e["id"]


@pytest.mark.parametrize("e", WITH_EXAMPLE, ids=[e["id"] for e in WITH_EXAMPLE])
def test_example_matches_and_negative_stays_quiet(e):
    assert _rx(e).search(e["example"]), e["id"]
    assert not _rx(e).search(e["negative"]), e["id"]
    # through the public matcher too (text cleaning, multi-line joins)
    assert e["id"] in {h.id for h in match_signatures(e["example"])}
    assert e["id"] not in {h.id for h in match_signatures(e["negative"])}


@pytest.mark.parametrize("e", [e for e in WITH_EXAMPLE if e.get("conclusion")],
                         ids=[e["id"] for e in WITH_EXAMPLE if e.get("conclusion")])
def test_conclusion_fills_from_the_example(e):
    from gpudoctor.rules.logs import _conclusion

    hit = next(h for h in match_signatures(e["example"]) if h.id == e["id"])
    text = _conclusion(e, hit.groups)
    if text is None:  # the example took an alternative that carries none of the sentence's facts
        assert not hit.groups, e["id"]
    else:
        assert "{" not in text


def test_example_of_one_entry_does_not_fire_unrelated_families():
    """An instantiated line raises signatures of its own family only (or declared causes/follow-ons)."""
    fam = {e["id"]: e["family"] for e in ENTRIES}
    related = {e["id"]: set(e.get("follows", [])) for e in ENTRIES}
    allowed_cross = {("SIG037", "SIG006"), ("SIG006", "SIG037")}  # the NCCL syscall line names the /dev/shm cause
    for e in WITH_EXAMPLE:
        for h in match_signatures(e["example"]):
            if h.id == e["id"] or fam[h.id] == e["family"]:
                continue
            if h.id in related[e["id"]] or e["id"] in related.get(h.id, set()):
                continue
            assert (e["id"], h.id) in allowed_cross or h.id == "SIG057", (e["id"], h.id)


def test_cuda_error_table_is_complete_and_linked():
    table = data.load("cuda_errors")["error"]
    assert len(table) > 120 and table["719"]["name"] == "cudaErrorLaunchFailure"
    for code, err in table.items():
        sid = err.get("signature")
        if sid:
            e = next(x for x in ENTRIES if x["id"] == sid)
            line = f"RuntimeError: CUDA error: {err['message']}"
            assert _rx(e).search(line) or _rx(e).search(err["name"]), (code, sid)
        # every runtime error is at least caught by the generic CUDA signature
        if code != "0":
            assert "SIG057" in {h.id for h in match_signatures(f"RuntimeError: CUDA error: {err['message']}")}


def test_generic_cuda_error_names_the_code():
    from gpudoctor.rules.logs import _conclusion

    e = next(x for x in ENTRIES if x["id"] == "SIG057")
    hit = next(h for h in match_signatures("RuntimeError: CUDA error: invalid resource handle") if h.id == "SIG057")
    assert "cudaError_t 400, cudaErrorInvalidResourceHandle" in (_conclusion(e, hit.groups) or "")


def test_xid_table_covers_catalogue_with_blame():
    xids = data.load("xid")["xid"]
    assert all(str(i) in xids for i in range(1, 96))
    for code in ("109", "119", "120", "121", "136", "140", "143", "154", "158"):
        assert code in xids
    for code, x in xids.items():
        assert x["severity"] in ("error", "warning", "info"), code
        assert x["blame"] in ("application", "GPU", "node", "fabric", "none"), code
        assert x["action"] and x["meaning"], code
    assert xids["79"]["blame"] == "node" and xids["74"]["blame"] == "fabric" and xids["13"]["blame"] == "application"


# --- root cause first: follow-ons attached to their cause ---------------------------------------------------------

def _findings(tmp_path: Path, text: str, name: str = "log.txt"):
    p = tmp_path / name
    p.write_text(text)
    snap, errors = build_snapshot([str(p)])
    assert snap is not None, errors
    return {f.rule_id: f for f in evaluate(snap).findings}


def test_remote_exit_is_reported_under_the_oom_that_caused_it(tmp_path):
    text = ("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
            "capacity of 139.81 GiB of which 1.2 GiB is free.\n"
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:"
            "317, remote process exited or there was a network error, NCCL version 2.21.5\n")
    got = _findings(tmp_path, text)
    assert "SIG012" in got and "SIG027" not in got
    assert any("follow-on (SIG027" in line for line in got["SIG012"].evidence)


def test_remote_exit_alone_is_reported(tmp_path):
    got = _findings(tmp_path, "ncclRemoteError: remote process exited or there was a network error\n")
    assert "SIG027" in got


def test_generic_nccl_error_quiet_when_a_specific_one_explains(tmp_path):
    text = ("node1:1:1 [0] init.cc:1 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n"
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage (run with "
            "NCCL_DEBUG=WARN for details), NCCL version 2.21.5\n")
    got = _findings(tmp_path, text)
    assert "SIG010" in got and "SIG030" not in got


def test_xid45_attached_to_xid79_on_the_same_gpu(tmp_path):
    text = ("[ 100.1] NVRM: Xid (PCI:0000:41:00): 79, pid=1234, GPU has fallen off the bus.\n"
            "[ 100.2] NVRM: Xid (PCI:0000:41:00): 45, pid=1234, Ch 00000010\n"
            "[ 100.3] NVRM: Xid (PCI:0000:41:00): 45, pid=1234, Ch 00000011\n"
            "[ 200.0] NVRM: Xid (PCI:0000:c1:00): 45, pid=999, Ch 00000001\n")
    p = tmp_path / "dmesg.txt"
    p.write_text(text)
    snap, _ = build_snapshot([str(p)])
    fs = [f for f in evaluate(snap).findings if f.rule_id == "LOG001"]
    xid_codes = sorted((f.data["xid"], f.data["pci_bus_id"]) for f in fs)
    assert all(code != 45 or "41:00" not in bus for code, bus in xid_codes)  # 45 folded into 79 on that GPU
    f79 = next(f for f in fs if f.data["xid"] == 79)
    assert f79.data["follow_on"] == {45: 2} and f79.data["blame"] == "node"
    assert any(f.data["xid"] == 45 for f in fs)  # the lone 45 on another GPU stays visible


def test_sigkill_points_to_the_oom_killer_when_dmesg_shows_it(tmp_path):
    text = ("[Mon Mar  3 10:22:31 2025] Out of memory: Killed process 48213 (python) total-vm:612344kB\n"
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 48213) "
            "of binary: /usr/bin/python3\n")
    got = _findings(tmp_path, text)
    assert "SIG067" in got and "SIG047" not in got


# --- format-string generalisation: other instantiations of the same format strings ---------------------------------

@pytest.mark.parametrize("sid,line", [
    ("SIG031", "n1:2:3 [0] NCCL WARN Net : Connect to 192.168.1.7<34567> failed : No route to host"),
    ("SIG031", "n1:2:3 [7] NCCL WARN socketStartConnect: Connect to [fe80::1%eth0]<4000> failed : Connection refused"),
    ("SIG034", "n1:2:3 [0] NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129"),
    ("SIG038", "The client socket has timed out after 900s while trying to connect to (master-0.svc, 23456)."),
    ("SIG041", "torch.distributed.DistStoreError: Socket Timeout"),
    ("SIG047", "Signal 9 (SIGKILL) received by PID 7777"),
    ("SIG065", "Attempting to deserialize object on CUDA device 3 but torch.cuda.device_count() is 1."),
    ("SIG079", "ImportError: libnccl.so.2: cannot open shared object file: No such file or directory"),
    ("SIG081", "RuntimeError: DataLoader worker (pid 1) is killed by signal: Segmentation fault."),
    ("SIG094", "NVRM: API mismatch: the client has the version 535.183.01, but NVRM: this kernel module has the "
               "version 535.161.08."),
    ("SIG098", "pcieport 0000:80:03.0: AER: Corrected error received: 0000:81:00.0"),
    ("SIG100", "Unable to determine the device handle for gpu 0000:CA:00.0: GPU is lost.  Reboot the system"),
])
def test_other_instantiations_match(sid, line):
    assert sid in {h.id for h in match_signatures(line)}


@pytest.mark.parametrize("line", [
    "n1:2:3 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
    "n1:2:3 [0] NCCL INFO Failed to open libibverbs.so[.1]",
    "n1:2:3 [0] NCCL INFO cudaDriverVersion 12040",
    "UserWarning: The detected CUDA version (12.1) has a minor version mismatch with the version that was used to "
    "compile PyTorch (12.4). Most likely this shouldn't be a problem.",
    "nvidia: module verification failed: signature and/or required key missing - tainting kernel",
    "torch.distributed.elastic.multiprocessing.api:Sending process 913 closing signal SIGTERM",
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07",
])
def test_benign_lines_stay_quiet(line):
    assert match_signatures(line) == []


def test_coverage_table_is_current():
    """docs/catalogue-coverage.md is generated from the data; regenerate with scripts/catalogue_coverage.py."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("catalogue_coverage", root / "scripts" / "catalogue_coverage.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (root / "docs" / "catalogue-coverage.md").read_text() == mod.render()


def test_finding_concludes_with_other_inputs(tmp_path):
    """The NCCL connect failure names the NCCL version and the interface setting found in the other inputs."""
    (tmp_path / "nccl.log").write_text(
        "n1:2:3 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "n1:2:3 [0] NCCL WARN socketStartConnect: Connect to 172.17.0.1<45213> failed : Connection refused\n")
    (tmp_path / "env.txt").write_text("NCCL_SOCKET_IFNAME=docker0\nNCCL_DEBUG=INFO\n")
    snap, _ = build_snapshot([str(tmp_path)])
    f = next(f for f in evaluate(snap).findings if f.rule_id == "SIG031")
    text = "\n".join(f.evidence)
    assert "172.17.0.1<45213>" in text and "Connection refused" in text
    assert "NCCL 2.21.5" in text and "NCCL_SOCKET_IFNAME=docker0" in text


def test_both_engines_give_the_same_hits(monkeypatch):
    """The stdlib literal prefilter (no google-re2) and the re2 engine find the same signatures and counts."""
    import gpudoctor.parsers.signatures as S

    text = "\n".join(e["example"] + "\n" + e["negative"] for e in WITH_EXAMPLE) * 3
    first = [(h.id, h.count) for h in S.match_signatures(text)]
    monkeypatch.setattr(S, "_re2", None)
    S._engine.cache_clear()
    S._errorish_prefilter.cache_clear()
    S._errorish_re2.cache_clear()
    try:
        assert S.engine_name() == "literal-prefilter"
        assert [(h.id, h.count) for h in S.match_signatures(text)] == first
    finally:
        S._engine.cache_clear()
        S._errorish_prefilter.cache_clear()
        S._errorish_re2.cache_clear()
