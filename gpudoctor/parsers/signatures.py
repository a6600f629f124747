"""Match error messages and log lines against the signature catalogue (rules/signatures.toml).

:func:`match_signatures` is a pure function of the text and the catalogue; the SIG rules turn its
hits into findings with the catalogue's cause, remedy and sources.

Engine (chosen by measurement, docs/benchmarks.md): the text is cut into line-aligned blocks; a prefilter names
the signatures that can match in a block, and only those run their Python regular expression there, on smaller
sub-blocks. The prefilter is google-re2's ``Set`` (one DFA pass for the whole catalogue, ~500 MB/s) when the
optional ``re2`` module is installed, else each signature's required literals (derived from its regex with the
stdlib parser) searched in the lower-cased block. Python's ``re`` always produces the matches, so both engines
give the same results.
"""
from __future__ import annotations

import bisect
import functools
import heapq
import re
from collections.abc import Iterable, Iterator
from typing import Any

from gpudoctor.facts.model import SignatureHit
from gpudoctor.parsers._text import clean, clip
from gpudoctor.parsers.hit_origin import Spread, finish, line_numbers, merge_hits  # noqa: F401 (merge_hits re-exported)
from gpudoctor.parsers.regex_literals import MIN_ANCHOR, anchors, structure  # noqa: F401 (re-exported)

try:  # optional: google-re2 (pip install gpudoctor[fast]); measured ~100x faster prefilter on large logs
    import re2 as _re2  # type: ignore[import-not-found,import-untyped,unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    _re2 = None


def _re2_options() -> Any:
    """re2 options, case-insensitive matching set by the caller; a pattern re2 cannot read raises (the caller falls
    back to Python's re) without re2 logging its parse error to stderr (a site's own signatures may use constructs
    only Python reads, such as back-references)."""
    opts = _re2.Options()
    opts.log_errors = False
    return opts


MAX_LINES = 3
MAX_LINE_CHARS = 300
MAX_COUNT = 10000   # matches counted per signature and text
MAX_LINE_SET = 512  # line starts kept per signature and text (a wrapper matched more often is never folded)
MAX_VARIANTS = 4    # other group values kept per signature and text (a later, worse event of the same message)
BLOCK = 1 << 17     # prefilter block (characters): 128 KiB measured fastest (docs/benchmarks.md)
SUB_BLOCK = 1 << 16  # block of the explains / error-line scans
OVERLAP = 4096      # a match may run this far past its block's end (multi-line messages)
ERRORISH = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\bTraceback\b|\bFAILED\b|(?i:\berror:|\bfailed\b|\bfatal\b"
                      r"|\bWARN(?:ING)?\b|Permission denied|\bunable to\b|\bcannot\b|\bcan't\b|\btimed out\b"
                      r"|\bAssertion\b|\bnot (?:found|available|detected)\b)")
# every ERRORISH match contains one of these (lower-cased): blocks without any are skipped
_ERRORISH_LITERALS = ("error", "exception", "traceback", "failed", "fatal", "warn", "permission denied", "unable to",
                      "cannot", "can't", "timed out", "assertion", "not found", "not available", "not detected")
# not error lines: traceback furniture (Python's, and the C++ 'frame #N:' lines of a c10::Error), source lines
# Python echoes (a warning's `warnings.warn(...)` call), NAME=value lines of an environment dump, NCCL INFO;
# a torchrun line prefix: "[rank3]:" (torch's rank prefix), "[default0]:" / "[trainer3]:" (--tee, role + local rank),
# after a logger's or collector's time stamp ("2024-05-01 10:00:01 [rank3]: Traceback ...");
# a "# ..." comment (a note the user or a harness wrote into the paste, a Markdown heading)
_NOISE = re.compile(r"^\s*(?:\[?\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s+)?"
                    r"(?:\[[A-Za-z_]\w*?\d+\]:\s*)*(?:#(?:\s|$)|File \"|\^+$|~+$|frame #\d+: "
                    r"|Traceback \(most recent call last\)|return |\w+ = |Last error:\s*$|>>> "
                    # IPython / Jupyter: "RuntimeError    Traceback (most recent call last)" and its "--> 197 code"
                    r"|\w+\s+Traceback \(most recent call last\)|-*> ?\d+ "
                    # a logging header whose message is on the next lines ("WARNING:torch.distributed.run:")
                    r"|[A-Z]+:[\w.]+:\s*$"
                    r"|warnings\.warn(?:_explicit)?\("
                    # c10::Error's "Exception raised from f at file:line (most recent call first):" frame header
                    r"|Exception raised from \S+ at \S+ \(most recent call first\):"
                    # an environment assignment (an `env` dump's NCCL_DEBUG=WARN): configuration, not an event
                    r"|(?:export\s+|declare -x\s+)?[A-Z_][A-Z0-9_]*=\S*\s*$)|\bNCCL INFO\b")


# a line of code, not a message: the source line a Python traceback echoes under its `File "...", line N` line, or a
# statement that builds a message (`raise X("...")`, `assert ..., "..."`, `print(`, `logger.error(`), or a command
# typed at a shell or Python prompt (`$ grep "..." log`): the text quoted in it is not an error that happened
_CODE_LINE = re.compile(r"(?:\s*\[[A-Za-z_]\w*?\d+\]:)*\s*(?:raise\s+[A-Za-z_][\w.]*\s*\(|assert\s|print\(|(?:self\.)?"
                        r"(?:logger|logging|log|LOG)\.(?:error|warning|warn|critical|exception|fatal|info)\(|"
                        r"TORCH_CHECK\(|TORCH_WARN|C10_THROW_ERROR\(|WARN\(\"|(?:\$|>>>|In \[\d+\]:)\s"
                        # a shell prompt: "user@node:~$ ", "(base) root@a100-07:/workspace# ", "[root@node dir]# ",
                        # zsh "anna@mbp ~ % ", fish "anna@node ~/logs> ", macOS "node-07:logs anna$ ", "bash-5.1$ ",
                        # oh-my-zsh "➜  logs git:(main) ", starship "❯ ", PowerShell "PS C:\x> ", cmd "C:\x>", a
                        # time stamp before one, "(venv) $ ", Python / IPython continuation "... " / "...: "
                        r"|(?:\[\d\d:\d\d(?::\d\d)?\][ \t]*)?(?:\([\w.-]+\)\s+)?"
                        r"(?:[\w.-]+@[\w.-]+(?::\S*)?[$#%]|\[[\w.-]+@[\w.-]+[^\]\n]*\][$#]|[\w.-]+@[\w.-]+ \S*\s?[%>$#]"
                        r"|[\w.-]+:\S+ [\w.-]+[$#]|(?:ba|z|k|da)?sh-[\d.]+[$#]|[➜❯λ](?:\s+\S+\s+git:\(\S+\))?"
                        r"|PS [A-Za-z]:\\[^>:\n]*>|\$|\.\.\.:?)\s|[A-Za-z]:\\[^>:\s]*>)")
#: a comment line ("# if you see 'NCCL error: ...' set ..."): a note in a config file, a script or a shell session,
#: skipped unless the text is nccl-tests output, whose own report lines start with "#"
_COMMENT = re.compile(r"[ \t]*#[ \t]")


#: the title of an issue pasted as text: "# RuntimeError: ...", "# [FSDP] ValueError: ..." on the first line
_TITLE = re.compile(r"[ \t]*#[ \t]+(?:\[[^\]\n]{1,40}\][ \t]*)?[\w.]*(?:Error|Exception|Warning)\b:")


def _comment_quote(t: str, ls: int, start: int) -> bool:
    """Whether the match at ``start`` lies in the text of a "# ..." comment line starting at ``ls`` (a signature
    written for a '#'-prefixed output line, nccl-tests' "# Out of bounds values", matches from the '#' itself). The
    first line of the text, when it is "# " and an exception line, is an issue's title, not a comment."""
    m = _COMMENT.match(t, ls)
    if m is None or start < m.end():
        return False
    return not (not t[:ls].strip() and _TITLE.match(t, ls))
_FILE_LINE = re.compile(r"(?:\[[A-Za-z_]\w*?\d+\]:)*( *)File \"[^\"\n]*\", line \d+")
_PREFIXED_INDENT = re.compile(r"(?:\[[A-Za-z_]\w*?\d+\]:)*( *)")


def _code_line(t: str, ls: int) -> bool:
    """True when the line of ``t`` starting at ``ls`` is code or a typed command (see _CODE_LINE), not output.

    A traceback echoes a frame's source line under its ``File "...", line N`` line, indented deeper (4 spaces under
    2); the exception line that ends the traceback is not indented, so a traceback whose source lines are missing
    (no source file, or trimmed by the user) still has its exception read."""
    if _CODE_LINE.match(t, ls):
        return True
    if ls < 2 or t[ls] not in " \t[":
        return False
    ps = t.rfind("\n", 0, ls - 1) + 1
    frame = _FILE_LINE.match(t, ps, ls - 1)
    if frame is None:
        return False
    here = _PREFIXED_INDENT.match(t, ls)
    return here is not None and len(here.group(1)) > len(frame.group(1))


# a log line at INFO/DEBUG level: "2025-05-21 08:00:02 | INFO | ...", "[INFO] ...", "INFO:root:...", glog "I1203 ..."
_INFO_LINE = re.compile(r"^.{0,80}?(?:\|\s*(?:INFO|DEBUG)\s*\||\[(?:INFO|DEBUG)\]|\b(?:INFO|DEBUG)(?::|\s+-\s)|"
                        r"\s(?:INFO|DEBUG)\s)|^\s*[ID]\d{4} \d\d:\d\d")
_RAISED = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\bTraceback\b")
_INFO_LEVEL = re.compile(r"\b(?:INFO|DEBUG|TRACE)\b|^\s*[ID]\d{4} \d\d:")


def _quoted_mention(t: str, ls: int, start: int) -> bool:
    """True when the match at ``start`` opens a double-quoted string on an INFO/DEBUG log line (a configuration echo
    such as ``INFO | on "CUDA error: out of memory" retry``): the program names the message, it did not happen."""
    return start > ls and t[start - 1] in "\"\u201c" and _INFO_LEVEL.search(t, ls, start) is not None


_LOOKAROUND = re.compile(r"\(\?<?[=!]")  #: the opening of a look-ahead / look-behind group, or an escaped look-alike


#: how many lines after a match a signature's look-ahead may read ("... Ignoring this choice." two lines on)
LOOKAHEAD_LINES = 4


def _lines_on(t: str, pos: int, n: int, stop: int) -> int:
    """The end of the ``n``-th line after offset ``pos`` in ``t`` (a line end), at most ``stop``."""
    for _ in range(n):
        nxt = t.find("\n", pos + 1)
        if nxt < 0 or nxt >= stop:
            return stop
        pos = nxt
    return pos


def _re2_form(rx: str) -> str:
    """A signature regex as re2 reads it like Python's re with MULTILINE: look-arounds dropped (re2 has none: a
    superset, Python's re decides) and ``(?m)`` so that ^ and $ match at line ends, as they do in Python."""
    return "(?m)" + _drop_lookarounds(rx)


def _drop_lookarounds(rx: str) -> str:
    """``rx`` without its look-ahead / look-behind groups, nested parentheses and escapes included."""
    if not _LOOKAROUND.search(rx):
        return rx
    cut: list[tuple[int, int]] = []
    start = None
    for i, c, depth in structure(rx):
        if start is None and c == "(" and rx.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            start, level = i, depth
        elif start is not None and c == ")" and depth == level + 1:
            cut.append((start, i + 1))
            start = None
    out, pos = [], 0
    for a, b in cut:
        out.append(rx[pos:a])
        pos = b
    return "".join(out) + rx[pos:]


@functools.cache
def compiled(entries: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern], ...]:
    return tuple((sid, re.compile(rx, re.IGNORECASE | re.MULTILINE)) for sid, rx in entries)


def catalogue() -> list[dict[str, Any]]:
    """The [[signature]] entries of rules/signatures.toml."""
    from gpudoctor.compat import data

    return list(data.load("signatures").get("signature", []))


def _explains(entries: list[dict[str, Any]]) -> dict[str, re.Pattern]:
    key = tuple((e["id"], e["explains"]) for e in entries if e.get("explains"))
    return dict(compiled(key))


def _evidence(text: str, m: re.Match) -> str:
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    end = len(text) if end < 0 else end
    line = text[start:end]
    before = len(" ".join(line[: m.start() - start].split()))  # where the match starts once spaces are squeezed
    return clip(" ".join(line.split()), MAX_LINE_CHARS, focus=before)


class _Re2Match:
    """A match of an re2 pattern over an ASCII block, as the matcher uses a Python match: start / end in the whole
    text (``base``: the block's offset), named groups as str."""

    __slots__ = ("_m", "_base")

    def __init__(self, m: Any, base: int):
        self._m, self._base = m, base

    def start(self) -> int:
        return int(self._m.start()) + self._base

    def end(self) -> int:
        return int(self._m.end()) + self._base

    def groupdict(self) -> dict[str, str | None]:
        return {(k.decode("ascii") if isinstance(k, bytes) else k): None if v is None else v.decode("ascii")
                for k, v in self._m.groupdict().items()}  # re2 on bytes names its groups in bytes too


class _Engine:
    """The prefilter and the Python patterns of one catalogue.

    ``extras``: further (pattern, literals) whose possible presence in each block the prefilter reports as well, in
    the same pass (the error-line scan's ERRORISH, the follow-on ``explains`` patterns); ``literals`` (lower-case,
    one of them in every match) serve the stdlib engine, None meaning "always possible"."""

    def __init__(self, entries: tuple[tuple[str, str], ...], extras: tuple[tuple[str, tuple[str, ...] | None], ...]
                 = ()):
        self.ids = [sid for sid, _ in entries]
        self.pattern = [rx for _, rx in entries]
        self._rx: dict[int, re.Pattern[str]] = {}  # compiled when first a candidate (most never are in a log)
        self._re2_cache: dict[int, Any] = {}
        self._exact_cache: dict[int, Any] = {}
        self._raw_key: tuple[int, int, int] | None = None
        self._raw_text: str | None = None  # the text self._raw was cut from
        self._raw: bytes | None = None
        self.always: list[int] = []
        self.extras_always: set[int] = set()
        self.set: Any = None
        self._low_key: tuple[int, int, int] | None = None  # (id(text), start, end) of the block self._low lower-cases
        self._low = ""
        if _re2 is not None:
            opts = _re2_options()
            opts.case_sensitive = False
            opts.never_capture = True
            opts.max_mem = 256 << 20
            rset = _re2.Set.SearchSet(opts)
            self.set_index: dict[int, int] = {}  # Set index -> signature index
            self.extra_index: dict[int, int] = {}  # Set index -> extra index
            for i, (_, rx) in enumerate(entries):
                try:  # re2 has no look-around: drop it (a superset; Python re decides)
                    self.set_index[rset.Add(_re2_form(rx))] = i
                except Exception:
                    self.always.append(i)
            for k, (rx, _lits) in enumerate(extras):  # case-insensitive here: a superset of a case-sensitive one
                try:
                    self.extra_index[rset.Add(_re2_form(rx))] = k
                except Exception:
                    self.extras_always.add(k)
            rset.Compile()
            self.set = rset
        else:
            self.anchors = [anchors(rx) for _, rx in entries]
            self.always = [i for i, a in enumerate(self.anchors) if a is None]
            self.extra_anchors = [lits for _, lits in extras]
            self.extras_always = {k for k, lits in enumerate(self.extra_anchors) if lits is None}

    def finditer(self, i: int, t: str, s0: int, s1: int, stop: int) -> Iterator[re.Match[str]]:
        """Python matches of signature ``i`` starting in t[s0:s1] (ending by ``stop``), in order.

        With re2 and an ASCII block, re2 locates the matches and Python's regex re-matches only those lines;
        otherwise Python's regex scans the block."""
        raw = self._ascii_block(t, s0, stop) if self.set is not None else None
        exact = self._re2_exact(i) if raw is not None else None
        if exact is not None:  # the same pattern in re2, with its groups: no Python regex at all
            for m2 in exact.finditer(raw):
                if s0 + m2.start() >= s1:
                    return
                yield _Re2Match(m2, s0)  # type: ignore[misc]
            return
        r2 = self._re2_pattern(i) if self.set is not None else None
        if r2 is not None:
            if raw is not None:
                pos = s0
                for m2 in r2.finditer(raw):
                    if s0 + m2.start() >= s1:
                        return
                    ls = max(pos, t.rfind("\n", 0, s0 + m2.start()) + 1)
                    le = t.find("\n", s0 + m2.end())  # re-match up to the end of re2's last line (not into the next:
                    end = stop if le < 0 or le > stop else le  # '$' holds at endpos)
                    if self._peeks(i):  # a look-ahead may read the lines after the match: let it see a few
                        m = self.rx(i).search(t, ls, _lines_on(t, end, LOOKAHEAD_LINES, stop))
                        if m is not None and m.start() > end:
                            m = None  # a match further on: re2 finds its own candidate for it
                    else:
                        m = self.rx(i).search(t, ls, end)
                    if m is not None:
                        pos = m.end()
                        yield m
                return
        lits = self.anchors[i] if self.set is None else None
        if lits is not None and self._low_key == (id(t), s0, stop):
            last = -1  # stdlib engine: only the lines around the signature's literals are searched
            for w0, w1 in _windows(t, self._low, lits, s0, stop):
                for m in self.rx(i).finditer(t, w0, w1):
                    if m.start() >= last:
                        last = m.end()
                        yield m
            return
        yield from self.rx(i).finditer(t, s0, stop)

    def _ascii_block(self, t: str, s0: int, stop: int) -> bytes | None:
        """t[s0:stop] as bytes when it is ASCII (offsets in bytes and characters agree), else None; the last block
        is kept, since several signatures are searched in the same block in turn."""
        key = (id(t), s0, stop)
        if self._raw_key != key or self._raw_text is not t:  # (the text itself is held: a later text may reuse its id)
            block = t[s0:stop]
            raw = block.encode("utf-8", "surrogatepass")
            self._raw_key, self._raw, self._raw_text = key, raw if len(raw) == len(block) else None, t
        return self._raw

    def _peeks(self, i: int) -> bool:
        """Whether signature ``i`` has a look-ahead (which may read past the lines re2 matched)."""
        return "(?=" in self.pattern[i] or "(?!" in self.pattern[i]

    def _re2_exact(self, i: int) -> Any:
        """Signature ``i`` compiled by re2 with its groups, when re2 reads it exactly as Python does on ASCII text
        (no look-around, which re2 lacks: those are confirmed by Python's regex); None otherwise."""
        if i not in self._exact_cache:
            rx = self.pattern[i]
            exact = None
            if _drop_lookarounds(rx) == rx:
                form = "(?m)" + rx
                opts = _re2_options()
                opts.case_sensitive = False
                opts.max_mem = 64 << 20
                try:
                    exact = _re2.compile(form.encode(), opts)
                except Exception:  # a construct re2 lacks (back-reference, \Z): Python's regex decides
                    exact = None
            self._exact_cache[i] = exact
        return self._exact_cache[i]

    def rx(self, i: int) -> re.Pattern[str]:
        if i not in self._rx:
            self._rx[i] = re.compile(self.pattern[i], re.IGNORECASE | re.MULTILINE)
        return self._rx[i]

    def _re2_pattern(self, i: int) -> Any:
        if i not in self._re2_cache:
            opts = _re2_options()
            opts.case_sensitive = False
            opts.never_capture = True
            try:
                self._re2_cache[i] = _re2.compile(_re2_form(self.pattern[i]).encode(), opts)
            except Exception:
                self._re2_cache[i] = None
        return self._re2_cache[i]

    @property
    def name(self) -> str:
        return "re2-set" if self.set is not None else "literal-prefilter"

    def candidates(self, block: str, key: tuple[int, int, int] | None = None) -> tuple[list[int], set[int]]:
        """(indexes of the signatures that may match in ``block``, indexes of the extras that may match in it).

        ``key``: (id(text), start, end) of the block in its text; the stdlib engine keeps the lower-cased block under
        it for :meth:`finditer`'s windows."""
        if self.set is not None:
            found = self.set.Match(block.encode("utf-8", "surrogatepass")) or []
            sigs = {self.set_index[k] for k in found if k in self.set_index}
            extras = {self.extra_index[k] for k in found if k in self.extra_index}
            return sorted(sigs.union(self.always)), extras | self.extras_always
        low = block.lower()
        # kept for finditer's windows; lower-casing can change the length (rare characters): then the block is scanned
        self._low_key, self._low = (key, low) if len(low) == len(block) else (None, "")
        return ([i for i, a in enumerate(self.anchors) if a is None or any(x in low for x in a)],
                {k for k, a in enumerate(self.extra_anchors) if a is None or any(x in low for x in a)})


def _windows(t: str, low: str, literals: Iterable[str], s0: int, stop: int) -> list[tuple[int, int]]:
    """Line-aligned, merged windows of ``t`` (absolute offsets within [s0, stop)) reaching OVERLAP characters before
    and after each occurrence of ``literals`` in ``low`` (t[s0:stop] lower-cased): a match of a signature holds one
    of its literals, so it lies in one of them."""
    spans: list[tuple[int, int]] = []
    n = len(low)
    for a in literals:
        p = low.find(a)
        while p >= 0:
            spans.append((max(0, p - OVERLAP), min(n, p + len(a) + OVERLAP)))
            p = low.find(a, p + 1)
    out: list[tuple[int, int]] = []
    for w0, w1 in sorted(spans):
        w0 = t.rfind("\n", s0, s0 + w0) + 1 if w0 > 0 else s0
        w0 = max(w0, s0)
        e = t.find("\n", s0 + w1, stop)
        w1 = stop if e < 0 else e
        if out and w0 <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], w1))
        else:
            out.append((w0, w1))
    return out


@functools.cache
def _engine(entries: tuple[tuple[str, str], ...], extras: tuple[tuple[str, tuple[str, ...] | None], ...] = ()
            ) -> _Engine:
    return _Engine(entries, extras)


def _extras(entries: list[dict[str, Any]]) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
    """ERRORISH, then each distinct ``explains`` pattern of the catalogue, with the literals of each."""
    return _extras_of(tuple(dict.fromkeys(e["explains"] for e in entries if e.get("explains"))))


@functools.cache
def _extras_of(explains: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
    lits = {rx: anchors(rx) for rx in explains}
    return ((ERRORISH.pattern, _ERRORISH_LITERALS),) + tuple((rx, None if a is None else tuple(a))
                                                             for rx, a in lits.items())


def prepare(sample: str = "") -> None:
    """Load the catalogue and build its engine now, and run it over ``sample`` (a few kB of the input) so that the
    prefilter's automaton has the states such text needs: a process forked afterwards (parsers/chunk_pool.py)
    inherits all of it instead of building it again."""
    match_signatures(sample, spans=[], errorish=[])
    _explains(catalogue())
    _errorish_re2()
    _quiet()


def engine_name(entries: list[dict[str, Any]] | None = None) -> str:
    """Which prefilter matches the catalogue in this environment (re2-set or literal-prefilter)."""
    entries = catalogue() if entries is None else entries
    return _engine(tuple((e["id"], e["regex"]) for e in entries)).name


def _blocks(t: str, size: int, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Line-aligned (start, end) blocks of about ``size`` characters covering t[start:end]."""
    end = len(t) if end is None else end
    out = []
    pos = start
    while pos < end:
        cut = min(end, pos + size)
        if cut < end:
            nl = t.find("\n", cut)
            cut = end if nl < 0 or nl >= end else nl + 1
        out.append((pos, cut))
        pos = cut
    return out


def match_signatures(text: str, entries: list[dict[str, Any]] | None = None, file: str | None = None,
                     spans: list[tuple[int, int]] | None = None, line_base: int = 0,
                     errorish: list[tuple[int, int]] | None = None, comments: bool = True) -> list[SignatureHit]:
    """Every catalogue entry that matches ``text``, with its count, first matching lines, named groups, and the ranks,
    hosts and GPUs its lines name with the line numbers of its first and last match (parsers/hit_origin.py;
    ``line_base``: lines of the same file before ``text``, for a chunk of a large input).

    ``spans`` (optional, out) receives the (start, end) character spans of all matches, so that
    :func:`unexplained_error_lines` can skip lines a signature explains. ``errorish`` (optional, out) receives the
    line-aligned (start, end) blocks of the cleaned text where ERRORISH may match (the prefilter's answer, found in
    the same pass), for :func:`unexplained_error_lines`' ``blocks``. ``comments``: read "# ..." comment lines
    (False: they are notes in a config file, a script or a shell session, not output; `check` passes True only for
    nccl-tests output, whose report lines start with "#").
    """
    entries = catalogue() if entries is None else entries
    t = clean(text)
    extras = _extras(entries)
    eng = _engine(tuple((e["id"], e["regex"]) for e in entries), extras)
    explains = _explains(entries)
    extra_no = {rx: k for k, (rx, _) in enumerate(extras)}
    extra_blocks: dict[int, list[tuple[int, int, int]]] = {}  # extra -> (start, end, end + overlap) of its blocks
    # index -> ([count], lines, groups, where, other groups' values)
    state: dict[int, tuple[list[int], list[str], dict[str, str], Spread, list[dict[str, str]]]] = {}
    last: dict[int, re.Match[str]] = {}
    enclosers = _enclosers(tuple((e["id"], tuple(e.get("keeps", ()))) for e in entries if e.get("encloses")))
    wrappers = frozenset(e["id"] for e in entries if e.get("wraps"))
    at: dict[int, set[int]] = {}  # index -> line starts of its counted matches (up to MAX_LINE_SET)
    inside: list[tuple[int, int, frozenset[str]]] = []  # (start, end, ids kept) of the enclosers' matches, by start
    n = len(t)
    for s0, s1 in _blocks(t, BLOCK):
        stop = min(n, s1 + OVERLAP)
        found, extras_here = eng.candidates(t[s0:stop], (id(t), s0, stop))
        for k in extras_here:
            extra_blocks.setdefault(k, []).append((s0, s1, stop))
        if enclosers:  # their matches first: another signature's match inside one is part of it
            found = sorted(found, key=lambda i: eng.ids[i] not in enclosers)
        for i in found:
            st = state.get(i)
            if st is not None and st[0][0] >= MAX_COUNT:
                continue
            prev_end = last[i].end() if i in last else -1
            for m in eng.finditer(i, t, s0, s1, stop):
                if m.start() >= s1:
                    break
                if m.start() < prev_end:
                    continue  # already counted from the previous block's overlap
                ls = t.rfind("\n", 0, m.start()) + 1
                if (_code_line(t, ls) or _quoted_mention(t, ls, m.start())
                        or (not comments and _comment_quote(t, ls, m.start()))):
                    continue  # quoted in code, a command or a configuration echo, not said by the program
                if eng.ids[i] in enclosers:
                    bisect.insort(inside, (m.start(), m.end(), enclosers[eng.ids[i]]))
                elif inside and _enclosed(inside, m.start(), eng.ids[i]):
                    continue  # the reason an encloser quotes (an autotuning candidate's error), not a failure
                if i in last and t.find("\n", last[i].end(), m.start()) < 0:
                    last[i] = m
                    continue  # a second match on the same line: one occurrence
                if st is None:
                    st = state[i] = ([0], [], {k: v for k, v in m.groupdict().items() if v is not None}, Spread(),
                                     [])
                elif _after_last_error(t, ls):  # the error NCCL says made the call fail: its values decide the case
                    st[2].clear()
                    st[2].update({k: v for k, v in m.groupdict().items() if v is not None})
                    st[4].clear()
                    st[4].append({})  # (decided: no later value competes with it)
                elif len(st[4]) < MAX_VARIANTS and m.groupdict() and st[4][:1] != [{}]:  # later matches' values
                    g = {k: v for k, v in m.groupdict().items() if v is not None}
                    if g and g != st[2] and g not in st[4]:
                        st[4].append(g)
                st[0][0] += 1
                last[i] = m
                seen = at.setdefault(i, set())
                if len(seen) < MAX_LINE_SET:
                    seen.add(ls)
                if spans is not None:
                    spans.append((m.start(), m.end()))
                st[3].add(t, m.start(), t.rfind("\n", 0, m.start()) + 1)
                ev = _evidence(t, m)
                if len(st[1]) < MAX_LINES and ev not in st[1]:
                    st[1].append(ev)
                if st[0][0] >= MAX_COUNT:
                    break
    if errorish is not None:
        errorish += [(s0, s1) for s0, s1, _ in extra_blocks.get(0, [])]
    hits = []
    numbers = line_numbers(t, [p for st in state.values() for p in (st[3].first, st[3].last)], line_base)
    explained: set[str] = set()  # several signatures share one follow-on pattern: its spans are added once
    for i in sorted(state):
        count, lines, groups, spread, variants = state[i]
        sid = eng.ids[i]
        if spans is not None and sid in explains and explains[sid].pattern not in explained:  # follow-on lines
            explained.add(explains[sid].pattern)
            spans.extend(_find_in(explains[sid], t, extra_blocks.get(extra_no[explains[sid].pattern], [])))
        hits.append(SignatureHit(id=sid, count=count[0], lines=lines, files=[file] if file else [], groups=groups,
                                 group_variants=[g for g in variants if g]))
        finish(hits[-1], spread, t, line_base, numbers)
        if sid in wrappers and count[0] <= MAX_LINE_SET:
            hits[-1].wrapped_by = _wrapped_by(at.get(i, set()), {eng.ids[j]: v for j, v in at.items()
                                                                 if eng.ids[j] not in wrappers})
    return hits


def _wrapped_by(mine: set[int], others: dict[str, set[int]]) -> list[str]:
    """The ids of ``others`` (id -> line starts) that matched lines of ``mine``, when together they matched every
    one of them; [] otherwise."""
    ids = sorted(sid for sid, lines in others.items() if lines & mine)
    covered = set().union(*(others[sid] for sid in ids)) if ids else set()
    return ids if mine and mine <= covered else []


#: torch's copy of ncclGetLastError(): "Last error:" alone on a line (after the rank prefix), the error on the next
_LAST_ERROR_LINE = re.compile(r"(?:\[[A-Za-z_]\w*?\d+\]:)?[ \t]*Last error:[ \t\r]*")


def _after_last_error(t: str, ls: int) -> bool:
    """Whether the line of ``t`` starting at ``ls`` follows a "Last error:" line (torch's ProcessGroupNCCL prints
    NCCL's last error there: the one that made the call fail, where earlier WARNs may be retries)."""
    if ls < 2:
        return False
    ps = t.rfind("\n", 0, ls - 1) + 1
    return ls - ps < 80 and _LAST_ERROR_LINE.fullmatch(t, ps, ls - 1) is not None


@functools.cache
def _enclosers(rows: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, frozenset[str]]:
    """id -> the ids it keeps, of the entries with ``encloses`` (rules/signatures.toml)."""
    return {sid: frozenset(keeps) for sid, keeps in rows}


def _enclosed(inside: list[tuple[int, int, frozenset[str]]], pos: int, sid: str) -> bool:
    """Whether offset ``pos`` lies in one of the encloser matches ``inside`` ((start, end, kept ids), sorted) that
    does not keep ``sid``."""
    k = bisect.bisect_right(inside, (pos, 1 << 62, frozenset())) - 1
    for start, end, keeps in inside[max(0, k - 7):k + 1]:  # the latest few that start at or before pos
        if start <= pos < end and sid not in keeps:
            return True
    return False


def _find_in(rx: re.Pattern[str], t: str, blocks: list[tuple[int, int, int]]) -> Iterator[tuple[int, int]]:
    """Spans of the matches of ``rx`` that start in the (start, end, end + overlap) ``blocks`` of ``t``, in order and
    without overlaps (the blocks are those where the prefilter found that ``rx`` may match)."""
    last_end = -1
    for b0, b1, stop in blocks:
        for m in rx.finditer(t, b0, stop):
            if m.start() >= b1:
                break
            if m.start() >= last_end:
                last_end = m.end()
                yield m.start(), m.end()


def _merge_spans(spans: Iterable[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted, disjoint (starts, ends) covering the same characters as ``spans`` (touching spans merged)."""
    starts: list[int] = []
    ends: list[int] = []
    for s, e in sorted(spans):
        if ends and s <= ends[-1]:
            ends[-1] = max(ends[-1], e)
        else:
            starts.append(s)
            ends.append(e)
    return starts, ends


#: a Python exception line ("ValueError: ...", "[rank2]: torch.distributed.DistBackendError: ...")
EXCEPTION_LINE = re.compile(r"^[ \t]*(?:\[(?:rank|default)\d+\]:[ \t]*)?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*"
                            r"(?:Error|Exception)\b:", re.M)


def first_unexplained_exception(text: str, spans: Iterable[tuple[int, int]]) -> tuple[int, str] | None:
    """(offset, line) of the first exception line of the cleaned ``text`` that no match of ``spans`` covers and that
    is not quoted in code, else None (at most the first 1 MiB is searched: a root cause comes early)."""
    t = clean(text)
    starts, ends = _merge_spans(spans)
    pos = 0
    limit = min(len(t), 1 << 20)
    while pos < limit:
        end = t.find("\n", pos)
        end = len(t) if end < 0 else end
        if ("Error" in t[pos:end] or "Exception" in t[pos:end]) and EXCEPTION_LINE.match(t, pos, end) \
                and not _code_line(t, pos):
            k = bisect.bisect_right(starts, end) - 1
            if not (k >= 0 and ends[k] >= pos):
                return pos, clip(" ".join(t[pos:end].split()), MAX_LINE_CHARS)
        pos = end + 1
    return None


def unexplained_error_lines(text: str, spans: Iterable[tuple[int, int]], limit: int = 10,
                            blocks: list[tuple[int, int]] | None = None) -> list[str]:
    """Error-looking lines (Error, Exception, failed, WARN ...) that no signature match covers.

    ``blocks``: the only line-aligned (start, end) blocks of the cleaned text that can hold such a line, as
    :func:`match_signatures` reported them in ``errorish`` (None: the whole text is searched)."""
    t = clean(text)
    starts, ends = _merge_spans(spans)
    quiet = _quiet()
    out: list[str] = []
    last = -1
    for start in heapq.merge(_errorish_line_starts(t, blocks), _last_error_payloads(t)):
        if start == last:
            continue  # another match on the same line
        last = start
        end = t.find("\n", start)
        end = len(t) if end < 0 else end
        line = t[start:end]
        if _NOISE.search(line) or (quiet is not None and quiet.search(line)) or _code_line(t, start):
            continue
        if _INFO_LINE.match(line) and not _RAISED.search(line):
            continue  # an INFO/DEBUG line naming an error word ("errors: 0", a setting), not an error
        k = bisect.bisect_right(starts, end) - 1  # the last covered interval that starts before the line ends
        if k >= 0 and ends[k] >= start:
            continue
        s = clip(" ".join(line.split()), MAX_LINE_CHARS)
        if s and s not in out:
            out.append(s)
            if len(out) >= limit:
                return out
    return out


@functools.cache
def _quiet() -> re.Pattern | None:
    """The catalogue's [[quiet]] entries in one pattern: harmless lines with an error word, never unexplained."""
    from gpudoctor.compat import data

    rxs = [q["regex"] for q in data.load("signatures").get("quiet", [])]
    return re.compile("|".join(f"(?:{rx})" for rx in rxs), re.IGNORECASE) if rxs else None


_LAST_ERROR = "Last error:"


def _last_error_payloads(t: str) -> Iterator[int]:
    """Start offsets of the lines that follow torch's "Last error:" (NCCL's ncclGetLastError text: the WARN message
    without its "NCCL WARN" prefix, so often without an error word ERRORISH would see), or of the text after it on the
    same line; in order."""
    pos = t.find(_LAST_ERROR)
    while pos >= 0:
        after = pos + len(_LAST_ERROR)
        eol = t.find("\n", after)
        eol = len(t) if eol < 0 else eol
        if t[after:eol].strip():  # "Last error: <text>" on one line: the line itself
            yield t.rfind("\n", 0, pos) + 1
        elif eol < len(t):
            nxt = t.find("\n", eol + 1)
            line = t[eol + 1:len(t) if nxt < 0 else nxt]
            body = line.split("]:", 1)[1] if line.lstrip().startswith("[rank") and "]:" in line else line
            if body.strip():
                yield eol + 1
        pos = t.find(_LAST_ERROR, after)


def _errorish_line_starts(t: str, blocks: list[tuple[int, int]] | None = None) -> Iterator[int]:
    """Start offsets of the lines of ``t`` that ERRORISH matches, in order (possibly repeated).

    ``blocks``: line-aligned blocks already known to be the only ones that may match (the signature prefilter's
    answer), else 64 KiB blocks each tested by a prefilter. With re2: on an ASCII block re2's matches give the lines
    directly (Python's ERRORISH then confirms each line), else Python's ERRORISH scans the block. Without re2: only the
    lines that hold one of ERRORISH's literals (string search in the lower-cased block) are searched by ERRORISH."""
    pre = _errorish_prefilter() if blocks is None else None
    rx2 = _errorish_re2()
    for b0, b1 in _blocks(t, SUB_BLOCK) if blocks is None else blocks:
        block = t[b0:b1]
        if pre is not None and not pre(block):
            continue
        raw = block.encode("utf-8", "surrogatepass") if rx2 is not None else b""
        if rx2 is not None and len(raw) == len(block):
            done = -1  # end of the last line handled: the other matches on it add nothing (a 5 MB line of errors)
            for m2 in rx2.finditer(raw):
                if m2.start() < done:
                    continue
                ls = raw.rfind(b"\n", 0, m2.start()) + 1
                le = raw.find(b"\n", m2.end())
                le = len(raw) if le < 0 else le
                done = le
                if ERRORISH.search(block, ls, le):
                    yield b0 + ls
            continue
        low = block.lower()
        if len(low) == len(block):
            for ls in literal_lines(block, low, _ERRORISH_LITERALS):
                le = block.find("\n", ls)
                if ERRORISH.search(block, ls, len(block) if le < 0 else le):
                    yield b0 + ls
            continue
        pos = b0
        while (m := ERRORISH.search(t, pos, b1)) is not None:
            yield t.rfind("\n", 0, m.start()) + 1
            le = t.find("\n", m.end(), b1)
            if le < 0:
                break
            pos = le + 1


def literal_lines(t: str, low: str, literals: Iterable[str]) -> list[int]:
    """Sorted start offsets of the lines of ``t`` whose lower-cased text (``low``, as long as ``t``) holds any of
    ``literals`` (lower-case, without newlines)."""
    starts: set[int] = set()
    for a in literals:
        p = low.find(a)
        while p >= 0:
            starts.add(t.rfind("\n", 0, p) + 1)
            le = t.find("\n", p)
            if le < 0:
                break
            p = low.find(a, le + 1)
    return sorted(starts)


def has_errorish(text: str) -> bool:
    """Whether ERRORISH matches anywhere in ``text`` (the same answer as ``ERRORISH.search``, found faster)."""
    return next(iter(_errorish_line_starts(text)), None) is not None


@functools.cache
def _errorish_re2() -> Any:
    if _re2 is None:
        return None
    opts = _re2_options()
    opts.never_capture = True
    try:
        return _re2.compile(ERRORISH.pattern.encode(), opts)
    except Exception:  # pragma: no cover - a pattern re2 cannot take
        return None


@functools.cache
def _errorish_prefilter() -> Any:
    """A fast test whether a block can contain an ERRORISH match (re2 when installed, else literals)."""
    if _re2 is not None:
        opts = _re2_options()
        opts.never_capture = True
        try:
            rx = _re2.compile(ERRORISH.pattern, opts)
            return lambda block: rx.search(block) is not None
        except Exception:  # pragma: no cover - a pattern re2 cannot take
            pass
    def literal_test(block: str) -> bool:
        low = block.lower()
        return any(a in low for a in _ERRORISH_LITERALS)

    return literal_test
