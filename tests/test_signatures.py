"""The signature catalogue (rules/signatures.toml) and its SIG rules, fired by real failure outputs."""
import re

import pytest

from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.parsers.signatures import catalogue, match_signatures, unexplained_error_lines
from gpudoctor.rules import REGISTRY, evaluate

# real failure outputs of the H200 host (tests/fixtures/h200-errors) -> the signature each must raise
H200 = {
    "cuda-oom.txt": "SIG012", "device-assert.txt": "SIG013", "devshm-1m-dataloader.txt": "SIG006",
    "duplicate-gpu.txt": "SIG010", "no-visible-gpu.txt": "SIG015", "rendezvous-timeout.txt": "SIG014",
    "nccl-info-1rank.txt": "SIG020",
}
# Messages quoted from the public threads / vendor docs each entry cites (no capture of our own exists).
QUOTED = {
    "SIG005": "RuntimeError: operator torchvision::nms does not exist",
    "SIG022": "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
              "Timeout(ms)=600000) ran for 600123 milliseconds before timing out.",
    "SIG023": "RuntimeError: CUDA error: an illegal memory access was encountered",
    "SIG024": "Failed to initialize NVML: Driver/library version mismatch",
    "SIG025": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
              "latest NVIDIA driver is installed and running.",
    "SIG026": "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    "SIG002": "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    "SIG001": "RuntimeError: CUDA error: no kernel image is available for execution on the device",
}


def test_catalogue_entries_are_complete_and_compile():
    ids = set()
    for e in catalogue():
        assert re.fullmatch(r"SIG\d{3}", e["id"]) and e["id"] not in ids
        ids.add(e["id"])
        for key in ("title", "regex", "severity", "cause", "remedy", "sources"):
            assert e.get(key), (e["id"], key)
        assert e["severity"] in ("error", "warning", "info")
        assert any(s.startswith("https://") for s in e["sources"]), e["id"]
        re.compile(e["regex"])
        assert not re.search(e["regex"], "", re.I), "a signature must not match empty text"
        assert e["id"] in REGISTRY


@pytest.mark.parametrize("name,sig", sorted(H200.items()))
def test_real_failure_fires_signature(fix, name, sig):
    snap, errors = build_snapshot([str(fix / "h200-errors" / name)])
    assert not errors
    ids = {f.rule_id for f in evaluate(snap).findings}
    assert sig in ids


@pytest.mark.parametrize("sig,text", sorted(QUOTED.items()))
def test_quoted_message_fires_signature(sig, text):
    assert sig in {h.id for h in match_signatures(text)}


def test_healthy_outputs_fire_no_signature(fix):
    # one-rank NCCL run with a tiny /dev/shm succeeds: no signature but the version line
    for f in ("h200-errors/nccl-devshm-64k-1rank.txt", "h200-text/nvidia-smi-q.txt", "h200-text/collect_env.txt",
              "h200-text/nvidia-smi.txt"):
        assert match_signatures((fix / f).read_text()) == [], f


def test_no_signature_fires_on_every_other_capture(fix):
    """Each h200-errors capture raises its own signature and not the signatures of the other failures."""
    for name, sig in H200.items():
        got = {h.id for h in match_signatures((fix / "h200-errors" / name).read_text())}
        others = set(H200.values()) - {sig}
        assert not (got & others), (name, got & others)


def test_multiline_nvrm_message_matches_after_join(fix):
    snap, _ = build_snapshot([str(fix / "corpus/021-dmesg-gpu-fallen-off-bus-no-xid/dmesg.txt")])
    hit = next(h for h in snap.logs.signatures if h.id == "SIG011")
    assert "0000:b3:00.0" in hit.lines[0] and "fallen off the bus" in hit.lines[0]


def test_counts_merge_across_ranks(fix):
    snap, _ = build_snapshot([str(fix / "h200-errors/duplicate-gpu.txt")])
    hit = next(h for h in snap.logs.signatures if h.id == "SIG010")
    assert hit.count == 2 and len(hit.lines) == 2


def test_unexplained_lines_listed_not_the_explained_ones(fix):
    text = (fix / "corpus/027-trtllm-2xa10-phb-no-peer-access-custom-allreduce/error.txt").read_text()
    spans = []
    match_signatures(text, spans=spans)
    assert unexplained_error_lines(text, spans) == []
    assert unexplained_error_lines("RuntimeError: something new broke", []) == ["RuntimeError: something new broke"]


def test_a_warnings_echoed_source_line_is_not_an_error_line():
    """Python prints a warning as "file:line: Category: message" then the source line that raised it; that source
    line (``warnings.warn(...)``) repeats the call, not a failure. A new warning category's own line still counts."""
    text = ('/opt/conda/lib/python3.10/site-packages/torch/nn/modules/transformer.py:306: UserWarning: '
            'enable_nested_tensor is True, but self.use_nested_tensor is False\n'
            '  warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why}")\n'
            '[rank1]:   warnings.warn_explicit(message, category, filename, lineno)\n')
    assert unexplained_error_lines(text, []) == []
    assert unexplained_error_lines("x.py:3: RuntimeWarning: WARNING: the run failed", []) != []


def test_signature_rules_not_applicable_in_live_scan(fix):
    from gpudoctor.parsers.offline import load_path

    rep = evaluate(load_path(str(fix / "h200/scan.json")))
    st = {o.rule_id: o.status for o in rep.outcomes}
    assert st["SIG001"] == "not_applicable" and st["LOG001"] == "not_applicable"
    assert st["SIG000"] == "not_applicable"   # a live scan takes no log text


def test_a_warning_header_whose_trailing_space_was_stripped_is_still_a_warning():
    """torch warns with the text on the next lines ('...__init__.py:283: UserWarning: ' + newline); editors and
    GitHub strip the trailing space, and the paste is still a Python warning."""
    from gpudoctor.parsers import detect as D

    text = ("/usr/local/lib/python3.10/site-packages/torch/cuda/__init__.py:283: UserWarning:\n"
            "    Found GPU0 NVIDIA GeForce GTX 1070 which is of cuda capability 6.1.\n")
    assert D.ERRORS in D.detect(text)
    assert D.ERRORS in D.detect(text.replace("UserWarning:\n", "UserWarning: \n"))


def test_a_message_quoted_in_code_or_a_command_is_not_what_happened():
    """A traceback echoes the source line under its `File "...", line N` line: a `raise X("...")` there holds the
    message the code could raise, not the one it did (the exception line below says that); so do a `raise` or
    `logger.error(` line pasted from a script and a `$ grep "..."` command."""
    echo = ('Traceback (most recent call last):\n'
            '  File "train.py", line 31, in main\n'
            '    raise RuntimeError("NCCL error: unhandled system error, check /dev/shm size")\n'
            'ValueError: invalid literal for int() with base 10: \'abc\'\n')
    assert match_signatures(echo) == []
    spans: list = []
    match_signatures(echo, spans=spans)
    assert unexplained_error_lines(echo, spans) == ["ValueError: invalid literal for int() with base 10: 'abc'"]
    for code in ('raise RuntimeError(f"NCCL error: unhandled system error {x}")\n',
                 '[rank0]:     logger.error("CUDA error: out of memory")\n',
                 '$ grep -n "unhandled system error" train.log\n'):
        assert match_signatures(code) == [], code
    # the same message said by the program still fires, also right after a traceback's source line
    said = echo.replace("ValueError: invalid literal for int() with base 10: 'abc'",
                        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system"
                        " error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5")
    assert [h.id for h in match_signatures(said)] == ["SIG008"]


def test_every_signature_compiles_for_the_re2_prefilter():
    """The re2 Set prefilter reads each regex without its look-arounds (re2 has none); a look-around with nested
    groups once left a pattern re2 rejects (printed on stderr at every run)."""
    import os

    from gpudoctor.parsers import signatures as S

    if S._re2 is None:  # the [test] extra installs google-re2: its absence is a failure unless the run says so
        if os.environ.get("GPUDOCTOR_TESTS_WITHOUT_RE2") == "1":
            pytest.skip("GPUDOCTOR_TESTS_WITHOUT_RE2=1: the re2 engine is not tested in this run")
        pytest.fail("google-re2 is not installed (pip install -e '.[test]')")
    opts = S._re2.Options()
    opts.never_capture = True
    bad = []
    for e in S.catalogue():
        try:
            S._re2.compile(S._re2_form(e["regex"]).encode(), opts)
        except Exception as exc:  # re2 raises its own error type on a pattern it cannot read
            bad.append(f"{e['id']}: {exc}")
    assert bad == []
    assert "(?!" not in S._re2_form(r"a(?!(?:b|c) )d") and S._re2_form(r"a(?!(?:b|c) )d").endswith("ad")
    # every signature without look-around is matched by re2 with its groups (no Python regex compiled in a worker)
    ents = S.catalogue()
    eng = S._Engine(tuple((e["id"], e["regex"]) for e in ents))
    plain = [i for i, e in enumerate(ents) if S._drop_lookarounds(e["regex"]) == e["regex"]]
    assert len(plain) > 0.8 * len(ents)
    assert [ents[i]["id"] for i in plain if eng._re2_exact(i) is None] == []
    assert all(eng._re2_exact(i) is None for i in range(len(ents)) if i not in plain)
    # and gives Python's groups and span on an example
    i = next(i for i in plain if ents[i]["id"] == "SIG039")
    line = ents[i]["example"]
    want = re.search(ents[i]["regex"], line, re.IGNORECASE | re.MULTILINE)
    got = next(eng.finditer(i, line, 0, len(line), len(line)))
    assert (got.start(), got.end(), got.groupdict()) == (want.start(), want.end(), want.groupdict())


def test_traceback_furniture_after_a_time_stamp_is_not_an_error_line():
    text = ("2024-05-01 10:00:01 [rank3]: Traceback (most recent call last):\n"
            "2024-05-01 10:00:01 [rank3]:   File \"train.py\", line 10, in <module>\n"
            "[2024-05-01T10:00:01.5Z] Traceback (most recent call last):\n")
    assert unexplained_error_lines(text, []) == []
