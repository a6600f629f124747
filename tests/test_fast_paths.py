"""The big-log fast paths (issue 14) read the same facts as the line-by-line parsers they replaced.

tests/fixtures/fast-paths/golden.json holds what the line-by-line parsers (commit before the fast paths) read from
the real H200 failure captures and from a seeded mixed NCCL / torchrun / dmesg log (tests/log_corpus_helpers.py),
(the same with google-re2 and without it). Regenerate only when a parser's facts are meant to change:
``PYTHONPATH=. python tests/test_fast_paths.py``.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from log_corpus_helpers import mixed_log  # noqa: E402

from gpudoctor.parsers import ParseError, dmesg, nccl_log, stream  # noqa: E402
from gpudoctor.parsers import signatures as S  # noqa: E402
from gpudoctor.parsers.offline import build_snapshot  # noqa: E402

FIX = Path(__file__).parent / "fixtures"
GOLDEN = FIX / "fast-paths" / "golden.json"
HIT_FIELDS = ("id", "count", "lines", "files", "groups")


#: signatures added after the golden file was written: their examples would reshuffle the seeded mixed log (the
#: golden holds what the line-by-line parsers read, so it is not regenerated for a new signature)
LATER = {"SIG329", "SIG330", "SIG331", "SIG332", "SIG333", "SIG334", "SIG335", "SIG336", "SIG337", "SIG338", "SIG339",
         "SIG340", "SIG341", "SIG342", "SIG343", "SIG344", "SIG345", "SIG346"}
LATER |= {f"SIG{n}" for n in range(347, 400)} | {f"SIG{n}" for n in range(421, 500)}
LATER |= {f"SIG{n}" for n in range(501, 1000)}


def _inputs() -> dict[str, str]:
    examples = [e["example"] for e in S.catalogue() if "example" in e and e["id"] not in LATER]
    out = {f"h200-errors/{p.name}": p.read_text() for p in sorted((FIX / "h200-errors").glob("*.txt"))}
    out["mixed"] = mixed_log(lines=10000, examples=examples)
    return out


def _facts(text: str) -> dict:
    rec: dict = {}
    try:
        rec["nccl"] = nccl_log.parse_nccl_log(text).model_dump()
    except ParseError as exc:
        rec["nccl"] = str(exc)
    sig = text
    try:
        k = dmesg.parse_kernel_log(text)
        rec["dmesg"] = [k.messages, [x.model_dump() for x in k.xids]]
        sig = k.joined_text
    except ParseError as exc:
        rec["dmesg"] = str(exc)
    spans: list[tuple[int, int]] = []
    rec["hits"] = [{f: h.model_dump()[f] for f in HIT_FIELDS} for h in S.match_signatures(sig, file="f", spans=spans)]
    rec["unexplained"] = S.unexplained_error_lines(sig, spans)
    return rec


def _snapshot_logs(tmp: Path, text: str) -> dict:
    p = tmp / "big.log"
    p.write_text(text)
    snap, errors = build_snapshot([str(p)])
    assert snap is not None and snap.logs is not None, errors
    logs = snap.logs.model_dump()
    logs["signatures"] = [{f: h[f] for f in HIT_FIELDS if f != "files"} for h in logs["signatures"]]
    for x in logs["xids"] + logs["first_exceptions"]:
        x.pop("file", None)
    logs.pop("source", None)
    return logs


def _all(tmp: Path) -> dict:
    out = {name: _facts(text) for name, text in _inputs().items()}
    out["snapshot-chunked"] = _snapshot_logs(tmp, _inputs()["mixed"])
    return json.loads(json.dumps(out))


def _use_engine(name: str, mp) -> None:
    """Force the stdlib engine (google-re2 cannot be uninstalled from a shared environment) or keep re2."""
    if name == "stdlib":
        mp.setattr(S, "_re2", None)
        mp.setattr(S, "_engine", S.functools.cache(S._Engine))
    for fn in (S._errorish_re2, S._errorish_prefilter):
        fn.cache_clear()
    mp.setattr(stream, "WHOLE_BYTES", 200_000)  # the mixed log (~1.1 MB) is read in chunks
    mp.setattr(stream, "CHUNK_BYTES", 300_000)


@pytest.fixture(params=["re2", "stdlib"])
def engine(request, monkeypatch):
    if request.param == "re2" and S._re2 is None:
        # the [test] extra installs google-re2: without it the engine most users run goes untested, so that is a
        # failure, not a skip, unless the platform has no wheel for it and the run says so
        if os.environ.get("GPUDOCTOR_TESTS_WITHOUT_RE2") != "1":
            pytest.fail("google-re2 is not installed (pip install -e '.[test]'; GPUDOCTOR_TESTS_WITHOUT_RE2=1 to "
                        "run only the stdlib engine on a platform without it)")
        pytest.skip("GPUDOCTOR_TESTS_WITHOUT_RE2=1: the re2 engine is not tested in this run")
    _use_engine(request.param, monkeypatch)
    yield request.param
    for fn in (S._errorish_re2, S._errorish_prefilter):
        fn.cache_clear()


def test_fast_paths_read_what_the_line_parsers_read(engine, tmp_path):
    golden = json.loads(GOLDEN.read_text())
    got = _all(tmp_path)
    assert got.keys() == golden.keys()
    for name in golden:
        assert got[name] == golden[name], name
    # the log read in chunks (and merged) gives the NCCL facts of the whole text, communicators included
    assert got["snapshot-chunked"]["nccl"] == got["mixed"]["nccl"]


def test_mixed_log_exercises_every_kind_of_fact():
    """The golden log holds every fact the NCCL parser reads, Xid events, and signature hits of several families."""
    f = json.loads(GOLDEN.read_text())["mixed"]
    n = f["nccl"]
    assert n["version"] and n["cuda_driver_version"] and n["net"] and n["nranks"] and n["nvls_channels"]
    assert n["ib_device_found"] is not None and n["gdr_disabled_hcas"] and n["env_set"] and n["init_complete"]
    assert len(n["warnings"]) == nccl_log.MAX_WARN and len(n["transports"]) >= 6 and len(n["host_net_transports"]) == 4
    assert len(f["dmesg"][1]) > 50 and len(f["hits"]) > 30 and f["unexplained"]


if __name__ == "__main__":  # regenerate the golden file (see the module docstring)
    import tempfile

    from _pytest.monkeypatch import MonkeyPatch

    res = {}
    for name in ("re2", "stdlib"):
        mp = MonkeyPatch()
        _use_engine(name, mp)
        with tempfile.TemporaryDirectory() as d:
            res[name] = _all(Path(d))
        mp.undo()
        for fn in (S._errorish_re2, S._errorish_prefilter):
            fn.cache_clear()
    assert res["re2"] == res["stdlib"], "the two engines disagree"
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(res["re2"], indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes)")


def _fixture_texts() -> list[str]:
    out = []
    for p in sorted(FIX.rglob("*")):
        if p.is_file() and p.suffix in ("", ".txt", ".log", ".xml", ".csv", ".md") and p.stat().st_size < 300_000:
            out.append(p.read_text(errors="replace"))
    return out


def test_format_gates_change_no_recognition(monkeypatch):
    """detect() with its literal gates recognises every fixture as the ungated patterns do, and on each text a pattern
    matches, one of its gate's literals is present (the gates are necessary conditions)."""
    from gpudoctor.parsers import detect as D

    texts = _fixture_texts()
    assert len(texts) > 100
    gated = [D.detect(t) for t in texts]
    for t in texts:
        for kind, rx in D._RULES:
            if rx.search(t):
                assert D._gate(t, kind), kind
    monkeypatch.setattr(D, "_gate", lambda text, kind: True)
    assert [D.detect(t) for t in texts] == gated
    assert D.GATES.keys() | {D.SMI} == {k for k, _ in D._RULES}


def test_error_line_test_agrees_with_the_pattern(engine):
    """has_errorish (re2 or literal-gated lines) answers as ERRORISH.search on every fixture, with both engines."""
    texts = _fixture_texts()
    assert any(S.has_errorish(t) for t in texts) and not all(S.has_errorish(t) for t in texts)
    assert [S.has_errorish(t) for t in texts] == [bool(S.ERRORISH.search(t)) for t in texts]


def test_channel_lines_out_of_the_common_form_keep_their_order():
    """A channel line the fast pattern leaves (no spaces around '->': read by _TRANSPORT) still counts, in order."""
    lines = ["nodeA:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
             "nodeA:1:2 [0] NCCL INFO Channel 01 : 0[0]->1[1] via SHM/direct/direct",
             "nodeA:1:2 [0] NCCL WARN Cuda failure 'out of memory' via cudaMalloc",
             "nodeB:3:4 [1] NCCL INFO Channel 02/1 : 2[1] -> 3[1] [send] via NET/IB/0/GDRDMA",
             "[rank5]:nodeC:5:6 [1] NCCL INFO Channel 02/1 : 5[1] -> 6[1] [send] via NET/IB/1"]
    f = nccl_log.parse_nccl_log("\n".join(lines))
    assert f.transports == ["P2P/CUMEM/read", "SHM/direct/direct", "NET/IB/0/GDRDMA", "NET/IB/1"]
    assert f.host_net_transports == {"nodeB": ["NET/IB/0/GDRDMA"]}  # the line parser read no host behind [rankN]:
    assert f.warnings == ["Cuda failure 'out of memory' via cudaMalloc"]
    assert nccl_log.parse_nccl_log("\n".join(lines[2:])).transports == ["NET/IB/0/GDRDMA", "NET/IB/1"]


def test_every_example_fires_its_signature_with_either_engine(engine):
    """The golden leaves out the signatures in LATER; their examples (and all others) still fire under both
    prefilters, so a regex whose literals or re2 form the prefilter misreads fails here."""
    missed = [e["id"] for e in S.catalogue() if "example" in e
              and e["id"] not in {h.id for h in S.match_signatures(e["example"])}]
    assert missed == [], f"{engine}: {missed}"


def test_the_block_cache_never_serves_another_texts_bytes():
    """A text freed after one check and a new one of the same length can share an id (CPython reuses memory): the
    matcher's cached block must be the new text's (two per-rank logs of equal size in a folder)."""
    eng = S._engine(tuple((e["id"], e["regex"]) for e in S.catalogue()), S._extras(S.catalogue()))
    new = "NET/IB: Got completion from peer 10.0.0.2<1> with status=IBV_WC_WR_FLUSH_ERR(5) opcode=0\n"
    eng._raw_key, eng._raw, eng._raw_text = (id(new), 0, len(new)), b"x" * len(new), new.replace("5", "4")
    assert eng._ascii_block(new, 0, len(new)) == new.encode()
