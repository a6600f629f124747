"""Kernel log text (``dmesg``, ``journalctl -k``, syslog) -> NVRM messages and XID events.

The NVIDIA driver prints long messages over several lines, each continuation again prefixed with
``NVRM:`` (and, in dmesg, indented under the timestamp). :func:`join_nvrm` joins them so that a
message such as "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has
fallen off the bus" is one line. XID lines: ``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has
fallen off the bus.`` (source: NVIDIA XID errors guide, https://docs.nvidia.com/deploy/xid-errors/index.html).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpudoctor.facts.model import XidEvent
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean, clip

_PREFIX = re.compile(r"^\s*(?:\[\s*[\d.]+\]\s*|<\d+>\s*|\w{3}\s+\d+\s+[\d:]+\s+\S+\s+kernel:\s*(?:\[\s*[\d.]+\]\s*)?)?")
_NVRM = re.compile(r"NVRM:\s*(.*)$")
# "NVRM: Xid (PCI:0000:3b:00): 79, ..."; on a MIG GPU the GPU and compute instance follow the address:
# "(PCI:0000:01:00 GPU-I:05)", "(PCI:0000:17:00 GPU-I:01 GPU-CI:00)" (open-gpu-kernel-modules kernel_rc.c, 470+)
_XID = re.compile(r"NVRM:\s*Xid\s*\(\s*(?:PCI:)?([0-9A-Fa-f:.]+)(?:\s+GPU-C?I:\s*\d+)*\s*\)\s*:\s*(\d+)\b(.*)$")


def is_xid_line(line: str) -> bool:
    """Whether the Xid parser reads an Xid event from ``line``."""
    return "Xid" in line and _XID.search(line) is not None
_BDF = re.compile(r"\b((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\b")


@dataclass
class KernelLog:
    messages: list[str] = field(default_factory=list)  # NVRM messages, continuations joined
    xids: list[XidEvent] = field(default_factory=list)
    joined_text: str = ""  # the whole text with NVRM continuations joined (for signature matching)


def _is_continuation(line: str) -> bool:
    stripped = line.strip()
    return bool(line[:1].isspace() and stripped and not stripped.startswith("[")
                and not ("Xid" in stripped and _XID.search(stripped)))


def join_nvrm(text: str) -> str:
    """Join NVRM continuation lines (a line that is only an indented ``NVRM: ...`` after another NVRM line).

    Only the lines after a line holding ``NVRM:`` are looked at (string search: a kernel log of any size, or an NCCL
    log with a few driver lines in it, parsers/stream.py); a text with nothing to join is returned as it is.
    """
    t = clean(text)
    n = len(t)
    out: list[str] = []
    last = 0  # t[last:] not yet copied to out
    p = t.find("NVRM:")
    while p >= 0:
        ls = t.rfind("\n", 0, p) + 1
        le = t.find("\n", p)
        if le < 0:
            break
        head, q = t[ls:le], le + 1
        joined = False
        while q <= n:
            ne = t.find("\n", q)
            ne = n if ne < 0 else ne
            line = t[q:ne]
            if not _is_continuation(line):
                break
            stripped = line.strip()
            rest = stripped[len("NVRM:"):].strip() if stripped.startswith("NVRM:") else stripped
            head = head.rstrip() + " " + rest
            joined, q = True, ne + 1
        if joined:
            out += [t[last:ls], head]
            last = q - 1  # the newline before the next line (or the end)
        p = t.find("NVRM:", q)
    if not out:
        return t
    out.append(t[last:])
    return "".join(out)


def parse_kernel_log(text: str) -> KernelLog:
    """Parse kernel log lines: NVRM messages (joined) and XID events (code, PCI address).

    Raises ParseError when the text has no NVRM line and no XID line.
    """
    joined = join_nvrm(text)
    log = KernelLog(joined_text=joined)
    p = joined.find("NVRM:")  # only the lines that hold it (string search: kernel logs of any size)
    while p >= 0:
        ls = joined.rfind("\n", 0, p) + 1
        le = joined.find("\n", p)
        le = len(joined) if le < 0 else le
        line = joined[ls:le]
        x = _XID.search(line) if "Xid" in line else None
        if x:
            bus = x.group(1).rstrip(":")
            log.xids.append(XidEvent(xid=int(x.group(2)), pci_bus_id=bus, line=clip(line.strip(), 300)))
        m = _NVRM.search(line)
        if m:
            log.messages.append(clip("NVRM: " + m.group(1).strip(), 400))
        p = joined.find("NVRM:", le)
    if not log.messages and not log.xids:
        raise ParseError("no NVRM or Xid line")
    return log


def first_bdf(message: str) -> str | None:
    """The first PCI address in a kernel message, e.g. '0000:b3:00.0'."""
    m = _BDF.search(message)
    return m.group(1) if m else None
