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

_LINE = re.compile(r"^(?:(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[\d+\]\s+)?.*?NCCL\s+(?P<lvl>INFO|WARN|TRACE)\s+(?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version\s+([\d.]+(?:\+\S+)?)")
_TRANSPORT = re.compile(r"Channel\s+\d+(?:/\d+)?\s*:\s*\S+\s*->\s*\S+(?:\s*\[(send|receive)\])?\s+via\s+(\S+)")
_ENV = re.compile(r"^(NCCL_[A-Z0-9_]+) set by environment to (.*?)\s*\.?$")
_GDR_OFF = re.compile(r"GPU Direct RDMA Disabled for HCA \d+ '([^']+)'")
MAX_WARN = 20


def parse_nccl_log(text: str) -> NcclLogFacts:
    """Parse NCCL debug output. Raises ParseError when no 'NCCL INFO/WARN' line (nor 'NCCL version') is present."""
    f = NcclLogFacts()
    seen = False
    transports: list[str] = []
    for raw in clean(text).split("\n"):
        line = raw.strip()
        v = _VERSION.search(line)
        if v and f.version is None:
            f.version = v.group(1)
            seen = True
        m = _LINE.match(line)
        if not m:
            e = _ENV.match(line)  # a quoted INFO line without its 'host:pid:tid [n] NCCL INFO' prefix
            if e:
                f.env_set[e.group(1)] = e.group(2)
                seen = True
            continue
        seen = True
        msg, lvl, host = m.group("msg").strip(), m.group("lvl"), m.group("host")
        if lvl == "WARN":
            if len(f.warnings) < MAX_WARN:
                f.warnings.append(clip(msg, 300))
            continue
        if msg.startswith("cudaDriverVersion"):
            n = re.search(r"(\d+)", msg)
            if n:
                num = int(n.group(1))
                f.cuda_driver_version = f"{num // 1000}.{num % 1000 // 10}"
        if "NET/IB : No device found" in msg:
            f.ib_device_found = False
        elif re.search(r"NET/IB\s*:\s*Using\s*\[\d", msg):
            f.ib_device_found = True
        u = re.match(r"Using network (\S+)", msg)
        if u:
            f.net = u.group(1)
        g = _GDR_OFF.search(msg)
        if g and g.group(1) not in f.gdr_disabled_hcas:
            f.gdr_disabled_hcas.append(g.group(1))
        e = _ENV.match(msg)
        if e:
            f.env_set[e.group(1)] = e.group(2)
        t = _TRANSPORT.search(msg)
        if t:
            tr = t.group(2)
            if tr not in transports:
                transports.append(tr)
            if tr.startswith("NET/") and host:
                lst = f.host_net_transports.setdefault(host, [])
                if tr not in lst:
                    lst.append(tr)
        r = re.search(r"\bnranks\s+(\d+)", msg, re.IGNORECASE)
        if r and f.nranks is None:
            f.nranks = int(r.group(1))
        c = re.search(r"(\d+) nvls channels", msg)
        if c:
            f.nvls_channels = int(c.group(1))
        if "Init COMPLETE" in msg:
            f.init_complete = True
    if not seen:
        raise ParseError("no 'NCCL INFO' / 'NCCL WARN' line")
    f.transports = transports
    return f
