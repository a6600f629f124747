"""Read check's inputs of any size: plain files, ``.gz`` / ``.xz`` / ``.bz2`` (and ``.zst`` when the optional
``zstandard`` module is installed), and ``-`` for standard input (``nvidia-smi -q | gpudoctor check -``).

An input that fits in one piece (up to ``WHOLE_BYTES`` once decompressed) is parsed whole, as before, so that
structured dumps (nvidia-smi -q, collect_env) keep their sections. A larger one (a multi-rank NCCL_DEBUG=INFO
log, a long dmesg) is parsed in line-aligned chunks of ``CHUNK_BYTES``: each chunk goes through the same
per-file parser and the facts merge in order (signature hits add up with their line numbers shifted, NCCL facts and
Xid events accumulate: ``Collected.absorb``), so memory stays flat however large the input is. No size cap.

The reading process recognises each chunk's structured formats on its start and hands the chunk to
:func:`parse_chunk` in a worker process (parsers/chunk_pool.py; one per usable CPU, ``-j``): a worker reads a plain
file's chunk itself, by offset; the chunks of a compressed input or of standard input are sent to it. Whatever the
number of workers, the facts are those of reading the chunks one after another (tests/test_chunk_pool.py).
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any, cast

from gpudoctor.facts.load import InputError
from gpudoctor.parsers import chunk_pool

WHOLE_BYTES = 4 * 1024 * 1024   # larger inputs are read in chunks (and recognised on samples)
CHUNK_BYTES = 4 * 1024 * 1024  # 4 MiB: measured faster than 8 (more even work for the workers, less memory)
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


#: compressed streams recognised by their first bytes whatever the name (a .gz saved as .txt, `gzip -c f | check -`)
_MAGIC: tuple[tuple[bytes, Callable[[Any], Any]], ...] = (
    (b"\x1f\x8b", lambda f: gzip.GzipFile(fileobj=f, mode="rb")),
    (b"\xfd7zXZ\x00", lambda f: lzma.LZMAFile(f, "rb")),
    (b"BZh", lambda f: bz2.BZ2File(f, "rb")),
)


def open_binary(path: str) -> IO[bytes]:
    """A binary stream of the input's (decompressed) bytes: by the name's suffix (OPENERS), else by the first bytes
    (gzip, xz, bzip2). Raises InputError for a zip archive (its members are files to name one by one)."""
    if path != STDIN:
        for suffix, opener in OPENERS.items():
            if path.endswith(suffix):
                return cast(IO[bytes], opener(path))
    raw: Any = sys.stdin.buffer if path == STDIN else open(path, "rb")
    if not hasattr(raw, "peek") and hasattr(raw, "readinto"):
        raw = io.BufferedReader(raw)  # a stdin replaced by a plain byte stream (a test runner, an embedding program)
    head = raw.peek(6)[:6] if hasattr(raw, "peek") else b""
    for magic, wrap in _MAGIC:
        if head.startswith(magic):
            return cast(IO[bytes], wrap(raw))
    if head.startswith(b"PK\x03\x04"):
        if path != STDIN:
            raw.close()
        raise InputError(f"{display_name(path)}: a zip archive: extract it and give the folder (`unzip -d dir "
                         f"{path}`, then `gpudoctor check dir`)")
    return cast(IO[bytes], raw)


def is_binary(raw: bytes) -> bool:
    """Whether the first 8 KiB of an input are not text: more than 1 in 20 characters undecodable or control
    characters. NUL bytes are left out first: a log of a node that crashed or was reset holds runs of NULs (the
    file system's preallocated tail, an unwritten page) between readable lines, and its lines are what matters."""
    head = raw[:8192].replace(b"\x00", b"")
    if not head.strip():
        return b"\x00" in raw[:8192]  # nothing but NULs (and blanks) at the start
    text = head.decode("utf-8", "replace")
    bad = sum(1 for c in text if c == "\ufffd" or (ord(c) < 32 and c not in "\t\n\r\x1b\x0c"))
    return bad > max(min(8, len(text) // 4), len(text) // 20)  # a few stray control characters in a long text


_NULS = re.compile("\x00+")


def drop_nuls(text: str) -> str:
    """``text`` with each run of NUL characters made a line break (see :func:`is_binary`)."""
    return _NULS.sub("\n", text) if "\x00" in text else text


def _check_start(raw: bytes, sample: str, path: str) -> None:
    """Raise InputError when the input's first bytes (``sample``: their text) are empty or binary."""
    if not raw.replace(b"\x00", b"").strip():
        raise InputError(f"{display_name(path)}: empty file" if b"\x00" not in raw[:8192]
                         else f"{display_name(path)}: binary file, not a text dump or log")
    if is_binary(raw):
        raise InputError(f"{display_name(path)}: binary file, not a text dump or log")


def _decode(raw: bytes, path: str, first: bool) -> str:
    if first and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 with its byte-order mark (PowerShell 5's `>`)
        return raw.decode("utf-16", "replace")
    text = raw.decode("utf-8", "replace")
    if first:
        _check_start(raw, text, path)
    return drop_nuls(text)


def _sample(raw: bytes) -> str:
    """The first SAMPLE_CHARS characters of the decoded chunk (decoding only the bytes they can take)."""
    return raw[:4 * SAMPLE_CHARS].decode("utf-8", "replace")[:SAMPLE_CHARS]


def iter_chunks(fh: IO[bytes], head: bytes, size: int | None = None,
                cut: list[Exception] | None = None) -> Iterator[bytes]:
    """``head`` then the rest of ``fh``, in pieces cut after the first newline at or past ``size`` bytes
    (CHUNK_BYTES): the same cuts :func:`_spans` makes in a seekable file. A truncated or corrupt archive ends the
    pieces with the whole sections read before the fault, and its error is appended to ``cut`` (raised when None)."""
    size = CHUNK_BYTES if size is None else size
    buf = head
    while True:
        nl = buf.find(b"\n", size)
        while nl < 0:
            more = _read_head(fh, size)
            if more[1] is not None:
                if cut is None:
                    raise more[1]
                cut.append(more[1])
                rest = _whole_sections(buf + more[0])
                if rest:
                    yield rest
                return
            if not more[0]:
                break
            buf += more[0]
            nl = buf.find(b"\n", size)
        if nl < 0:
            if buf:
                yield buf
            return
        yield buf[:nl + 1]
        buf = buf[nl + 1:]


ParseFile = Callable[..., "str | None"]
HEAD_BLOCK = 1 << 16  #: bytes per read of an input's head: a truncated archive keeps every block before the cut


_TOP_LEVEL = re.compile(rb"\n(?=\S)")


def _whole_sections(head: bytes) -> bytes:
    """The part of a cut text that ends with a whole top-level section: up to the start of its last unindented line
    (a `nvidia-smi -q` GPU block cut in its ECC counters is dropped whole, so its GPU is unknown, not a GPU with
    fewer errors; in a log, where every line is top-level, only the cut last line goes). A text of one section keeps
    its whole lines (a one-line error cut after its newline is still that error)."""
    starts = [m.start() for m in _TOP_LEVEL.finditer(head)]
    return head[:starts[-1] + 1] if starts else head[:head.rfind(b"\n") + 1]


def _read_head(fh: Any, n: int) -> tuple[bytes, Exception | None]:
    """Up to ``n`` bytes of ``fh`` and None, or the bytes read before a truncated or corrupt archive stopped the
    decompressor and that error (one large read would lose everything it had decompressed)."""
    parts: list[bytes] = []
    got = 0
    read = getattr(fh, "read1", fh.read)  # read1: what one decompression step gave, not the whole request
    while got < n:
        try:
            b = read(min(HEAD_BLOCK, n - got))
        except (OSError, EOFError, lzma.LZMAError) as exc:
            return b"".join(parts), exc
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts), None


def _salvage(path: str, limit: int) -> bytes:
    """What a truncated gzip / xz / bzip2 file of at most ``limit`` compressed bytes decompresses to before its cut:
    the stream readers raise on the missing end and return nothing of a small file, the raw decompressors return
    every byte they could. b"" for stdin, a larger file, or another format."""
    import zlib

    if path == STDIN:
        return b""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError:
        return b""
    if len(raw) > limit:
        return b""
    makers: dict[bytes, Callable[[], Any]] = {b"\x1f\x8b": lambda: zlib.decompressobj(wbits=31),
                                              b"\xfd7zXZ\x00": lzma.LZMADecompressor, b"BZh": bz2.BZ2Decompressor}
    make = next((m for magic, m in makers.items() if raw.startswith(magic)), None)
    if make is None:
        return b""
    out = []
    dec = make()
    try:
        for i in range(0, len(raw), HEAD_BLOCK):
            out.append(dec.decompress(raw[i:i + HEAD_BLOCK]))
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError):
        pass  # corrupt past here: what came before stands
    return b"".join(out)


def parse_input(path: str, col: Any, parse_file: ParseFile, jobs: int | None = None,
                idle: Callable[[], None] | None = None) -> str | None:
    """Read ``path`` (whole when small, in chunks when large) and hand the text to ``parse_file(path, text, col)``.

    ``jobs``: worker processes for the chunks of a large input (parsers/chunk_pool.py; None: one per usable CPU,
    1: all in this process); ``idle``: work of the caller's, done while the workers parse (see OrderedPool).
    Returns an error message for a bad input, like ``parse_file``; raises nothing. Ctrl-C while a large input is
    read stops reading: what was read is kept and ``col.interrupted`` names where it stopped.
    """
    name = display_name(path)
    try:
        fh = open_binary(path)
    except OSError as exc:
        return f"{name}: {exc.strerror or exc}"
    except InputError as exc:
        return str(exc)
    try:
        head, cut = _read_head(fh, WHOLE_BYTES + 1)
        if cut is not None:  # a small archive cut short: diagnose what decompressed, and say it was cut
            if len(head) < HEAD_BLOCK:  # one read decompressed it all and raised: decompress it step by step
                head = max(head, _salvage(path, WHOLE_BYTES)[:WHOLE_BYTES], key=len)
            head = _whole_sections(head)
            err = parse_file(name, _decode(head, path, True), col) if head.strip() else None
            return err or f"{name}: could not read to the end ({type(cut).__name__}: {cut}); " + (
                "the part read was diagnosed" if head.strip() else "nothing could be read")
        if len(head) <= WHOLE_BYTES:
            return parse_file(name, _decode(head, path, True), col)
        return _parse_chunks(name, path, fh, head, col, parse_file, jobs, idle)
    except InputError as exc:
        return str(exc)
    except (OSError, EOFError, lzma.LZMAError) as exc:  # a truncated or corrupt archive: what was read counts
        return f"{name}: could not read to the end ({type(exc).__name__}: {exc}); the part read was diagnosed"
    finally:
        if path != STDIN:
            fh.close()


def _sample_kinds(sample: str, carried: list[str]) -> list[str]:
    """The formats of a chunk recognised on its start (``sample``), plus the log formats the samples of earlier
    chunks of the same input showed (``carried``, updated)."""
    from gpudoctor.parsers import detect as D
    from gpudoctor.parsers._text import unwrap_json_lines

    inner = unwrap_json_lines(sample) if sample.lstrip().startswith("{") else sample
    kinds = D.detect(inner) if inner is sample else [D.JSON_LINES] + D.detect(inner)
    if not kinds and D.is_service_log(inner):  # a journald / syslog log with no other format at its start
        kinds = [D.SYSLOG]
    kinds += [c for c in carried if c not in kinds]
    carried += [c for c in kinds if c in (D.NCCL, D.DMESG, D.ERRORS, D.JSON_LINES, D.SYSLOG) and c not in carried]
    return kinds


def _log_kinds(raw: bytes, kinds: list[str]) -> list[str]:
    """``kinds`` plus the log formats found anywhere in the chunk, by substring (a full detect() of megabytes costs
    seconds): a kernel log's NVRM lines, NCCL's INFO/WARN lines, a launcher's rank lines."""
    from gpudoctor.parsers import detect as D

    out = list(kinds)
    if D.DMESG not in out and (b"NVRM:" in raw or b"Xid (" in raw):
        out.append(D.DMESG)
    if D.NCCL not in out and (b"NCCL INFO" in raw or b"NCCL WARN" in raw):
        out.append(D.NCCL)
    if D.LAUNCH not in out and (b"GLOBAL_RANK: " in raw or b"Rendezvous complete for workers" in raw):
        out.append(D.LAUNCH)
    return out


def _read_span(path: str, start: int, end: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(start)
        return fh.read(end - start)


def parse_chunk(parse_file: ParseFile, col_type: type, name: str, source: bytes | tuple[str, int, int],
                kinds: list[str]) -> tuple[str | None, Any, int, int]:
    """One chunk of a large input -> (parse_file's error or None, a fresh collector with the chunk's facts, the
    chunk's newline count, its size in bytes). ``source``: the chunk's bytes, or (path, start, end) of a plain file
    to read them from. Runs in a worker process (parsers/chunk_pool.py) or in this one; line numbers of its
    signature hits count from the chunk's start (``_Progress.absorb`` shifts them)."""
    raw = source if isinstance(source, bytes) else _read_span(*source)
    col = col_type()
    with chunk_pool.no_gc():
        err = parse_file(name, drop_nuls(raw.decode("utf-8", "replace")), col, _log_kinds(raw, kinds))
    return err, col, raw.count(b"\n"), len(raw)


def _in_order(kinds: list[str]) -> bool:
    """Whether a chunk must be parsed into the input's own collector, after the chunks before it: a saved report or
    a bug report (their parse reads what earlier chunks left in the collector)."""
    from gpudoctor.parsers import detect as D

    return D.JSON in kinds or D.BUG_REPORT in kinds


class _Progress:
    """What the chunks merged so far gave: lines before the next chunk, bytes diagnosed, parse errors."""

    def __init__(self, col: Any):
        self.col = col
        self.lines = 0
        self.bytes = 0
        self.errors: list[str | None] = []

    def absorb(self, result: tuple[str | None, Any, int, int]) -> None:
        err, part, newlines, size = result
        for h in part.hits:  # the chunk's line numbers count from its own start
            h.first_line = None if h.first_line is None else h.first_line + self.lines
            h.last_line = None if h.last_line is None else h.last_line + self.lines
        self.col.absorb(part)
        self.errors.append(err)
        self.lines += newlines
        self.bytes += size

    def parse_here(self, name: str, raw: bytes, kinds: list[str], parse_file: ParseFile) -> None:
        """An in-order chunk, parsed into the collector itself (after every chunk before it was merged)."""
        self.col.line_base = self.lines
        with chunk_pool.no_gc():
            self.errors.append(parse_file(name, drop_nuls(raw.decode("utf-8", "replace")), self.col,
                                          _log_kinds(raw, kinds)))
        self.col.line_base = 0
        self.lines += raw.count(b"\n")
        self.bytes += len(raw)


def _spans(fh: IO[bytes], size: int | None = None) -> Iterator[tuple[int, int, bytes]]:
    """(start, end, first bytes) of the line-aligned pieces of about ``size`` bytes (CHUNK_BYTES) of a seekable file;
    only the first bytes of each piece (its sample) and the bytes around each cut are read here."""
    size = CHUNK_BYTES if size is None else size
    start = 0
    while True:
        fh.seek(start)
        head = fh.read(4 * SAMPLE_CHARS)
        if not head:
            return
        # (the same cuts as iter_chunks makes in a stream: a signature's count stops at MAX_COUNT per piece, so
        # other cuts could give other ranks / last lines for a message repeated thousands of times)
        cut = start + size
        fh.seek(cut)
        while True:  # the cut goes after the first newline at or past start + size
            window = fh.read(64 * 1024)
            if not window:  # end of file
                cut = min(cut, fh.seek(0, 2))
                break
            nl = window.find(b"\n")
            if nl >= 0:
                cut += nl + 1
                break
            cut += len(window)
        yield start, cut, head
        start = cut


def _parse_chunks(name: str, path: str, fh: IO[bytes], head: bytes, col: Any, parse_file: ParseFile,
                  jobs: int | None = None, idle: Callable[[], None] | None = None) -> str | None:
    from gpudoctor.parsers.signatures import prepare

    n_inputs = len(col.inputs)
    carried: list[str] = []  # log formats seen in earlier chunks hold for the rest of the input
    jobs = chunk_pool.default_jobs() if jobs is None else jobs
    chunk_pool.fixed_mmap_threshold()
    done = _Progress(col)
    pool = chunk_pool.OrderedPool(jobs, parse_chunk, done.absorb, before_fork=lambda: prepare(first_sample),
                                  idle=idle)
    seekable = path != STDIN and isinstance(fh, io.BufferedReader)  # a plain file, not a decompressing stream
    cut: list[Exception] = []  # a truncated archive: the error that ended it (what came before is diagnosed)
    pieces: Iterator[tuple[bytes | tuple[str, int, int], bytes]] = (
        ((path, s, e), h) for s, e, h in _spans(fh)) if seekable else (
        (raw, raw) for raw in iter_chunks(fh, head, cut=cut))
    in_order = False
    first_sample = ""
    try:
        nxt = next(pieces, None)
        k = 0
        while nxt is not None:
            (source, start_bytes), nxt = nxt, next(pieces, None)  # one ahead: one chunk alone is parsed here
            sample = _sample(start_bytes)
            if k == 0:
                _check_start(start_bytes, sample, path)
                first_sample = sample
            kinds = _sample_kinds(sample, carried)
            in_order = in_order or _in_order(kinds)  # a bug report's later chunks continue its sections: in order
            if in_order or (k == 0 and nxt is None):
                pool.drain()
                raw = source if isinstance(source, bytes) else _read_span(*source)
                done.parse_here(name, raw, kinds, parse_file)
            else:
                pool.submit(parse_file, type(col), name, source, kinds)
            k += 1
        pool.drain()
    except KeyboardInterrupt:  # Ctrl-C: keep what the chunks parsed so far found, stop reading
        pool.merge_done()
        col.interrupted = f"{name}: interrupted; its first {done.bytes / 1e6:.0f} MB were diagnosed"
    finally:
        pool.close()
    _merge_inputs(col, n_inputs)
    if cut:
        return f"{name}: could not read to the end ({type(cut[0]).__name__}: {cut[0]}); the part read was diagnosed"
    ok = [e for e in done.errors if e is None]
    return None if ok else next((e for e in done.errors if e), None)


def _merge_inputs(col: Any, start: int) -> None:
    """One InputFile for a chunked input: kinds and sections united; of the chunks' notes, the first that names a
    format no chunk read (a log format carried on from an earlier chunk finds none of its lines in a later one:
    that is no failure when another chunk read it)."""
    mine = col.inputs[start:]
    if len(mine) <= 1:
        return
    read = {k for i in mine for k in i.kinds if not _failed(i.note, k)}
    first = mine[0]
    notes = [[p for p in i.note.split("; ") if not any(p.startswith(f"{k}: ") for k in read)]
             for i in mine if i.note]
    note = next(("; ".join(n) for n in notes if n), None)
    for other in mine[1:]:
        for k in other.kinds:
            if k not in first.kinds:
                first.kinds.append(k)
        for s in other.sections:
            if s not in first.sections:
                first.sections.append(s)
    first.note = note
    del col.inputs[start + 1:]


def _failed(note: str | None, kind: str) -> bool:
    """Whether an input's note says format ``kind`` could not be read (offline_formats: "<kind>: <why>")."""
    return bool(note) and f"{kind}: " in note  # type: ignore[operator]
