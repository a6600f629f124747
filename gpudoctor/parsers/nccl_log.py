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
_USING_IFS = re.compile(r"^(Bootstrap|NET/Socket)\s*:\s*Using\b(.*)$")
_IF_NAME = re.compile(r"(?:^|\s)(?:\[\d+\])?([^\s:\[\]<>]+):([0-9a-fA-F.:%\w-]*)<\d+>")  # [0]bond0:10.0.0.7<0>
_GDR_OFF = re.compile(r"GPU Direct RDMA Disabled for HCA \d+ '([^']+)'")
MAX_WARN = 20


_NUM = re.compile(r"(\d+)")
_IB_USING = re.compile(r"NET/IB\s*:\s*Using\s*\[\d")
_NET = re.compile(r"Using network (\S+)")
_HOST = re.compile(r"(?:^|\]:?)\s*([\w.-]+:\d+):\d+ \[\d+\]")  # "node3:1234:1290 [0] NCCL INFO ...": host:pid
MAX_HOSTS = 4096
_NRANKS = re.compile(r"\bnranks\s+(\d+)", re.IGNORECASE)
_NNODES = re.compile(r"\bnNodes (\d+)")
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


# A channel line in its common form ("host:pid:tid [dev] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", also
# behind torchrun's "[rankN]:" tee prefix), matched whole on a text of such lines each preceded by a newline. When
# every such line holds one " via " and a " -> " (checked first), what it captures is what _classify reads: the first
# level token is this INFO/TRACE, the message starts with "Channel ", and the transport is the word after " via ".
# Any other line with " via " goes through _classify.
_FAST_CHANNEL = re.compile(r"\n[ \t]*(\[rank\d+\]:)?(?:([^\s:]+):\d+:\d+[ \t]+\[\d+\][ \t]+)?NCCL (?:INFO|TRACE)[ \t]+"
                           r"Channel [^\n]* via (\S+)[^\n]*")
_DIGITS = re.compile(r"\d+")
_ANY_LEVEL = re.compile(r"NCCL (?:INFO|WARN|TRACE)(?:\s|$)", re.M)
_IB_FINDER = re.compile(r"NET/IB(?: : No device found|\s*:\s*Using\s*\[\d)")
_NRANKS_FINDER = re.compile(r"nranks", re.IGNORECASE)
_LITERAL = re.compile(r"[A-Za-z0-9 ]+")  #: a finder pattern that is a plain word (found by str.find, case folded)
#: init.cc ncclCommInitRankFunc (2.17-2.30): "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx
#: commId 0x%llx - Init START" and "... commId 0x%llx - Init COMPLETE" (the COMPLETE line carries commId since 2.19)
_INIT_LINE = re.compile(r"comm (0x[0-9a-f]+) rank (\d+) nranks (\d+) ([^\n]*)")
MAX_COMMS = 64  #: communicators reported per log, the first by appearance (a job creates a few; sub-groups add more)
#: communicators read from one text (a chunk of a large log): far more than MAX_COMMS, so that a communicator among
#: the log's first MAX_COMMS is never dropped from a later chunk that holds many others (offline_merge keeps the first
#: MAX_COMMS of all), and the chunked reading equals the whole one
MAX_COMMS_PER_TEXT = 4096  #: parse_nccl_log's max_comms for the texts `check` merges (parsers/offline_formats.py)


def _classify(raw: str) -> tuple[str, str, str | None] | None:
    """What the line-by-line parser made of one line: None (no 'NCCL'), ('', line, None) without a level,
    (level, message, transport) otherwise; the transport is set for channel lines only (level 'T')."""
    if "NCCL" not in raw:
        return None
    line = raw.strip()
    found = _level(line)
    if found is None:
        return "", line, None
    lvl, msg = found
    if lvl != "WARN" and " via " in msg and "Channel" in msg:
        tr = _transport(msg)
        if tr:
            return "T", msg, tr
    return lvl, msg, None


class _Lines:
    """The lines of a text that contain a literal (or a finder's match), in order, classified once each."""

    def __init__(self, t: str):
        self.t = t
        self._cls: dict[int, tuple[str, str, str | None] | None] = {}
        self._low: str | None = None

    def _find_nocase(self, what: re.Pattern[str], pos: int) -> int:
        """Where the case-insensitive plain word ``what`` first occurs at or after ``pos`` (-1: nowhere), as
        ``what.search`` would say: the usual spellings by str.find, then the regex over the text before the first of
        them only (another spelling could come earlier); the whole text lower-cased only when no spelling is found."""
        word = what.pattern
        found = [p for p in (self.t.find(v, pos) for v in {word, word.lower()}) if p >= 0]
        if found:
            m = what.search(self.t, pos, min(found) + len(word) - 1)
            return m.start() if m is not None else min(found)
        low = self.lower()
        if low is None:
            m = what.search(self.t, pos)
            return -1 if m is None else m.start()
        return low.find(word.lower(), pos)

    def lower(self) -> str | None:
        """The text lower-cased, when that keeps every offset (else None): a case-insensitive literal is then found
        with str.find (an IGNORECASE regex search has no fast path: ~24 ms per 4 MB where the word is absent)."""
        if self._low is None:
            low = self.t.lower()
            self._low = low if len(low) == len(self.t) else ""
        return self._low or None

    def _span(self, pos: int) -> tuple[int, int]:
        t = self.t
        end = t.find("\n", pos)
        return t.rfind("\n", 0, pos) + 1, len(t) if end < 0 else end

    def find(self, what: str | re.Pattern[str], reverse: bool = False):
        """(line, classification) of each line holding ``what``, first to last (last to first when ``reverse``)."""
        t = self.t
        spans: list[tuple[int, int]] = []
        pos = 0
        while True:
            if isinstance(what, str):
                p = t.find(what, pos)
            elif what.flags & re.IGNORECASE and _LITERAL.fullmatch(what.pattern):
                p = self._find_nocase(what, pos)
            else:
                m = what.search(t, pos)
                p = -1 if m is None else m.start()
            if p < 0:
                break
            ls, le = self._span(p)
            if not reverse:
                yield t[ls:le], self.classify(ls, le)
            else:
                spans.append((ls, le))
            pos = le + 1
        for ls, le in reversed(spans):
            yield t[ls:le], self.classify(ls, le)

    def classify(self, ls: int, le: int) -> tuple[str, str, str | None] | None:
        if ls not in self._cls:
            self._cls[ls] = _classify(self.t[ls:le])
        return self._cls[ls]


def _channel_transports(t: str) -> list[tuple[str, str | None]]:
    """(transport, host) of every channel line in order; host only where the line-by-line parser read one."""
    via = [x for x in t.split("\n") if " via " in x]
    if not via:
        return []
    joined = "\n" + "\n".join(via) + "\n"
    if joined.count(" via ") != len(via) or not all(" -> " in x.rstrip() for x in via):
        # lines with two " via " or no " -> " (WARN lines, odd forms): without a transport they are left out
        odd = [x for x in via if x.count(" via ") != 1 or " -> " not in x.rstrip()]
        if any((_classify(x) or ("", "", None))[2] for x in odd):
            joined = ""  # one of them names a transport: read every line as before, in order
        else:
            joined = "\n" + "\n".join(x for x in via if x.count(" via ") == 1 and " -> " in x.rstrip()) + "\n"
    parts = _FAST_CHANNEL.split(joined) if joined else ["\n" + "\n".join(via)]
    gaps = parts[0::4]
    ranks, hosts, trs = parts[1::4], parts[2::4], parts[3::4]
    if not any(gaps[:-1]) and gaps[-1] in ("", "\n"):  # every channel line in the common form
        return [(tr, _fast_host(r, h, tr)) for tr, r, h in dict.fromkeys(zip(trs, ranks, hosts, strict=True))]
    events: list[tuple[str, str | None]] = []
    for k, gap in enumerate(gaps):  # lines the fast pattern left: read as the line parser read them
        for raw in gap.split("\n")[1:] if gap else ():
            c = _classify(raw)
            if c is not None and c[2]:
                events.append((c[2], _host(raw.strip()) if c[2].startswith("NET/") else None))
        if k < len(trs):
            events.append((trs[k], _fast_host(ranks[k], hosts[k], trs[k])))
    return events


def _fast_host(rank: str | None, host: str | None, tr: str) -> str | None:
    """The host _host reads from a line _FAST_CHANNEL matched (NET/ transports only)."""
    if not tr.startswith("NET/"):
        return None
    if rank:  # _PREFIX then reads "[rankN]" as the host, and only when digits follow it
        return rank[:-1] if host and _DIGITS.fullmatch(host) else None
    return host


def _comm_inits(text: str, limit: int = MAX_COMMS) -> list:
    """The communicators whose Init START lines (with their commId) are in ``text``, with the ranks that started and
    completed; an Init COMPLETE without commId (NCCL before 2.19) joins the one communicator of its comm pointer.
    One regex scan of the text (no line classification: a 512-rank log holds a START and a COMPLETE line per rank
    and communicator)."""
    from gpudoctor.facts.model import NcclCommInit

    by_id: dict[str, NcclCommInit] = {}
    by_ptr: dict[str, str] = {}
    seen: set[tuple[str, str, int]] = set()  # (commId, START/COMPLETE, rank) already listed: a set, not the lists
    for m in _INIT_LINE.finditer(text):
        rest = m.group(4).rstrip()
        what = "START" if rest.endswith("Init START") else "COMPLETE" if rest.endswith("Init COMPLETE") else None
        if what is None:
            continue
        ptr, rank, nranks = m.group(1), int(m.group(2)), int(m.group(3))
        k = rest.find("commId 0x")
        cid = rest[k + 7:].split(None, 1)[0] if k >= 0 else by_ptr.get(ptr)
        if cid is None:
            continue
        c = by_id.get(cid)
        if c is None:
            if len(by_id) >= limit:
                continue
            c = by_id[cid] = NcclCommInit(comm_id=cid, nranks=nranks)
        by_ptr[ptr] = cid
        if (cid, what, rank) not in seen:
            seen.add((cid, what, rank))
            (c.started if what == "START" else c.completed).append(rank)
    return list(by_id.values())


def parse_nccl_log(text: str, max_comms: int = MAX_COMMS) -> NcclLogFacts:
    """Parse NCCL debug output. Raises ParseError when no 'NCCL INFO/WARN' line (nor 'NCCL version') is present.

    The facts are those of a line-by-line reading (_classify, one line at a time, in order); each fact is read from
    only the lines that hold its key phrase, found by string search, and the channel lines (most of a 512-rank INFO
    log, gigabytes: docs/benchmarks.md) by one regular expression over them all.
    """
    f = NcclLogFacts()
    t = clean(text)
    lines = _Lines(t)
    seen = False
    for line, _c in lines.find("NCCL version"):
        v = _VERSION.search(line.strip())
        if v:
            f.version = v.group(1)
            seen = True
            break
    for _line, c in lines.find("WARN"):
        if c and c[0] == "WARN":
            if len(f.warnings) >= MAX_WARN:
                break
            f.warnings.append(clip(c[1], 300))
    for _line, c in lines.find("set by environment"):
        if c is None or c[0] in ("WARN", "T"):
            continue
        if "set by environment" in c[1]:
            e = _ENV.match(c[1])
            if e:
                f.env_set[e.group(1)] = e.group(2)
                seen = seen or c[0] == ""

    def msgs(what: str | re.Pattern[str], reverse: bool = False):
        for _line, c in lines.find(what, reverse):
            if c is not None and c[0] in ("INFO", "TRACE"):
                yield c[1]

    for msg in msgs("cudaDriverVersion", reverse=True):
        n = _NUM.search(msg) if msg.startswith("cudaDriverVersion") else None
        if n:
            num = int(n.group(1))
            f.cuda_driver_version = f"{num // 1000}.{num % 1000 // 10}"
            break
    for msg in msgs(_IB_FINDER, reverse=True):
        if "NET/IB : No device found" in msg:
            f.ib_device_found = False
            break
        if "NET/IB" in msg and _IB_USING.search(msg):
            f.ib_device_found = True
            break
    for msg in msgs("Using network", reverse=True):
        u = _NET.match(msg) if msg.startswith("Using network") else None
        if u:
            f.net = u.group(1)
            break
    for line, c in lines.find("Using network"):
        u = _NET.match(c[1]) if c is not None and c[0] == "INFO" and c[1].startswith("Using network") else None
        h = _HOST.search(line) if u else None
        if u and h and len(f.host_nets) < MAX_HOSTS:
            f.host_nets[h.group(1)] = u.group(1)
    # bootstrap.cc "Bootstrap : Using%s" (2.28: "Bootstrap: Using%s"), net_socket.cc "NET/Socket : Using%s": the
    # interfaces NCCL selected, " [0]eth0:10.0.0.1<0>"; one search for ": Using" finds both spellings of both
    for msg in msgs(": Using"):
        u = _USING_IFS.search(msg)
        if u is None:
            continue
        pairs = _IF_NAME.findall(u.group(2))
        if not pairs and u.group(1) == "Bootstrap":
            f.bootstrap_no_interface = True  # NCCL 2.27+: NCCL_SOCKET_IFNAME matched nothing (nccl#1837)
        for n, addr in pairs:
            if n not in f.socket_interfaces and len(f.socket_interfaces) < MAX_WARN:
                f.socket_interfaces.append(n)
                f.socket_addresses[n] = addr
    for msg in msgs("GPU Direct RDMA Disabled"):
        g = _GDR_OFF.search(msg)
        if g and g.group(1) not in f.gdr_disabled_hcas:
            f.gdr_disabled_hcas.append(g.group(1))
    for msg in msgs(_NRANKS_FINDER):
        r = _NRANKS.search(msg) if "nranks" in msg.lower() else None
        if r:
            f.nranks = int(r.group(1))
            break
    for msg in msgs("nNodes "):  # init.cc (2.21+); one string search: a 512-rank INFO log is gigabytes
        nn = _NNODES.search(msg)
        if nn and len(msg) < 400:
            f.nnodes = max(f.nnodes or 0, int(nn.group(1)))
    for msg in msgs("nvls channels", reverse=True):
        c2 = _NVLS.search(msg)
        if c2:
            f.nvls_channels = int(c2.group(1))
            break
    f.init_complete = any("Init COMPLETE" in m for m in msgs("Init COMPLETE"))
    f.comms = _comm_inits(t, max_comms)
    events = _channel_transports(t)
    for tr, host in dict.fromkeys(events):
        if tr not in f.transports:
            f.transports.append(tr)
        if host:
            lst = f.host_net_transports.setdefault(host, [])
            if tr not in lst:
                lst.append(tr)
    seen = seen or bool(events) or bool(f.warnings) or _ANY_LEVEL.search(t) is not None
    if not seen and ("NCCL\t" in t or "NCCL  " in t):  # unusual spacing: the line parser's regex decides
        seen = any((_classify(x) or ("",))[0] != "" for x in t.split("\n") if "NCCL" in x)
    if not seen:
        raise ParseError("no 'NCCL INFO' / 'NCCL WARN' line")
    return f
