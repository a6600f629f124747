"""Build a Snapshot from saved files (``gpudoctor check PATH...``): text dumps, logs, a saved JSON report.

Each file is read (size, binary and encoding checks), its formats are recognised by content
(:mod:`gpudoctor.parsers.detect`), every recognised format is parsed, and the facts are merged into
one Snapshot. A section built from text names its files in ``source``, and
``Snapshot.known_fields`` lists the fields the text gave, so rules whose facts are absent say "not
assessed" instead of passing. A bad file becomes a one-line error naming it; the others still count.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from gpudoctor import __version__
from gpudoctor.facts.load import InputError, parse_document
from gpudoctor.facts.model import FirstException, InputFile, LogFacts, NcclLogFacts, Snapshot
from gpudoctor.parsers import detect as D
from gpudoctor.parsers._text import clean, clip, strip_line_prefixes, unquote, unwrap_json_lines, unwrap_notebook
from gpudoctor.parsers.offline_merge import (  # noqa: F401 (re-exported)
    _attach,
    _attach_processes,
    _merge_model,
    _merge_nccl,
    _merge_nvml,
    _scrub_logs,
)
from gpudoctor.parsers.smi_common import NO_DRIVER

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_FILES = 2000
UNEXPLAINED_PER_FILE = 10  # error lines no signature explains, kept per input (the first ones)
#: formats that hold settings, not the output of a run: a Markdown paste made only of them and the writer's words
#: has its quoted messages read as leads (a job script, then "all ranks but 0 fail with `invalid device ordinal`")
SETTING_KINDS = {D.COMMAND, D.ENV, D.PATH_VALUE, D.PACKAGES, D.K8S_ENV}
#: (short listings pasted beside an error: its lines are still searched)
LOG_KINDS = {D.ERRORS, D.DMESG, D.NCCL, D.LAUNCH, D.NCCL_TESTS, D.COMMAND, D.ENV, D.PATH_VALUE, D.DF, D.P2P,
             D.SMI_L, D.PACKAGES, D.MEMINFO, D.K8S_ENV, D.SYSLOG}
TEXT_SECTIONS = ("host", "cpu", "memory", "nvml", "torch", "env")


@dataclass
class Fragment:
    """Facts one file gave for one Snapshot section."""

    section: str
    value: Any
    path: str
    complete: bool = True  # False: only some of the section's items were seen (env from NCCL 'set by environment')


@dataclass
class Collected:
    fragments: list[Fragment] = field(default_factory=list)
    inputs: list[InputFile] = field(default_factory=list)
    hits: list = field(default_factory=list)
    xids: list = field(default_factory=list)
    kernel: list[str] = field(default_factory=list)
    nccl: list[NcclLogFacts] = field(default_factory=list)
    unexplained: list[tuple[str, str]] = field(default_factory=list)  # (path, line), UNEXPLAINED_PER_FILE per path
    commands: list[str] = field(default_factory=list)
    peer: dict[str, bool] = field(default_factory=dict)
    ranks: list = field(default_factory=list)  # RankAnnouncement, in input order
    nccl_tests: list = field(default_factory=list)  # NcclTestsRun, in input order
    timeouts: list = field(default_factory=list)  # CollectiveTimeout, in input order
    rendezvous: list = field(default_factory=list)  # RendezvousJoin, in input order
    exceptions: list = field(default_factory=list)  # FirstException, one per input (the first chunk that has one)
    lines: int = 0
    line_base: int = 0  # lines of the current input before the chunk being parsed (parsers/stream.py)
    base: Snapshot | None = None
    extra_sections: list[tuple[str, Any, str]] = field(default_factory=list)
    topo_texts: list[tuple[str, str]] = field(default_factory=list)   # (path, nvidia-smi topo -m text)
    ib_ports: list[tuple[str, Any]] = field(default_factory=list)  # (path, IbPort) from ibstat / ibv_devinfo
    lspci_texts: list[tuple[str, str]] = field(default_factory=list)  # (path, lspci -vvv text)
    apps: list[tuple[str, str | None, str | None, Any]] = field(default_factory=list)  # (path, uuid, bus, GpuProcess)
    bundle_titles: dict[str, str] = field(default_factory=dict)  # bug report path -> title of its last section read
    interrupted: str | None = None  # Ctrl-C while reading a large input: which, and how much of it was diagnosed

    def add_unexplained(self, path: str, lines: Iterable[str]) -> None:
        """Keep the error lines no signature explains: the first UNEXPLAINED_PER_FILE distinct ones of each input
        (a line already kept for any input is not kept again), as one reading of the whole input keeps them."""
        kept = {line for _, line in self.unexplained}
        room = UNEXPLAINED_PER_FILE - sum(1 for p, _ in self.unexplained if p == path)
        for line in lines:
            if room <= 0:
                return
            if line not in kept:
                self.unexplained.append((path, line))
                kept.add(line)
                room -= 1

    def absorb(self, part: Collected) -> None:
        """Add the facts ``part`` collected from the next chunk of the same input (parsers/chunk_pool.py): the
        result is what parsing that chunk into this collector would have left."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(part, f.name)
            if f.name == "unexplained":
                for path, line in theirs:
                    self.add_unexplained(path, [line])
            elif isinstance(mine, list):
                mine += theirs
            elif isinstance(mine, dict):
                mine.update(theirs)
            elif f.name == "lines":
                self.lines += theirs
            elif f.name == "base" and theirs is not None:  # pragma: no cover - reports are parsed in order
                raise ValueError("a saved report inside a chunk parsed out of order")


def expand_paths(paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """Files named, plus the files under named folders (recursively, sorted, hidden ones skipped).

    Returns (files, errors); an error is a one-line message naming the path.
    """
    files: list[str] = []
    errors: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            unreadable: list[str] = []

            def walk_error(exc: OSError, _bad: list[str] = unreadable, _p: str = p) -> None:
                # os.walk skips a folder it cannot list; say so instead of "holds no files"
                errors.append(f"{exc.filename or _p}: cannot read the folder: {exc.strerror or exc}")
                _bad.append(str(exc.filename or _p))

            for root, dirs, names in os.walk(p, onerror=walk_error):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [os.path.join(root, n) for n in sorted(names) if not n.startswith(".")]
            if not found and not unreadable:
                errors.append(f"{p}: folder holds no files")
            files += found
        elif os.path.exists(p) or p == "-":  # "-": standard input (parsers/stream.py)
            files.append(p)
        else:
            errors.append(f"{p}: no such file or folder")
    seen: set[str] = set()  # one file named twice (`a.log ./a.log`, or also inside a named folder) is read once
    unique = []
    for f in files:
        key = f if f == "-" else os.path.realpath(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    files = unique
    if len(files) > MAX_FILES:
        errors.append(f"(the inputs): {len(files)} files given; only the first {MAX_FILES} (in name order) are read: "
                      "pass fewer files or a narrower folder")
        files = files[:MAX_FILES]
    return files, errors


def read_text(path: str) -> str:
    """The file as text. Raises InputError (one line naming the file) when it is unreadable, empty,
    larger than 32 MiB, or binary."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB; give the relevant part of the output")
    if not raw.strip():
        raise InputError(f"{path}: empty file")
    from gpudoctor.parsers import stream

    if stream.is_binary(raw):
        raise InputError(f"{path}: binary file, not a text dump or log")
    return stream.drop_nuls(raw.decode("utf-8", "replace"))


ANOTHER_REPORT = "another saved gpudoctor report"
#: why each of gpudoctor's own outputs other than a saved report is not an input (parsers/detect.py OWN_OUTPUTS)
_OWN_OUTPUT_REASONS = {
    D.GD_TEXT: "a gpudoctor text report, not a saved one: `check` reads the JSON report "
               "(`gpudoctor scan --save FILE` or `--json > FILE`), not the text, whose lines quote the signatures it "
               "looked for",
    D.GD_CLUSTER: "a cluster report (from `gpudoctor cluster`); `check` reads scan reports and text dumps -- "
                  "pass it the per-node snapshot instead",
    D.GD_VERSIONCHECK: "output of `gpudoctor cuda-version-check`, not a host dump: nothing to diagnose",
    D.GD_STREAM: "a gpudoctor probe stream (JSON lines, as the NVML probe writes them), not a report: "
                 "`check` reads the saved JSON report (`gpudoctor scan --save FILE`)",
    D.GD_FORMAT: "a gpudoctor report in --format junit/prometheus/html/github, `gpudoctor lint` output, or "
                 "gpudoctor's rule documentation (`explain`, `rules`, docs/rules), which quotes the messages it looks "
                 "for: `check` reads the JSON report (`gpudoctor scan --save FILE`) and logs",
    D.OTHER_JSON: "JSON that is not a gpudoctor report or snapshot (no schema_version)",
    D.CONFIG: "a configuration file (YAML / TOML / INI): the messages in its values and comments are settings, "
              "not errors that happened; pass the log of the run instead",
    D.PY_SOURCE: "Python source code: the messages in it are strings the program may print, not errors that "
                 "happened; pass the log of the run (its output) instead",
    D.CODE_TABLE: "a table of error codes and their messages (such as every cudaError_t with cudaGetErrorString): "
                  "a reference listing names every error, so it says nothing about what failed; pass the log of the "
                  "run instead",
}
#: a named pipe, socket or device found in a folder: never opened (a pipe without a writer blocks the open); one
#: named on the command line is read (`check <(kubectl logs ...)` passes a pipe)
NOT_REGULAR = ": not a regular file (a named pipe, socket or device file), not opened"
#: a paste with no log in it is read for the messages its prose quotes (what the writer saw) when they name at most
#: this many signatures; more is a list of messages (notes, an FAQ), not a report of one failure
MAX_QUOTED = 2
#: a file in a folder whose bytes another input already had (a copy, log.1 beside log): skipped, named
SAME_CONTENT = ": the same content as "
#: a Markdown document whose text is all the writer's words (parsers/prose.py): notes, a wiki page, documentation
MARKDOWN_NOTES = (": Markdown notes or documentation with no log in them (messages quoted in prose, lists and "
                  "tables are the writer's words, not output): paste the log itself, or put it in a ``` block")
#: reasons a file found inside a named folder is skipped (with a note) instead of being an input error
SKIP_REASONS = (": unknown format", ": empty file", ": binary file", ANOTHER_REPORT, NOT_REGULAR,
                MARKDOWN_NOTES, SAME_CONTENT) + tuple(
    _OWN_OUTPUT_REASONS.values()
)


#: a line a terminal overwrote: a progress spinner's frames, each ended by a carriage return and an erase-line code
_ERASED = re.compile(r"[^\n]*\r(?=\x1b\[[02]?K)")


def _parse_file(path: str, text: str, col: Collected, kinds: list[str] | None = None,
                in_bundle: bool = False) -> str | None:
    """Parse one file into ``col``; returns an error message for a bad input (None when fine).

    ``kinds``: the formats, when the caller already recognised them (chunks of a large input, parsers/stream.py).
    ``in_bundle``: the text is one section of an nvidia-bug-report.log (parsers/bug_report.py).
    """
    from gpudoctor.parsers import launch_ranks
    from gpudoctor.parsers.code_table import mask_code_tables
    from gpudoctor.parsers.offline_formats import FileParse, parse_formats
    from gpudoctor.parsers.prose import log_view
    from gpudoctor.parsers.signatures import first_unexplained_exception, match_signatures, unexplained_error_lines

    whole = kinds is None  # a file read whole, not one chunk of a large input
    markdown = False  # a Markdown document (parsers/prose.py)
    written = text
    if kinds is None:
        if "\x1b" in text:  # a coloured capture (FORCE_COLOR, `script`): formats are recognised on the plain text
            text = clean(_ERASED.sub("", text))
        text = unquote(text)  # a paste quoted from an e-mail or a GitHub reply ("> " on every line)
        text = unwrap_notebook(text)  # a Jupyter notebook: its cells' outputs
        text = unwrap_json_lines(text)  # docker / Kubernetes / structured-logger JSON lines: their log text
        service_log = D.is_service_log(text)  # (journald's prefix goes next: known before it does)
        text = strip_line_prefixes(text)  # kubectl / CRI / journald / srun --label / compose line prefixes
        viewed = log_view(text, _not_output, matched=_matched_lines(text))  # the writer's words are not the log
        markdown = viewed is not text
        written = text  # the paste with the writer's words (read when they are all there is)
        whole_doc = D.detect(text) if markdown else []
        if D.GD_FORMAT in whole_doc:  # gpudoctor's rule documentation (explain, docs/rules) is Markdown itself
            kinds = whole_doc
        else:
            text = viewed
            kinds = D.detect(text)
        if service_log and not kinds:
            kinds = [D.SYSLOG]
    else:
        if D.JSON_LINES in kinds:  # a chunk of a large JSON-lines log (parsers/stream.py)
            text = unwrap_json_lines(text)
            kinds = [k for k in kinds if k != D.JSON_LINES]
        text = strip_line_prefixes(text)
    info = InputFile(path=path, kinds=list(kinds))
    own = next((k for k in kinds if k in D.NOT_INPUTS), None)
    if own is not None:  # explained, never parsed and never searched for error signatures
        return f"{path}: {_OWN_OUTPUT_REASONS[own]}"
    if D.JSON in kinds:
        if col.base is not None:
            used = next((i.path for i in col.inputs if D.JSON in i.kinds), "another file")
            return f"{path}: {ANOTHER_REPORT} ({used} is used); `check` reads one report (plus any text dumps) per host"
        try:
            col.base = parse_document(text, path)
        except InputError as exc:
            return str(exc)
        info.sections = [n for n in TEXT_SECTIONS + ("storage", "logs") if getattr(col.base, n, None) is not None]
        col.inputs.append(info)
        return None
    if not in_bundle and (D.BUG_REPORT in kinds or path in col.bundle_titles):  # later chunks of a large one too
        from gpudoctor.parsers.bug_report import parse_bug_report

        return parse_bug_report(path, text, col, _parse_file)
    fp = FileParse(path, info, col)
    parse_formats(fp, text, kinds)
    failures, parsed = fp.failures, fp.parsed
    sig_text = text if fp.sig_text is None else fp.sig_text
    if whole:  # a table of error codes in the notes above a log names every error; none of them happened
        sig_text = mask_code_tables(sig_text)
    spans: list[tuple[int, int]] = []
    errorish: list[tuple[int, int]] = []
    hits = match_signatures(sig_text, file=path, spans=spans, line_base=col.line_base, errorish=errorish,
                            comments=D.NCCL_TESTS in kinds)
    col.hits += hits
    if launch_ranks.TIMEOUT_LITERAL in sig_text:
        col.timeouts += launch_ranks.parse_collective_timeouts(sig_text)
    col.lines += sig_text.count("\n") + (not sig_text.endswith("\n"))
    # not inside structured dumps
    if {D.ERRORS, D.DMESG, D.NCCL, D.NCCL_TESTS} & set(kinds) and set(kinds) <= LOG_KINDS:
        if D.DMESG in kinds:  # an Xid line is explained by the Xid catalogue (LOG001), not left "unexplained"
            spans += _xid_line_spans(sig_text)
        col.add_unexplained(path, unexplained_error_lines(sig_text, spans, UNEXPLAINED_PER_FILE, errorish))
        if not any(e.file == path for e in col.exceptions):
            first = first_unexplained_exception(sig_text, spans)
            if first is not None:
                col.exceptions.append(_first_exception(path, sig_text, first, col.line_base))
    if hits and "logs" not in info.sections:
        info.sections.append("logs")
    settings_only = set(kinds) <= SETTING_KINDS  # a job script or an env listing in the notes: no output of a run
    if settings_only and not hits and markdown:
        quoted = match_signatures(log_view(written, _not_output, prose=False), file=path, line_base=col.line_base)
        if (not quoted or len(quoted) > MAX_QUOTED) and not kinds:
            return f"{path}{MARKDOWN_NOTES}"  # (notes or an FAQ list many messages; a report quotes what it saw)
        if quoted and len(quoted) <= MAX_QUOTED:
            for h in quoted:  # what the person says they saw: read, at most a warning (rules/logs.py)
                h.from_prose = True
            col.hits += quoted
            hits = quoted
            info.sections.append("logs")
    if not kinds and not hits:
        return (
            f"{path}: unknown format (not a collect_env, nvidia-smi (table, -q, -L, topo -m, nvlink -s, --query-gpu or "
            f"--query-compute-apps CSV with its header line), lspci, lscpu, df, ulimit, /proc/meminfo, "
            f"/proc/driver/nvidia/version, dmesg, NCCL log, env dump, nvidia-bug-report.log, error text or gpudoctor "
            f"report)"
        )
    structured = [k for k in kinds if k != D.ERRORS]
    if structured and not parsed and not hits and D.ERRORS not in kinds and info.note is None:
        return f"{path}: recognised as {', '.join(structured)} but nothing could be read ({failures[0]})"
    if failures and not info.note:
        info.note = clip("; ".join(failures), 300)
    col.inputs.append(info)
    return None


def _first_exception(path: str, text: str, first: tuple[int, str], line_base: int) -> FirstException:
    """A FirstException of ``path`` from (offset in the cleaned text, line); line numbers as the hits count them."""
    from gpudoctor.parsers._text import clean
    from gpudoctor.parsers.hit_origin import origin

    offset, line = first
    t = clean(text)
    end = t.find("\n", offset)
    return FirstException(file=path, line=line_base + t.count("\n", 0, offset) + 1, text=line,
                          rank=origin(t[offset:end if end >= 0 else len(t)])[0])


def _matched_lines(text: str) -> frozenset[int]:
    """Indexes of the lines of ``text`` a signature reads, for a Markdown or conversation paste (parsers/prose.py
    keeps them unless they are surely the writer's); empty for other texts, or when cleaning changed the lines."""
    from gpudoctor.parsers.prose import is_conversation, is_markdown
    from gpudoctor.parsers.signatures import match_signatures

    if len(text) > 1 << 21 or not (is_markdown(text) or is_conversation(text)):
        return frozenset()
    t = clean(text)
    if t.count("\n") != text.count("\n"):
        return frozenset()
    spans: list[tuple[int, int]] = []
    match_signatures(t, spans=spans, errorish=[])
    lines = t.split("\n")
    # nvidia-smi's whole-output messages ("No devices were found", "Failed to initialize NVML: ...") on a line of
    # their own: output, though no signature reads them (nvidia-smi's parser does)
    smi = {i for i, x in enumerate(lines) if NO_DRIVER.fullmatch(x.strip())}
    return frozenset({t.count("\n", 0, a) for a, _ in spans} | smi)


def _same_content(path: str, seen: dict[tuple[int, bytes], list[list]]) -> str | None:
    """The file read before ``path`` with the same content, found in a folder: a rotated copy, a .bak, the .gz / .xz
    / .bz2 of a log beside it. Content is keyed by the digest of its (decompressed) first MiB; files that share a key
    are compared by the digest of their whole content (two re-runs of one job can differ only in their last lines).
    None when it is new (it is then remembered in ``seen``) or cannot be read."""
    key = _content_key(path)
    if key is None:
        return None
    mine: list = [path, None]
    for other in seen.get(key, []):
        for entry in (other, mine):
            if entry[1] is None:
                entry[1] = _full_digest(entry[0])
        if mine[1] is not None and mine[1] == other[1]:
            return other[0]
    seen.setdefault(key, []).append(mine)
    return None


def _full_digest(path: str) -> bytes | None:
    """SHA-1 of the whole (decompressed) content of ``path``; None when it cannot be read to the end."""
    import hashlib
    import lzma

    from gpudoctor.parsers import stream

    h = hashlib.sha1()
    try:
        with stream.open_binary(path) as data:
            for block in iter(lambda: data.read(1 << 20), b""):
                h.update(block)
    except (OSError, EOFError, ValueError, InputError, lzma.LZMAError):
        return None
    return h.digest()


def _content_key(path: str) -> tuple[int, bytes] | None:
    """(size, SHA-1 of the first MiB) of the file's content, decompressed when it is compressed; the size is that of
    a whole text under 1 MiB, or -1 (unknown without reading it all: :func:`_same_content` then compares whole
    digests); None when the file cannot be read."""
    import hashlib
    import lzma

    from gpudoctor.parsers import stream

    try:
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            return None
        with stream.open_binary(path) as data:
            head = data.read(1 << 20)
    except (OSError, EOFError, ValueError, InputError, lzma.LZMAError):
        return None
    return (len(head) if len(head) < 1 << 20 else -1, hashlib.sha1(head).digest())


def _not_output(block: str) -> bool:
    """Whether a fenced block of a Markdown paste is one of gpudoctor's own outputs or another non-input (a code
    table, source code): blanked from the paste (parsers/prose.py)."""
    return any(k in D.NOT_INPUTS for k in D.detect(block))


def _xid_line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) in the cleaned ``text`` of the kernel-log lines the Xid parser reads (parsers/dmesg.py)."""
    from gpudoctor.parsers import dmesg
    from gpudoctor.parsers._text import clean

    t = clean(text)
    out = []
    pos = t.find("Xid")
    while pos >= 0:
        start = t.rfind("\n", 0, pos) + 1
        end = t.find("\n", pos)
        end = len(t) if end < 0 else end
        if dmesg.is_xid_line(t[start:end]):
            out.append((start, end))
        pos = t.find("Xid", end)
    return out


SKIPPED = "skipped: "


def _skippable(err: str) -> bool:
    return any(r in err for r in SKIP_REASONS) or err.endswith("empty")


def unread_inputs(errors: list[str]) -> list[InputFile]:
    """The inputs named by ``errors`` (one-line ``path: reason`` messages, :data:`SKIPPED` first for a file skipped
    in a folder) as report entries: status "skipped" or "rejected" with the reason."""
    out = []
    for err in errors:
        skipped = err.startswith(SKIPPED)
        path, _, reason = err[len(SKIPPED):].partition(": ") if skipped else err.partition(": ")
        out.append(InputFile(path=path, status="skipped" if skipped else "rejected", reason=reason or None))
    return out


def empty_snapshot(errors: list[str]) -> Snapshot:
    """The snapshot of a check none of whose inputs could be used: only the inputs, each with why (so `check --json`
    still prints a report a script can read, with exit code 2)."""
    return Snapshot(gpudoctor_version=__version__, inputs=unread_inputs(errors),
                    created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))


def build_snapshot(paths: Iterable[str], jobs: int | None = None, interrupted: list[str] | None = None,
                   idle: Callable[[], None] | None = None) -> tuple[Snapshot | None, list[str]]:
    """Read, recognise and parse ``paths`` (files or folders) into one Snapshot.

    Returns (snapshot, errors): snapshot is None when no input could be used; errors are one-line
    messages naming each bad file (unknown format, binary, empty, too large, newer schema, ...).
    ``jobs``: worker processes for large inputs (parsers/stream.py); ``idle``: the caller's own work, done while
    they parse (once per large input). ``interrupted`` (out): receives one line when Ctrl-C stopped the reading;
    the snapshot then holds what was read before it, and later files are not read.
    """
    t0 = time.perf_counter()
    files, errors = expand_paths(paths)
    named = {os.path.abspath(p) for p in paths if not os.path.isdir(p)}
    col = Collected()
    # every input not read, with its status and reason: the report lists them next to the ones read (item 7)
    unread = unread_inputs(errors)
    contents: dict[tuple[int, bytes], list[list]] = {}  # (small size or -1, first MiB's digest) -> [path, digest]s
    for n, path in enumerate(files):
        from gpudoctor.parsers import stream  # any size, compressed, stdin (issue 14)

        err: str | None
        twin = _same_content(path, contents) if path != "-" and os.path.abspath(path) not in named else None
        if path != "-" and os.path.abspath(path) not in named and os.path.exists(path) and not os.path.isfile(path):
            err = f"{path}{NOT_REGULAR}"  # opening a named pipe in a folder would wait for a writer forever
        elif twin is not None:
            err = f"{path}{SAME_CONTENT}{twin} (read once)"  # log.1 next to log, a .bak: not counted twice
        else:
            err = stream.parse_input(path, col, _parse_file, jobs, idle)
        if err:
            # a file found inside a named folder that is simply not a format gpudoctor reads (notes, an
            # empty capture) is skipped with a note; a file named on the command line must be readable
            reason = err[len(path) + 2:] if err.startswith(path + ": ") else err
            read = next((i for i in col.inputs if i.path == stream.display_name(path) and i.status == "read"), None)
            if read is not None:  # read in part (an archive cut short): listed once, as read, with why (exit 2)
                read.note = "; ".join(x for x in (read.note, reason) if x)
                errors.append(err)
            elif os.path.abspath(path) not in named and _skippable(err):
                errors.append(SKIPPED + err)
                unread.append(InputFile(path=path, status="skipped", reason=reason))
            else:
                errors.append(err)
                unread.append(InputFile(path=path, status="rejected", reason=reason))
        if col.interrupted:
            if interrupted is not None:
                interrupted.append(col.interrupted)
            for inp in col.inputs:
                if inp.path == stream.display_name(path):
                    inp.note = col.interrupted.split(": ", 1)[1]
            why = "not read: check was interrupted (Ctrl-C or SIGTERM)"
            unread += [InputFile(path=p, status="skipped", reason=why) for p in files[n + 1:]]
            break
    if not col.inputs:
        return None, errors
    from gpudoctor.parsers.signatures import merge_hits

    snap = col.base.model_copy(deep=True) if col.base is not None else Snapshot(
        gpudoctor_version=__version__,
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    snap.inputs = list(snap.inputs) + col.inputs + unread
    known = dict(snap.known_fields)
    partial_env: list[str] = []
    env_complete = False
    for sec in TEXT_SECTIONS:
        frags = [f for f in col.fragments if f.section == sec]
        if not frags or (getattr(snap, sec) is not None and sec not in known):
            continue  # nothing from text, or the saved report had it in full
        cur = getattr(snap, sec)
        sources = [] if cur is None else [cur.source]
        for f in frags:
            val = f.value.model_copy(deep=True)
            label = f"{val.source}: {f.path}"
            if label not in sources:
                sources.append(label)
            if cur is None:
                cur = val
            elif sec == "nvml":
                _merge_nvml(cur, val)
            elif sec == "env":
                cur.variables = {**val.variables, **cur.variables}
            else:
                _merge_model(cur, val)
            if sec == "env":
                if f.complete:
                    env_complete = True
                else:
                    partial_env += list(val.variables)
        cur.source = "; ".join(sources)
        if sec == "nvml":
            if "gpus" in cur.model_fields_set:
                # an input may say more GPUs exist than it lists ("Attached GPUs : 8" of a cut -q): keep that
                cur.gpu_count = max(len(cur.gpus), *(f.value.gpu_count or 0 for f in frags))
                cur.available = cur.available or bool(cur.gpus)
            gfields: set[str] = set()
            for g in cur.gpus:
                gfields |= g.model_fields_set
            known["nvml.gpus"] = sorted(gfields)
        setattr(snap, sec, cur)
        if sec == "env":
            if env_complete:
                known.pop("env", None)
            else:
                known["env"] = sorted(set(partial_env))
        else:
            known[sec] = sorted(cur.model_fields_set - {"source"})
    if col.apps:
        _attach_processes(snap, col, known)
    if (col.topo_texts or col.lspci_texts or col.ib_ports) and snap.topology is None:
        from gpudoctor.parsers.topology_text import topology_from_text

        topo_text = col.topo_texts[0][1] if col.topo_texts else None
        lspci_text = "\n".join(t for _, t in col.lspci_texts) or None
        snap.topology = topology_from_text(topo_text, lspci_text, [p for _, p in col.ib_ports] or None)
        snap.topology.source = "; ".join([f"nvidia-smi topo -m: {p}" for p, _ in col.topo_texts[:1]] +
                                         [f"lspci -vvv: {p}" for p, _ in col.lspci_texts] +
                                         [f"ibstat / ibv_devinfo: {p}" for p in dict.fromkeys(
                                             p for p, _ in col.ib_ports)])
    for name, value, path in col.extra_sections:
        if not _attach(snap, name, value):
            for inp in snap.inputs:
                if inp.path == path:
                    inp.note = f"{name} parsed, but this build has no Snapshot section for it"
    if snap.logs is not None and col.lines and _same_logs(snap.logs, col):
        snap.logs = None  # the saved report was made from these same logs: they are read again, not counted twice
        now = {os.path.basename(i.path) for i in col.inputs + unread}
        base = col.base.inputs if col.base is not None else []
        snap.inputs = [i for i in base if os.path.basename(i.path) not in now] + col.inputs + unread
    logs = snap.logs.model_copy(deep=True) if snap.logs is not None else LogFacts(
        source="logs and error text: " + ", ".join(i.path for i in col.inputs if "logs" in i.sections or i.kinds))
    logs.lines_scanned += col.lines
    logs.signatures = merge_hits(list(logs.signatures) + col.hits)
    logs.xids += col.xids
    logs.kernel_messages += [m for m in col.kernel if m not in logs.kernel_messages]
    logs.nccl = _merge_nccl(([logs.nccl] if logs.nccl else []) + col.nccl)
    logs.error_lines += [x for _, x in col.unexplained if x not in logs.error_lines]
    logs.commands += col.commands
    logs.peer_access.update(col.peer)
    logs.rank_announcements += col.ranks
    logs.nccl_tests += col.nccl_tests
    logs.collective_timeouts += col.timeouts
    logs.rendezvous += col.rendezvous
    for e in sorted(col.exceptions, key=lambda e: e.line):  # the chunks of a large input give one each: the first
        if not any(x.file == e.file for x in logs.first_exceptions):
            logs.first_exceptions.append(e)
    _scrub_logs(logs)
    if col.lines or col.base is None:
        snap.logs = logs
    snap.known_fields = known
    snap.duration_s = round(time.perf_counter() - t0, 3)
    return snap, errors


def _same_logs(saved: LogFacts, col: Collected) -> bool:
    """Whether every file a saved report's signature hits came from is among the text inputs read now (by file
    name: a report saved beside its logs, `check run.log --save report.json`, then `check` of that folder)."""
    theirs = {os.path.basename(p) for h in saved.signatures for p in h.files}
    ours = {os.path.basename(i.path) for i in col.inputs if D.JSON not in i.kinds}
    return bool(theirs) and theirs <= ours


def load_path(path: str) -> Snapshot:
    """The Snapshot of a saved report file. Raises InputError (one line naming the file) when it is
    unreadable, empty, too large, binary, or not a gpudoctor report."""
    return parse_document(read_text(path), path)
