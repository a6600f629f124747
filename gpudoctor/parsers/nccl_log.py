"""``NCCL_DEBUG=INFO`` / ``WARN`` logs -> NcclLogFacts (version, network, transports, GDR, env, WARN lines).

Lines look like ``host:pid:tid [dev] NCCL INFO ...`` (the host prefix may be missing in pastes).
Sources: NCCL user guide, Environment Variables (NCCL_DEBUG) and Troubleshooting,
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
"""
from __future__ import annotations

import re

from gpudoctor.facts.model import NcclLogFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean, clip

_LINE = re.compile(r"^(?:(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[\d+\]\s+)?.*?"
                   r"NCCL\s+(?P<lvl>INFO|WARN|TRACE)\s+(?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version\s+([\d.]+(?:\+\S+)?)")
_TRANSPORT = re.compile(r"Channel\s+\d+(?:/\d+)?\s*:\s*\S+\s*->\s*\S+(?:\s*\[(send|receive)\])?\s+via\s+(\S+)")
_ENV = re.compile(r"^(NCCL_[A-Z0-9_]+) set by environment to (.*?)\s*\.?$")
_GDR_OFF = re.compile(r"GPU Direct RDMA Disabled for HCA \d+ '([^']+)'")
MAX_WARN = 20


_NUM = re.compile(r"(\d+)")
_IB_USING = re.compile(r"NET/IB\s*:\s*Using\s*\[\d")
_NET = re.compile(r"Using network (\S+)")
_NRANKS = re.compile(r"\bnranks\s+(\d+)", re.IGNORECASE)
_NVLS = re.compile(r"(\d+) nvls channels")
_LEVELS = ("INFO", "WARN", "TRACE")
_PREFIX = re.compile(r"([^\s:]+):\d+:\d+\s+\[\d+\]\s+")


def _level(line: str) -> tuple[str, str] | None:
    """(level, message) of an 'NCCL INFO|WARN|TRACE message' line (same as _LINE, without its lazy scan)."""
    k = line.find("NCCL ")
    while k >= 0:
        rest = line[k + 5:]
        for lvl in _LEVELS:
            if rest.startswith(lvl) and (len(rest) == len(lvl) or rest[len(lvl)].isspace()):
                return lvl, rest[len(lvl):].strip()
        k = line.find("NCCL ", k + 5)
    if "NCCL\t" in line or "NCCL  " in line:  # unusual spacing
        m = _LINE.match(line)
        if m:
            return m.group("lvl"), m.group("msg").strip()
    return None


def _transport(msg: str) -> str | None:
    """The transport of a 'Channel 00/0 : 0[0] -> 1[1] via P2P/IPC' message (string operations for the
    common form, _TRANSPORT for anything else)."""
    if msg.startswith("Channel ") and " -> " in msg:
        tail = msg.rsplit(" via ", 1)[1].split()
        if tail:
            return tail[0]
    t = _TRANSPORT.search(msg)
    return t.group(2) if t else None


def _host(line: str) -> str | None:
    m = _PREFIX.match(line)
    return m.group(1) if m else None


def parse_nccl_log(text: str) -> NcclLogFacts:
    """Parse NCCL debug output. Raises ParseError when no 'NCCL INFO/WARN' line (nor 'NCCL version') is present.

    Each line is dispatched by cheap substring tests before any regular expression runs (a 512-rank INFO log is
    gigabytes; see docs/benchmarks.md); the facts are those of the line-by-line regexes above.
    """
    f = NcclLogFacts()
    seen = False
    transports: list[str] = []
    for raw in clean(text).split("\n"):
        if "NCCL" not in raw:
            continue
        line = raw.strip()
        if "NCCL version" in line:
            v = _VERSION.search(line)
            if v and f.version is None:
                f.version = v.group(1)
                seen = True
        found = _level(line)
        if found is None:
            if "set by environment" in line:
                e = _ENV.match(line)  # a quoted INFO line without its 'host:pid:tid [n] NCCL INFO' prefix
                if e:
                    f.env_set[e.group(1)] = e.group(2)
                    seen = True
            continue
        seen = True
        lvl, msg = found
        if lvl == "WARN":
            if len(f.warnings) < MAX_WARN:
                f.warnings.append(clip(msg, 300))
            continue
        if " via " in msg and "Channel" in msg:
            tr = _transport(msg)
            if tr:
                if tr not in transports:
                    transports.append(tr)
                host = _host(line) if tr.startswith("NET/") else None
                if host:
                    lst = f.host_net_transports.setdefault(host, [])
                    if tr not in lst:
                        lst.append(tr)
                continue
        if msg.startswith("cudaDriverVersion"):
            n = _NUM.search(msg)
            if n:
                num = int(n.group(1))
                f.cuda_driver_version = f"{num // 1000}.{num % 1000 // 10}"
        if "NET/IB" in msg:
            if "NET/IB : No device found" in msg:
                f.ib_device_found = False
            elif _IB_USING.search(msg):
                f.ib_device_found = True
        if msg.startswith("Using network"):
            u = _NET.match(msg)
            if u:
                f.net = u.group(1)
        if "GPU Direct RDMA Disabled" in msg:
            g = _GDR_OFF.search(msg)
            if g and g.group(1) not in f.gdr_disabled_hcas:
                f.gdr_disabled_hcas.append(g.group(1))
        if "set by environment" in msg:
            e = _ENV.match(msg)
            if e:
                f.env_set[e.group(1)] = e.group(2)
        if f.nranks is None and "nranks" in msg.lower():
            r = _NRANKS.search(msg)
            if r:
                f.nranks = int(r.group(1))
        if "nvls channels" in msg:
            c = _NVLS.search(msg)
            if c:
                f.nvls_channels = int(c.group(1))
        if "Init COMPLETE" in msg:
            f.init_complete = True
    if not seen:
        raise ParseError("no 'NCCL INFO' / 'NCCL WARN' line")
    f.transports = transports
    return f
