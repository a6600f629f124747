"""Large inputs parsed in worker processes give exactly what one process gives (gpudoctor/parsers/chunk_pool.py),
survive a dying worker, and stop cleanly on Ctrl-C with what was read."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from log_corpus_helpers import mixed_log  # noqa: E402

from gpudoctor.parsers import chunk_pool, stream  # noqa: E402
from gpudoctor.parsers import signatures as S  # noqa: E402
from gpudoctor.parsers.offline import build_snapshot  # noqa: E402

pytestmark = pytest.mark.skipif(not chunk_pool.can_fork(), reason="worker processes need fork (Linux)")


@pytest.fixture
def big_log(tmp_path, monkeypatch):
    """A ~1.1 MB mixed NCCL / torchrun / dmesg log with catalogue errors, read in ~12 chunks of 100 kB."""
    monkeypatch.setattr(stream, "WHOLE_BYTES", 60_000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 100_000)
    p = tmp_path / "train.log"
    p.write_text(mixed_log(lines=10000, examples=[e["example"] for e in S.catalogue() if "example" in e]))
    return p


def _comparable(snap) -> dict:
    doc = snap.model_dump(mode="json")
    for k in ("created_at", "duration_s"):
        doc.pop(k, None)
    return doc


def test_workers_read_what_one_process_reads(big_log):
    one, err1 = build_snapshot([str(big_log)], jobs=1)
    two, err2 = build_snapshot([str(big_log)], jobs=2)
    three, err3 = build_snapshot([str(big_log)], jobs=3)
    assert err1 == err2 == err3 == []
    assert _comparable(one) == _comparable(two) == _comparable(three)
    hits = {h.id: h for h in two.logs.signatures}
    assert len(hits) > 30 and two.logs.xids and two.logs.nccl and two.logs.nccl.transports
    assert any(h.last_line and h.last_line > 9000 for h in hits.values())  # line numbers run across the chunks


_READER = os.getpid()
_REAL_PARSE_CHUNK = stream.parse_chunk


def _dying_parse_chunk(*args):  # noqa: D401
    """parse_chunk that kills the worker process running it (module level: the pool pickles it by name)."""
    if os.getpid() != _READER:
        os._exit(9)
    return _REAL_PARSE_CHUNK(*args)


def test_a_worker_that_dies_loses_nothing(big_log, monkeypatch):
    """A worker killed mid-chunk (OOM killer, SIGKILL) breaks the pool; its chunk and the rest are parsed in the
    reading process, in order."""
    want, _ = build_snapshot([str(big_log)], jobs=1)
    monkeypatch.setattr(stream, "parse_chunk", _dying_parse_chunk)
    got, errors = build_snapshot([str(big_log)], jobs=2)
    assert errors == [] and _comparable(got) == _comparable(want)


def test_ctrl_c_keeps_what_was_read_and_stops_the_workers(big_log, monkeypatch):
    real = chunk_pool.OrderedPool.submit
    calls = {"n": 0}
    pools = []

    def submit(self, *args):
        calls["n"] += 1
        pools.append(self)
        if calls["n"] == 5:
            self.drain()  # the four chunks before are parsed (deterministic), then Ctrl-C
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(chunk_pool.OrderedPool, "submit", submit)
    other = big_log.parent / "later.log"
    other.write_text("RuntimeError: CUDA error: out of memory\n")
    stopped: list[str] = []
    snap, errors = build_snapshot([str(big_log), str(other)], jobs=2, interrupted=stopped)
    assert len(stopped) == 1 and "interrupted" in stopped[0] and "MB were diagnosed" in stopped[0]
    assert snap is not None and snap.logs.signatures  # the chunks merged before Ctrl-C count
    first = next(i for i in snap.inputs if i.path == str(big_log))
    assert "interrupted" in (first.note or "")
    later = next(i for i in snap.inputs if i.path == str(other))
    assert later.status == "skipped" and "interrupted" in later.reason  # not read, and said so
    assert pools and pools[0]._pool is None  # the workers were stopped


def test_check_reports_what_was_read_on_ctrl_c_and_exits_130(big_log, monkeypatch):
    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    real = chunk_pool.OrderedPool.submit
    calls = {"n": 0}

    def submit(self, *args):
        calls["n"] += 1
        if calls["n"] == 4:
            self.drain()
            raise KeyboardInterrupt
        return real(self, *args)

    monkeypatch.setattr(chunk_pool.OrderedPool, "submit", submit)
    res = CliRunner().invoke(app, ["check", str(big_log), "--json", "-j", "2"])
    assert res.exit_code == 130
    assert '"findings"' in res.stdout


def _no_workers(monkeypatch):
    real = chunk_pool.OrderedPool._executor

    def executor(self):
        pool = real(self)
        assert pool is None, "a worker pool was started"
        return pool

    monkeypatch.setattr(chunk_pool.OrderedPool, "_executor", executor)


def test_jobs_one_and_small_inputs_fork_nothing(tmp_path, monkeypatch):
    _no_workers(monkeypatch)
    small = tmp_path / "err.log"
    small.write_text("RuntimeError: CUDA error: out of memory\n" * 100)
    snap, errors = build_snapshot([str(small)], jobs=4)
    assert not errors and snap.logs.signatures
    monkeypatch.setattr(stream, "WHOLE_BYTES", 1000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 1500)
    snap, errors = build_snapshot([str(small)], jobs=1)
    assert not errors and snap.logs.signatures[0].count == 100
    assert snap.logs.signatures[0].last_line == 100  # line numbers run across the chunks


def test_one_chunk_input_is_parsed_without_workers(tmp_path, monkeypatch):
    """Over WHOLE_BYTES but a single chunk: forking workers for it would only cost time."""
    monkeypatch.setattr(stream, "WHOLE_BYTES", 1000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 1 << 20)
    _no_workers(monkeypatch)
    p = tmp_path / "err.log"
    p.write_text("RuntimeError: CUDA error: out of memory\n" * 100)
    snap, errors = build_snapshot([str(p)], jobs=2)
    assert not errors and snap.logs.signatures[0].count == 100


def test_compressed_and_piped_inputs_are_chunked_too(big_log, tmp_path, monkeypatch):
    """A .gz (or stdin) is not seekable: the reader sends the chunks' bytes; same facts as the plain file."""
    import gzip

    gz = tmp_path / "train.log.gz"
    gz.write_bytes(gzip.compress(big_log.read_bytes()))
    plain, _ = build_snapshot([str(big_log)], jobs=2)
    packed, errors = build_snapshot([str(gz)], jobs=2)
    assert errors == []
    import json

    a = json.dumps(_comparable(plain), sort_keys=True)
    b = json.dumps(_comparable(packed), sort_keys=True).replace(str(gz), str(big_log))
    assert a == b


@pytest.mark.parametrize("value,want", [("3", 3), ("1", 1), ("0", None), ("many", None), ("99", chunk_pool.MAX_JOBS)])
def test_default_jobs_from_the_environment(monkeypatch, value, want):
    monkeypatch.setenv(chunk_pool.JOBS_ENV, value)
    cpus = len(os.sched_getaffinity(0))
    assert chunk_pool.default_jobs() == (want if want is not None else max(1, min(cpus, chunk_pool.MAX_JOBS)))


def test_check_says_when_a_large_log_is_matched_without_re2(big_log, monkeypatch):
    from gpudoctor.pipeline import check as C

    monkeypatch.setattr(S, "engine_name", lambda entries=None: "literal-prefilter")
    res = C.run_check([str(big_log)], jobs=1)
    assert res.hints and "gpudoctor[fast]" in res.hints[0] and str(big_log) in res.hints[0]
    monkeypatch.setattr(S, "engine_name", lambda entries=None: "re2-set")
    assert C.run_check([str(big_log)], jobs=1).hints == []
    small = big_log.parent / "err.log"
    small.write_text("RuntimeError: CUDA error: out of memory\n")
    monkeypatch.setattr(S, "engine_name", lambda entries=None: "literal-prefilter")
    assert C.run_check([str(small)], jobs=1).hints == []  # a small paste is fast either way


def test_large_blocks_get_their_own_mappings_on_glibc():
    """fixed_mmap_threshold sets glibc's threshold (returns True) and is a no-op elsewhere; either way it raises
    nothing, and a second call is harmless."""
    import platform

    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert chunk_pool.fixed_mmap_threshold() is glibc
    assert chunk_pool.fixed_mmap_threshold() is glibc
    blob = bytes(4 * chunk_pool.MMAP_THRESHOLD_BYTES)  # allocating after the change still works
    assert len(blob) == 4 * 2**20
