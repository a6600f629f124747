"""``nvidia-bug-report.log[.gz]`` (what NVIDIA support asks for, written by ``nvidia-bug-report.sh``) -> its sections,
each diagnosed by the parser of what it holds.

The layout, from the script itself (its ``append`` / ``report_file`` / ``report_command`` helpers, driver branches
3xx to 580): every section starts with a line of 44 underscores and an empty line, then a title line:

* a file: ``*** /proc/driver/nvidia/version``, then ``*** ls: -r--r--r-- 1 root root 0 ... /proc/...`` and the file's
  content (``*** /path does not exist`` / ``is not readable`` when absent);
* a command: ``/usr/bin/nvidia-smi --query`` (its path as ``which`` gives it), an empty line, the output; several
  commands can follow in one section (nvidia-smi --query, --query --unit, nvlink --status ...), each again a
  path line between empty lines;
* the kernel logs: ``dmesg:`` and ``Scanning kernel log files for NVIDIA kernel messages:`` (lines of
  /var/log/messages, kern.log and ``journalctl -b -N`` that match NVRM / nvidia-);
* the prologue ``Start of NVIDIA bug report log file.`` (with ``uname:``), ``Skipping: ...`` notes of the script.

Only the sections that are logs are searched for error signatures; configuration, registry, ACPI / EDID dumps
and the script's own skip/error tables are never read as errors (their words "error" / "failed" describe
settings or the collection, not the host).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpudoctor.parsers import detect as D
from gpudoctor.parsers._text import clean

SEPARATOR = re.compile(r"^_{30,}[ \t]*$")
#: a command title inside a section: an absolute path to an executable at column 0 (report_command)
_COMMAND = re.compile(r"^/\S*/(?:s?bin)/([\w.+-]+)(?:[ \t]+(.*?))?[ \t]*$")
_KERNEL_FILES = re.compile(r"^(?:/var/log/(?:messages|kern\.log|kernel\.log|dmesg|syslog)(?:\.\d+)?"
                           r"|journalctl -b -?\d+|dmesg:?)$")
#: the sources inside the kernel-log scan section: "  /var/log/kern.log:" and "  journalctl -b -1:" (2 spaces)
_SCAN_SOURCE = re.compile(r"^  (/var/log/\S+|journalctl -b -?\d+):[ \t]*$")
SCAN_TITLE = "Scanning kernel log files for NVIDIA kernel messages:"
#: service logs and statuses worth searching for errors (fabric manager, IMEX, persistenced)
_SERVICE_LOGS = re.compile(r"^(?:/var/log/(?:fabricmanager|nvidia-imex|nvidia-persistenced)[\w.-]*\.log"
                           r"|/\S*systemctl status \S*nvidia-(?:fabricmanager|imex|persistenced)\S*)")
#: "/proc/driver/nvidia/version"; "/proc/driver/nvidia/./version" (3xx/4xx scripts: one entry per module instance,
#: "." for the single one) and "/proc/driver/nvidia/0/version" (multi-instance nvidia-frontend hosts)
_VERSION_FILE = re.compile(r"^/proc/driver/nvidia/(?:\./|\d+/)?version$")
_NO_MODULE = "*** /proc/driver/nvidia/version does not exist"
_LINK_LINES = re.compile(r"^\s+(?:LnkCap|LnkSta|ACSCtl):", re.M)
BUG_REPORT = D.BUG_REPORT
NO_MODULE_TITLE = "/proc/driver/nvidia/version (does not exist)"
LEADING_TITLE = "(text before the first section)"


@dataclass
class Section:
    title: str   # the file path or the command line, as the script printed it
    body: str    # what follows the title (the file content or the command output)
    kinds: list[str]  # the formats to read it as; [] = not diagnosed (configuration, dumps)


def is_bug_report(text: str) -> bool:
    return D.is_bug_report_piece(text)


def _classify(title: str, body: str) -> list[str]:
    """The formats a section is read as, from its title (what the script ran or read) and, within that, its body."""
    m = _COMMAND.match(title)
    cmd, args = (m.group(1), m.group(2) or "") if m else ("", "")
    if title == SCAN_TITLE or _KERNEL_FILES.match(title) or _SERVICE_LOGS.match(title):
        # what a saved kernel / service log gets on its own: kernel-log facts when it holds NVRM lines, the
        # signature catalogue and its error lines when it holds error-looking lines
        return [k for k in D.detect(body) if k in (D.DMESG, D.ERRORS)]
    if _VERSION_FILE.match(title):
        return [D.DRIVER_VERSION]
    if title == "/proc/meminfo":
        return [D.MEMINFO]
    if cmd == "nvidia-smi":
        if "--unit" in args or "conf-compute" in args or "--errorcounters" in args or "remotelinkinfo" in args:
            return []  # S-class units, confidential computing, NVLink counters: no parser reads them
        found = [k for k in D.detect(body) if k in (D.SMI_Q, D.SMI, D.NVLINK, D.TOPO, D.SMI_XML)]
        return found
    if cmd == "lspci" and _LINK_LINES.search(body):  # -vvv / -nnDvvvxxxx (not -t, -nn, or -v without link states)
        return [D.LSPCI]
    return []


def split_sections(text: str, carried_title: str | None = None) -> list[Section]:
    """The sections of a bug report (or of a piece of one: text before its first separator continues the section
    titled ``carried_title``). Sections whose title cannot be read are kept with the title ''."""
    out: list[Section] = []
    title: str | None = carried_title
    body: list[str] = []
    want_title = False  # text before the first separator (a paste cut mid-section) has no known title

    def close() -> None:
        if title is not None or body:
            t = title or ""
            b = "\n".join(body).strip("\n")
            if not out and title is None and carried_title is None and b.strip():
                # what a paste holds before the report (a message, an error): read as any text would be
                out.append(Section(LEADING_TITLE, b, [k for k in D.detect(b) if k != D.BUG_REPORT]))
                return
            out.append(Section(t, b, _classify(t, b) if t else []))

    blank_before = True
    for line in clean(text).split("\n"):
        if SEPARATOR.match(line):
            close()
            title, body, want_title, blank_before = None, [], True, True
            continue
        s = line.strip()
        if want_title:
            if not s:
                continue
            want_title = False
            if s.startswith("*** ") and not s.startswith("*** ls:"):
                title = s[4:].strip().replace("/./", "/")
                if s.replace("/./", "/") == _NO_MODULE:
                    title = NO_MODULE_TITLE  # a fact: the NVIDIA kernel module is not loaded
                elif title.endswith((" does not exist", " is not readable")):
                    title = ""
            else:
                title = s
            continue
        if line.startswith("*** ls:") and not body:
            continue  # the file's metadata (echo_metadata)
        src = _SCAN_SOURCE.match(line) if title is not None and (title == SCAN_TITLE or _SCAN_SOURCE.match(
            "  " + title + ":")) else None
        if src:  # each log the scan grepped is its own source (the same Xid is in several: see dedupe_xids)
            close()
            title, body = src.group(1), []
            continue
        if blank_before and _COMMAND.match(line) and title is not None and _COMMAND.match(title):
            close()  # the next report_command of the same section
            title, body = line.strip(), []
            continue
        body.append(line)
        blank_before = not s
    close()
    return out


def host_from_uname(text: str) -> Any:
    """HostFacts (kernel release, arch) from the prologue's ``uname: Linux host 5.15.0-91-generic #101 ... x86_64``."""
    from gpudoctor.facts.model import HostFacts

    m = re.search(r"^uname: Linux (\S+) (\S+) .*?\b(x86_64|aarch64|ppc64le)\b", text, re.M)
    if not m:
        return None
    return HostFacts(source="nvidia-bug-report.log (uname)", hostname=m.group(1), kernel=m.group(2), arch=m.group(3))


def dedupe_xids(per_source: list[list]) -> list:
    """One list of Xid events from several logs of the same host (dmesg, kern.log, journalctl -b 0 hold the same
    events): for each event (code, PCI address, message after the code) the count of the log that has it most often,
    so that a repeated Xid stays repeated and one seen in three logs counts once."""
    def key(x: Any) -> tuple:
        return x.xid, x.pci_bus_id, re.sub(r"^.*?\bXid\b", "", x.line or "")

    best: dict[tuple, tuple[int, int]] = {}  # key -> (count, source index)
    for i, events in enumerate(per_source):
        counts: dict[tuple, int] = {}
        for x in events:
            counts[key(x)] = counts.get(key(x), 0) + 1
        for k, n in counts.items():
            if n > best.get(k, (0, -1))[0]:
                best[k] = (n, i)
    return [x for i, events in enumerate(per_source) for x in events if best[key(x)][1] == i]


def _dedupe_hits(per_source: list[list]) -> list:
    """Per signature, the hit of the kernel log that matched it most often (dmesg, kern.log and the journal quote
    the same kernel messages)."""
    best: dict[str, Any] = {}
    for hits in per_source:
        for h in hits:
            if h.id not in best or h.count > best[h.id].count:
                best[h.id] = h
    return list(best.values())


ParseFile = Callable[..., "str | None"]


def _no_module(path: str, col: Any, info: Any) -> None:
    """The script found no /proc/driver/nvidia/version: the NVIDIA kernel module was not loaded when it ran (the file
    exists while it is). Added after the sections, so an nvidia-smi section's own answer comes first."""
    from gpudoctor.facts.model import NvmlFacts
    from gpudoctor.parsers.offline import Fragment

    nv = NvmlFacts(source="nvidia-bug-report.log (*** /proc/driver/nvidia/version does not exist)", available=False,
                   error="the NVIDIA kernel module is not loaded (/proc/driver/nvidia/version does not exist)",
                   kernel_module=None)
    col.fragments.append(Fragment("nvml", nv, path))
    info.sections.append("nvml")


def parse_bug_report(path: str, text: str, col: Any, parse_file: ParseFile) -> str | None:
    """Diagnose each section of a bug report (or of one chunk of a large one) with ``parse_file(path, body, col,
    kinds)``; the InputFiles that gives become one, of kind 'nvidia-bug-report.log'. Returns None (a bug report is
    a valid input even when no section holds facts: it is listed with a note)."""
    from gpudoctor.facts.model import InputFile
    from gpudoctor.parsers.stream import _merge_inputs

    start = len(col.inputs)
    continued = path in col.bundle_titles
    sections = split_sections(text, col.bundle_titles.get(path))
    col.bundle_titles[path] = sections[-1].title if sections else ""
    # a section cut by a piece boundary (the first of a later piece, the last of any) is an excerpt: when its
    # parser cannot read it, that is no fault of the input (the other piece holds the rest)
    cut = {id(sections[-1])} | ({id(sections[0])} if continued else set()) if sections else set()
    # nvidia-smi first: its NVML verdict (or its "Failed to initialize NVML") wins over the other sections' facts
    order = sorted(sections, key=lambda s: 0 if D.SMI_Q in s.kinds or D.SMI in s.kinds else 1)
    notes: list[str] = []
    per_source: list[list] = []
    kernel_hits: list[list] = []
    for sec in order:
        if not sec.kinds or not sec.body.strip():
            continue
        n0, h0 = len(col.xids), len(col.hits)
        err = parse_file(path, sec.body + "\n", col, list(sec.kinds), in_bundle=True)
        per_source.append(col.xids[n0:])
        del col.xids[n0:]
        if D.DMESG in sec.kinds:  # the kernel logs hold the same events: their signature hits count once too
            kernel_hits.append(col.hits[h0:])
            del col.hits[h0:]
        if err and id(sec) not in cut:
            notes.append(f"{sec.title}: {err.split(': ', 1)[-1]}")
    col.xids += dedupe_xids(per_source)
    col.hits += _dedupe_hits(kernel_hits)
    host = next((host_from_uname(s.body) for s in sections if "Start of NVIDIA bug report" in s.title), None)
    info = InputFile(path=path, kinds=[BUG_REPORT])
    if any(s.title == NO_MODULE_TITLE for s in sections):
        _no_module(path, col, info)
    if host is not None:
        from gpudoctor.parsers.offline import Fragment

        col.fragments.append(Fragment("host", host, path))
        info.sections.append("host")
    col.inputs.insert(start, info)
    _merge_inputs(col, start)
    info = col.inputs[start]
    if notes:
        info.note = ((info.note + "; ") if info.note else "") + "; ".join(notes)
    if info.note and len(info.note) > 600:
        info.note = info.note[:597] + "..."
    return None
