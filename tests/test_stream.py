"""check reads inputs of any size, compressed, and from standard input (gpudoctor/parsers/stream.py)."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sys

import pytest

from gpudoctor.parsers import stream
from gpudoctor.parsers.offline import build_snapshot

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
       "79.10 GiB of which 3.06 MiB is free.\n")


@pytest.mark.parametrize("suffix,opener", [(".gz", gzip.open), (".xz", lzma.open), (".bz2", bz2.open)])
def test_compressed_inputs(tmp_path, suffix, opener):
    p = tmp_path / f"err.log{suffix}"
    with opener(p, "wb") as fh:
        fh.write(OOM.encode())
    snap, errors = build_snapshot([str(p)])
    assert not errors and "SIG012" in {h.id for h in snap.logs.signatures}


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(OOM.encode())))
    snap, errors = build_snapshot(["-"])
    assert not errors and snap.inputs[0].path == "<stdin>"
    assert "SIG012" in {h.id for h in snap.logs.signatures}


def test_chunked_counts_add_up_and_one_input_entry(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "WHOLE_BYTES", 2000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 1500)
    p = tmp_path / "ranks.log"
    p.write_text((OOM + "step 1 loss 2.0\n" * 20) * 30)
    snap, errors = build_snapshot([str(p)])
    assert not errors and len(snap.inputs) == 1
    hit = next(h for h in snap.logs.signatures if h.id == "SIG012")
    assert hit.count == 30


def test_truncated_archive_is_diagnosed_as_far_as_read(tmp_path):
    p = tmp_path / "cut.log.gz"
    data = gzip.compress((OOM * 2000).encode())
    p.write_bytes(data[: len(data) // 2])
    snap, errors = build_snapshot([str(p)])
    assert errors and "could not read to the end" in errors[0]


def test_collect_env_with_full_width_colons(tmp_path):
    """collect_env pasted from a CJK locale (full-width colons) is still recognised and read."""
    p = tmp_path / "env.txt"
    p.write_text("PyTorch version\uff1a 2.4.1+cu121\nIs CUDA available\uff1a True\n"
                 "CUDA used to build PyTorch\uff1a 12.1\nNvidia driver version\uff1a 535.104.05\n")
    snap, errors = build_snapshot([str(p)])
    assert not errors and snap.torch is not None and snap.torch.version == "2.4.1+cu121"
    assert snap.torch.cuda == "12.1"


def test_a_log_format_carried_into_later_chunks_is_no_failure_there(tmp_path, monkeypatch):
    """A large log whose NCCL banner is in its first chunk only: the later chunks, told it is an NCCL log, find no
    NCCL line, which is no reason for a note (LOG000) when the first chunk read it."""
    from gpudoctor.parsers import stream as S
    from gpudoctor.parsers.offline import build_snapshot

    monkeypatch.setattr(S, "WHOLE_BYTES", 4000)
    monkeypatch.setattr(S, "CHUNK_BYTES", 3000)
    p = tmp_path / "train.log"
    p.write_text("NCCL version 2.21.5+cuda12.4\n" + "".join(f"step {i} loss 0.5 lr 3e-4\n" for i in range(2000)))
    snap, errors = build_snapshot([str(p)], jobs=1)
    assert errors == [] and snap.inputs[0].note is None


@pytest.mark.parametrize("suffix, compress, cut", [(".gz", gzip.compress, 12), (".xz", lzma.compress, 12),
                                                   (".bz2", bz2.compress, 10)])
def test_a_small_archive_cut_short_keeps_its_readable_lines(tmp_path, suffix, compress, cut):
    """One read of a small truncated archive raises before it returns anything: the part before the cut is
    decompressed step by step, and a one-line error is still that error (bzip2 decodes whole 900 kB blocks only:
    its cut here is the end-of-stream marker)."""
    line = "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    data = compress((line * 3).encode())
    p = tmp_path / f"cut.log{suffix}"
    p.write_bytes(data[: len(data) - cut])
    snap, errors = build_snapshot([str(p)])
    assert errors and "could not read to the end" in errors[0] and "the part read was diagnosed" in errors[0]
    assert any(h.id == "SIG023" for h in snap.logs.signatures)


def test_a_large_archive_cut_short_diagnoses_its_chunks_and_lists_the_input_once(tmp_path, monkeypatch):
    """Past WHOLE_BYTES an archive is read in chunks; a cut in a later chunk keeps every chunk before it: the input
    is listed once, as read, with the cut as its note, and the run still exits 2 (errors)."""
    monkeypatch.setattr(stream, "WHOLE_BYTES", 4000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 3000)
    text = "".join(f"step {i} loss 0.5\n" for i in range(800))
    text += "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    text += "".join(f"step {i} loss 0.5\n" for i in range(800, 3000))
    data = gzip.compress(text.encode())
    p = tmp_path / "big.log.gz"
    p.write_bytes(data[: int(len(data) * 0.8)])
    snap, errors = build_snapshot([str(p)], jobs=1)
    assert len(errors) == 1 and "the part read was diagnosed" in errors[0]
    assert [(i.status, "could not read to the end" in (i.note or "")) for i in snap.inputs] == [("read", True)]
    assert any(h.id == "SIG023" for h in snap.logs.signatures)
