"""Tables of error codes: reference listings that name errors without any having happened.

A table of every ``cudaError_t`` with its ``cudaGetErrorString``, the ``ncclResult_t`` enum pasted from ``nccl.h``, a
Markdown table of NCCL result codes in a wiki page, an errno list: each row names an error code and often quotes its
message ("unhandled system error", "out of memory"), which the signature catalogue would otherwise read as that
error. A file that is mostly such a table is not an input (parsers/detect.py CODE_TABLE); a table inside a larger
paste (notes above a real traceback) is blanked before the signatures run (:func:`mask_code_tables`).

What makes a run of lines a table, not a log: each row is a code (a number) beside an enum-shaped name, or a
Markdown row whose first cell is one; the names are distinct (a table lists each once, a failing log repeats one or
two, e.g. every rank's "ncclSystemError"); and at least ``MIN_NAMES`` of them.
"""
from __future__ import annotations

import re

#: an error-enum name: lowerCamel behind a lower-case prefix (ncclInProgress, cudaErrorInvalidValue, hipSuccess),
#: UPPER_SNAKE (CUDA_ERROR_INVALID_VALUE, CUDNN_STATUS_NOT_SUPPORTED, NVML_ERROR_GPU_IS_LOST), an errno name (EPERM,
#: E2BIG) or any identifier carrying an error-enum word (Error, Success, Status, Result, Fail, Invalid); optionally in
#: Markdown code or bold marks
_NAME = (r"[`*]{{0,2}}(?P<{g}>[a-z]{{2,}}[A-Z][A-Za-z0-9_]*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|E[A-Z0-9]{{2,}}"
         r"|[A-Za-z_]\w*?(?i:error|success|status|result|fail|invalid)\w*)[`*]{{0,2}}")
#: the enum shapes alone (a name found inside a Markdown row's text, not at a cell's start)
_ENUM = r"(?:[a-z]{2,}[A-Z][A-Za-z0-9_]*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|E[A-Z0-9]{2,})"
_NUM = r"[`*]{0,2}-?(?:0[xX][0-9a-fA-F]+|\d+)[`*]{0,2}"
_END = r"(?=[ \t|:=,;).`*]|$)"
#: one row: "3\tcudaErrorInitializationError\tinitialization error", "cudaErrorInvalidValue = 1,", "ENOENT 2 No such
#: file or directory", "| 2 | ncclSystemError | unhandled system error |", "| `ncclInProgress` | 7 | ... |",
#: "| ncclRemoteError | A call failed on a remote peer |", "| 3 | internal check failed (ncclInternalError) |";
#: never "NCCL_IB_TIMEOUT=22" (an env dump: '=' without a space before it is an assignment, not an enum row)
_ROW = re.compile(
    rf"^[ \t|]*(?:{_NUM}[ \t]*[|:=,]?[ \t]*{_NAME.format(g='a')}{_END}"
    rf"|{_NAME.format(g='b')}(?:[ \t]+[|:=,(]?|[|:,(])[ \t]*{_NUM}\)?{_END})"
    rf"|^[ \t]*\|[ \t]*{_NAME.format(g='c')}[ \t]*\|"
    rf"|^[ \t]*\|[ \t]*{_NUM}[ \t]*\|[^\n]*?[ (`*](?P<d>{_ENUM}){_END}"
)
#: lines a table keeps between its rows: a Markdown separator or rule ("|---|:--:|", "+----+"), a comment (a
#: header's doc comment, a "# heading")
_FILLER = re.compile(r"^[ \t]*(?:[-=+|: \t]+|/\*.*|\*.*|//.*|#.*|<!--.*)$")
MIN_NAMES = 5  # distinct names in one table: an enum lists them all; no failing log prints five different codes
_DISTINCT = 0.8  # distinct names / rows: a log line repeated per rank repeats its name
_MAX_GAP = 12  # filler lines a table may hold between two rows (a header's doc comments)
#: a table is looked for only in a text this small (a reference listing is kilobytes; a streamed log is not one)
MAX_CHARS = 1 << 21


def _name(m: re.Match) -> str:
    return m.group("a") or m.group("b") or m.group("c") or m.group("d")


def table_runs(text: str) -> list[tuple[int, int, int]]:
    """The code tables in ``text``: (first line, last line + 1, rows) per table, 0-based line indexes; a Markdown
    table's header row (the line above its separator) belongs to it. [] for a text over MAX_CHARS."""
    if len(text) > MAX_CHARS:
        return []
    lines = text.split("\n")
    runs: list[tuple[int, int, int]] = []
    start = last = -1
    names: list[str] = []

    def close() -> None:
        if names and len(set(names)) >= MIN_NAMES and len(set(names)) >= _DISTINCT * len(names):
            first = start
            if first >= 2 and _FILLER.match(lines[first - 1]) and "|" in lines[first - 2]:  # | value | name |
                first -= 2
            runs.append((first, last + 1, len(names)))

    for i, line in enumerate(lines):
        m = _ROW.match(line)
        if m:
            if start < 0 or i - last > _MAX_GAP + 1:
                close()
                start, names = i, []
            names.append(_name(m))
            last = i
        elif start >= 0 and not (not line.strip() or _FILLER.match(line)):
            close()
            start, last, names = -1, -1, []
    if start >= 0:
        close()
    return runs


def is_code_table(text: str) -> bool:
    """Whether ``text`` is a code table and little else: its tables' lines make up 70 % of its non-blank lines, or
    at most three lines (a title, a source line) stand outside them."""
    runs = table_runs(text)
    if not runs:
        return False
    lines = text.split("\n")
    inside: set[int] = set()
    for a, b, _ in runs:
        inside.update(range(a, b))
    outside = [x for i, x in enumerate(lines) if i not in inside and x.strip() and not _FILLER.match(x)]
    body = sum(1 for i in inside if lines[i].strip() != "")
    return len(outside) <= 3 or body >= 0.7 * (body + len(outside))


def mask_code_tables(text: str) -> str:
    """``text`` with every code table's lines emptied (the line count kept, so later line numbers still match)."""
    runs = table_runs(text)
    if not runs:
        return text
    lines = text.split("\n")
    for a, b, _ in runs:
        for i in range(a, b):
            lines[i] = ""
    return "\n".join(lines)
