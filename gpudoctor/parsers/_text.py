"""Small text helpers shared by the parsers (no I/O)."""
from __future__ import annotations

import re

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGTPE]?)(i?B?)\s*$", re.IGNORECASE)
_POW = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
NA = {"", "n/a", "[n/a]", "na", "none", "not supported", "[not supported]", "could not collect", "unknown",
      "requested functionality has been deprecated", "[unknown error]", "err!", "[gpu is lost]"}


def clean(text: str) -> str:
    """Normalise line ends, drop ANSI escape codes (nvidia-smi topo underlines), NULs and byte-order marks.

    A text that has none of them is returned as it is (each test is one C-speed search: the parsers of a large log
    call this on the same chunk several times)."""
    if "\r" not in text and "\x1b" not in text and "\x00" not in text and "\ufeff" not in text:
        return text
    return ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).replace("\x00", "").replace("\ufeff", "")


def clip(text: str, limit: int, focus: int = 0) -> str:
    """``text`` shortened to about ``limit`` characters at word boundaries, with "…" where it was cut.

    ``focus`` (a character index) is kept inside the excerpt: a long line is cut around the part that matters
    (a signature's match), not before it. Evidence is quoted to a human, so it is never cut mid-word.
    """
    if len(text) <= limit:
        return text
    start = 0
    if focus > limit * 2 // 3:
        start = max(0, min(focus - limit // 3, len(text) - limit))
        sp = text.find(" ", start)
        start = sp + 1 if 0 <= sp < start + 40 else start
    end = start + limit
    if end < len(text):
        sp = text.rfind(" ", start + limit // 2, end)
        end = sp if sp > 0 else end
    return ("… " if start else "") + text[start:end].rstrip() + (" …" if end < len(text) else "")


def na(value: str | None) -> bool:
    return value is None or value.strip().lower() in NA


def to_int(value: str | None) -> int | None:
    """'16x' -> 16, '5' -> 5, '0x1F' -> 31, 'N/A' -> None; the first integer in the string."""
    if value is None or na(value):
        return None
    v = value.strip()
    if re.match(r"^0x[0-9a-fA-F]+$", v):
        return int(v, 16)
    m = re.search(r"-?\d+", v)
    return int(m.group()) if m else None


def to_float(value: str | None) -> float | None:
    """'700.00 W' -> 700.0; 'N/A' -> None."""
    if value is None or na(value):
        return None
    m = re.search(r"-?\d+(?:\.\d+)?", value)
    return float(m.group()) if m else None


def to_bool(value: str | None) -> bool | None:
    """Enabled/Disabled, Yes/No, On/Off, True/False, Active/Not Active -> bool; else None."""
    if value is None or na(value):
        return None
    v = value.strip().lower()
    if v in ("enabled", "yes", "on", "true", "active", "1"):
        return True
    if v in ("disabled", "no", "off", "false", "not active", "0"):
        return False
    return None


def size_bytes(value: str | None, default_unit: str = "") -> int | None:
    """'143771MiB' / '143771 MiB' -> bytes (binary units); '128G' / '1.0M' (df -h) -> bytes (binary, as df -h).

    ``default_unit`` ('K' for df 1K-blocks or ulimit kbytes) applies when the value has no unit.
    Returns None for N/A or unreadable values.
    """
    if value is None or na(value):
        return None
    m = _SIZE.match(value.replace(",", ""))
    if not m:
        return None
    num, unit = float(m.group(1)), (m.group(2) or default_unit).upper()
    return int(num * 1024 ** _POW.get(unit, 0))


_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.M)


def unquote(text: str, limit: int = 1 << 20) -> str:
    """``text`` without e-mail / Markdown quote markers ("> " at the start of each line) when it is a quoted paste:
    at least 80 % of its non-empty lines carry one (a reply quoting an nvidia-smi table or a traceback). Other texts,
    and texts over ``limit`` characters (logs, not pastes), are returned as they are."""
    if len(text) > limit or not text.lstrip()[:1] == ">":
        return text
    lines = [x for x in text.split("\n") if x.strip()]
    quoted = sum(1 for x in lines if x.lstrip().startswith(">"))
    return _QUOTE.sub("", text) if lines and quoted >= 0.8 * len(lines) else text


_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)"
_JOURNAL_TIME = r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?[+-]\d\d:?\d\d)"
#: what log collectors write before every line of a program's output, most specific first: the Kubernetes CRI log
#: file (/var/log/containers/*.log: "<RFC 3339 time> stderr F <line>", P for a line the runtime split), `kubectl logs
#: --prefix` ("[pod/<pod>/<container>] <line>", with --timestamps the time after it), `kubectl logs --timestamps` /
#: `docker logs -t` ("<RFC 3339 time> <line>"), journald's short and short-iso forms ("Dec 04 12:00:00 host
#: unit[pid]: <line>"), `srun --label` ("  3: <line>", the task id right-aligned), Open MPI's `mpirun --tag-output`
#: ("[1,3]<stderr>:<line>", job id and rank), Ray's worker prefix ("(RayTrainWorker pid=4321, ip=10.0.0.12) <line>")
#: and `docker compose logs` ("trainer-1  | <line>")
LINE_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cri", re.compile(rf"^{_ISO} (?:stdout|stderr) (?P<tag>[FP]) ?")),
    ("kubectl --prefix", re.compile(rf"^\[pod/[^/\]\s]+/[^\]\s]+\] (?:{_ISO} )?")),
    ("journald", re.compile(rf"^{_JOURNAL_TIME} [\w.-]+ (?!kernel:)[\w.@/:-]+?(?:\[\d+\])?: ")),
    ("timestamps", re.compile(rf"^{_ISO} ")),
    ("srun --label", re.compile(r"^ {0,4}(?P<task>\d{1,5}): ")),
    ("mpirun --tag-output", re.compile(r"^\[\d+,(?P<task>\d+)\]<(?:stdout|stderr|stddiag)>: ?")),
    ("ray", re.compile(r"^\((?:[\w.:-]+ )?pid=\d+(?:, ip=[\d.:a-fA-F]+)?\) ")),
    ("compose", re.compile(r"^[\w.-]+-\d+ +\| ")),
)
#: lines a prefix's log holds that keep their own prefix: journald's kernel lines, which parsers/dmesg.py reads with
#: it ("Dec 04 12:00:00 host kernel: NVRM: Xid ..."): they count as that log's lines but are not rewritten
_KEPT = {"journald": re.compile(rf"^{_JOURNAL_TIME} [\w.-]+ kernel: ")}
#: prefixes a program's own lines could start with by chance ("12: ", a time stamp, "name-1 | "): they must start
#: 80 % of the lines; the others (a CRI tag, kubectl's [pod/...], Open MPI's [1,3]<stderr>:, Ray's (... pid=N)) half,
#: as a launcher's own footer lines (mpirun's, torchrun's) carry none
_LOOSE = ("timestamps", "srun --label", "compose")
#: the prefixes whose task number is the process's rank (SLURM_PROCID; Open MPI's rank in [jobid,rank])
_TASK_IS_RANK = ("srun --label", "mpirun --tag-output")
#: torch's own rank prefix, which a line under srun --label may carry already (torchrun started by srun)
_RANK_PREFIX = re.compile(r"\[rank\d+\]:")


def strip_line_prefixes(text: str, sample: int = 200) -> str:
    """``text`` without the collector's prefix of LINE_PREFIXES on each line, when one prefix starts enough of the
    first ``sample`` non-empty lines (80 % for the prefixes a program could print by chance, _LOOSE; half for the
    others) -- a log saved by kubectl, the container runtime, journald, srun --label, mpirun, Ray or docker
    compose: tracebacks, multi-line messages and the code lines of a frame then read as the program printed
    them. Other texts are returned as they are.

    CRI lines tagged P (split by the runtime) are joined to the line that continues them, followed by as many empty
    lines as were joined (line numbers stay those of the file). srun's task id becomes torch's ``[rankN]:`` prefix
    (the task id is SLURM_PROCID, the rank when srun starts the training processes) unless the line carries torch's
    own (torchrun under srun). journald's kernel lines keep their prefix (_KEPT)."""
    head = [x for x in text[: 1 << 16].split("\n", sample + 1)[:sample] if x.strip()]
    if len(head) < 2:
        return text
    for name, rx in LINE_PREFIXES:
        kept = _KEPT.get(name)
        share = 0.8 if name in _LOOSE else 0.5
        if sum(1 for x in head if rx.match(x) or (kept is not None and kept.match(x))) < share * len(head):
            continue
        out: list[str] = []
        partial = ""
        joined = 0
        for line in text.split("\n"):
            m = rx.match(line)
            if m is None:
                out.append(partial + line)
                out.extend([""] * joined)
                partial, joined = "", 0
                continue
            body = line[m.end():]
            if name == "cri" and m.group("tag") == "P":
                partial += body
                joined += 1
                continue
            if name in _TASK_IS_RANK and not _RANK_PREFIX.match(body):
                body = f"[rank{int(m.group('task'))}]: {body}"
            out.append(partial + body)
            out.extend([""] * joined)
            partial, joined = "", 0
        if partial:
            out.append(partial)
            out.extend([""] * joined)
        return "\n".join(out)
    return text


#: the fields that carry a log line in JSON-lines logs: docker's json-file driver ("log"), Kubernetes / Cloud Logging
#: exports ("textPayload", "message"), structured Python loggers ("msg", "message", "exc_info", "exception", "exc")
JSON_LOG_FIELDS = ("log", "message", "msg", "MESSAGE", "textPayload", "exc_info", "exception", "exc", "traceback",
                   "stack_trace", "error")


def unwrap_json_lines(text: str, sample: int = 200) -> str:
    """The log text inside a JSON-lines log (one JSON object per line, each with a string field of JSON_LOG_FIELDS),
    one field value per line in order; ``text`` itself when it is not one (most of the first ``sample`` non-empty
    lines must be such objects) or when it is a gpudoctor JSON document (a "schema_version" or "kind" key)."""
    import json

    if not text.lstrip().startswith("{"):
        return text
    lines = [x for x in text.split("\n") if x.strip()]
    out: list[str] = []
    good = 0
    for i, line in enumerate(lines):
        try:
            obj = json.loads(line)
        except ValueError:
            if i < sample:
                continue
            out.append(line)
            continue
        if not isinstance(obj, dict) or "schema_version" in obj or str(obj.get("kind", "")).startswith("gpudoctor"):
            return text
        vals = [obj[k] for k in JSON_LOG_FIELDS if isinstance(obj.get(k), str) and obj[k].strip()]
        if vals:
            good += i < sample
            out.append("\n".join(v.rstrip("\n") for v in vals))
    if good < 0.8 * min(len(lines), sample):
        return text
    return "\n".join(out) + "\n"


def int_ranges(nums) -> str:
    """'0-3, 7, 9-10' for [0, 1, 2, 3, 7, 9, 10] (any order; duplicates once)."""
    vals = sorted(set(nums))
    out: list[str] = []
    i = 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ", ".join(out)


def unwrap_notebook(text: str) -> str:
    """The outputs of a Jupyter notebook's code cells (stream text, an error's traceback and 'ename: evalue', plain
    text results), in cell order: what the user saw run; ``text`` itself when it is not a notebook (nbformat 4 JSON
    with a list of cells). The cells' source is code, not output, and is left out."""
    import json

    if not text.lstrip().startswith("{") or '"cells"' not in text or '"nbformat"' not in text:
        return text
    try:
        nb = json.loads(text)
    except ValueError:
        return text
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list) or "nbformat" not in nb:
        return text

    def joined(v) -> str:
        return "".join(v) if isinstance(v, list) else v if isinstance(v, str) else ""

    out: list[str] = []
    for cell in nb["cells"]:
        for o in (cell.get("outputs") or []) if isinstance(cell, dict) else []:
            if not isinstance(o, dict):
                continue
            kind = o.get("output_type")
            if kind == "stream":
                out.append(joined(o.get("text")))
            elif kind == "error":
                out.append("\n".join(str(x) for x in o.get("traceback") or []))
                out.append(f"{o.get('ename', '')}: {o.get('evalue', '')}")
            elif kind in ("execute_result", "display_data") and isinstance(o.get("data"), dict):
                out.append(joined(o["data"].get("text/plain")))
    return clean("\n".join(x.rstrip("\n") for x in out if x)) + "\n"
