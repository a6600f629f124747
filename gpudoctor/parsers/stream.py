"""Read check's inputs of any size: plain files, ``.gz`` / ``.xz`` / ``.bz2`` (and ``.zst`` when the optional
``zstandard`` module is installed), and ``-`` for standard input (``nvidia-smi -q | gpudoctor check -``).

An input that fits in one piece (up to ``WHOLE_BYTES`` once decompressed) is parsed whole, as before, so that
structured dumps (nvidia-smi -q, collect_env) keep their sections. A larger one (a multi-rank NCCL_DEBUG=INFO
log, a long dmesg) is parsed in line-aligned chunks of ``CHUNK_BYTES``: each chunk goes through the same
per-file parser and the facts merge (signature hits add up, NCCL facts and Xid events accumulate), so memory
stays flat however large the input is. No size cap.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any, cast

from gpudoctor.facts.load import InputError

WHOLE_BYTES = 4 * 1024 * 1024   # larger inputs are read in chunks (and recognised on samples)
CHUNK_BYTES = 8 * 1024 * 1024
SAMPLE_CHARS = 64 * 1024  # structured formats of a chunk are recognised on its start; log formats on the whole
STDIN = "-"


def _zstd_open(path: str) -> IO[bytes]:
    try:
        import zstandard  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise InputError(f"{path}: .zst input needs the zstandard module (pip install zstandard), "
                         "or decompress it first (zstd -d)") from None
    return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"))


OPENERS: dict[str, Callable[[str], Any]] = {  # each returns a binary file object
    ".gz": lambda p: gzip.open(p, "rb"), ".xz": lambda p: lzma.open(p, "rb"),
    ".lzma": lambda p: lzma.open(p, "rb"), ".bz2": lambda p: bz2.open(p, "rb"), ".zst": _zstd_open,
}


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


def open_binary(path: str) -> IO[bytes]:
    """A binary stream of the input's (decompressed) bytes."""
    if path == STDIN:
        return sys.stdin.buffer
    for suffix, opener in OPENERS.items():
        if path.endswith(suffix):
            return cast(IO[bytes], opener(path))
    return open(path, "rb")


def _decode(raw: bytes, path: str, first: bool) -> str:
    if first:
        if not raw.strip():
            raise InputError(f"{display_name(path)}: empty file")
        if b"\x00" in raw[:8192]:
            raise InputError(f"{display_name(path)}: binary file, not a text dump or log")
    text = raw.decode("utf-8", "replace")
    if first:
        sample = text[:8192]
        bad = sum(1 for c in sample if c == "\ufffd" or (ord(c) < 32 and c not in "\t\n\r\x1b\x0c"))
        if bad > max(8, len(sample) // 20):
            raise InputError(f"{display_name(path)}: binary file, not a text dump or log")
    return text


def iter_chunks(fh: IO[bytes], head: bytes, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """``head`` then the rest of ``fh``, cut after a newline into pieces of about ``size`` bytes."""
    buf = head
    while True:
        more = fh.read(size)
        if not more:
            break
        buf += more
        if len(buf) >= size:
            cut = buf.rfind(b"\n") + 1 or len(buf)
            yield buf[:cut]
            buf = buf[cut:]
    if buf:
        yield buf


ParseFile = Callable[..., "str | None"]


def parse_input(path: str, col: Any, parse_file: ParseFile) -> str | None:
    """Read ``path`` (whole when small, in chunks when large) and hand the text to ``parse_file(path, text, col)``.

    Returns an error message for a bad input, like ``parse_file``; raises nothing.
    """
    name = display_name(path)
    try:
        fh = open_binary(path)
    except OSError as exc:
        return f"{name}: {exc.strerror or exc}"
    except InputError as exc:
        return str(exc)
    try:
        head = fh.read(WHOLE_BYTES + 1)
        if len(head) <= WHOLE_BYTES:
            return parse_file(name, _decode(head, path, True), col)
        return _parse_chunks(name, path, fh, head, col, parse_file)
    except InputError as exc:
        return str(exc)
    except (OSError, EOFError, lzma.LZMAError) as exc:  # a truncated or corrupt archive: what was read counts
        return f"{name}: could not read to the end ({type(exc).__name__}: {exc}); the part read was diagnosed"
    finally:
        if path != STDIN:
            fh.close()


def _parse_chunks(name: str, path: str, fh: IO[bytes], head: bytes, col: Any, parse_file: ParseFile) -> str | None:
    from gpudoctor.parsers import detect as D

    n_inputs = len(col.inputs)
    errors: list[str | None] = []
    carried: list[str] = []  # log formats seen in earlier chunks hold for the rest of the input
    for k, raw in enumerate(iter_chunks(fh, head)):
        text = _decode(raw, path, k == 0)
        kinds = D.detect(text[:SAMPLE_CHARS])
        # log formats anywhere in the chunk, by substring (a full detect() of 8 MiB costs seconds)
        if D.DMESG not in kinds and ("NVRM:" in text or "Xid (" in text):
            kinds.append(D.DMESG)
        if D.NCCL not in kinds and ("NCCL INFO" in text or "NCCL WARN" in text):
            kinds.append(D.NCCL)
        kinds += [c for c in carried if c not in kinds]
        carried += [c for c in kinds if c in (D.NCCL, D.DMESG, D.ERRORS) and c not in carried]
        errors.append(parse_file(name, text, col, kinds))
        col.line_base += raw.count(b"\n")
    col.line_base = 0
    _merge_inputs(col, n_inputs)
    ok = [e for e in errors if e is None]
    return None if ok else next((e for e in errors if e), None)


def _merge_inputs(col: Any, start: int) -> None:
    """One InputFile for a chunked input: kinds and sections united, the first note kept."""
    mine = col.inputs[start:]
    if len(mine) <= 1:
        return
    first = mine[0]
    for other in mine[1:]:
        for k in other.kinds:
            if k not in first.kinds:
                first.kinds.append(k)
        for s in other.sections:
            if s not in first.sections:
                first.sections.append(s)
        if other.note and not first.note:
            first.note = other.note
    del col.inputs[start + 1:]
