"""Launcher lines that announce a process's global rank -> :class:`~gpudoctor.facts.model.RankAnnouncement` list.

Read (format strings from the sources):

- PyTorch Lightning / Lightning Fabric ``_init_dist_connection``: ``"Initializing distributed: GLOBAL_RANK:
  {global_rank}, MEMBER: {global_rank + 1}/{world_size}"`` (lightning_fabric/utilities/distributed.py, 1.6+), and
  before it ``"initializing ddp: GLOBAL_RANK: {global_rank}, MEMBER: {global_rank + 1}/{world_size}"``
  (pytorch_lightning/plugins/training_type/ddp.py, 1.0-1.5).
- torchrun's elastic agent, after each rendezvous (torch/distributed/elastic/agent/server/api.py, 1.9+):
  ``"[default] Rendezvous complete for workers. Result:\\n  restart_count=0\\n ...  global_ranks=[0, 1, 2, 3]\\n
  role_world_sizes=[8, 8, 8, 8]\\n  global_world_sizes=[8, 8, 8, 8]"``: one block per node, listing its workers.

Two processes announcing the same global rank of one world are two launches of the same ranks (srun without
``--ntasks-per-node``, two nodes given the same ``--node-rank``): the job waits for ranks that were never started.

Also read, into :class:`~gpudoctor.facts.model.RendezvousJoin`: torchrun's dynamic rendezvous
(torch/distributed/elastic/rendezvous/dynamic_rendezvous.py, 1.9+) ``"The node '{node}' attempts to join the next
round of the rendezvous '{run_id}'."`` and ``"The node '{node}' has joined round {round} of the rendezvous
'{run_id}' as rank {rank} in a world of size {world_size}."``: nodes given different run ids never meet.
"""
from __future__ import annotations

import re

from gpudoctor.facts.model import CollectiveTimeout, RankAnnouncement, RendezvousJoin

_LIGHTNING = re.compile(r"(?:initializing ddp|Initializing distributed): GLOBAL_RANK: (\d+), MEMBER: \d+/(\d+)",
                        re.IGNORECASE)
_AGENT = re.compile(r"Rendezvous complete for workers\. Result:(?P<body>(?:\s*\n[^\n]*?\s\w+=[^\n]*){2,12})")
_FIELD = re.compile(r"\b(restart_count|global_ranks|global_world_sizes)=([^\n]*)")
LITERALS = ("GLOBAL_RANK: ", "Rendezvous complete for workers")  #: every announcement holds one of these
MAX_ANNOUNCEMENTS = 100_000  #: per input: a rank line per process and restart, so a bound far above real jobs


# torch's watchdog (ProcessGroupNCCL.cpp, v2.0-v2.13): "[Rank 3] Watchdog caught collective operation timeout:
# WorkNCCL(SeqNum=48213, OpType=_ALLGATHER_BASE, ..." (older: "[Rank 3] Watchdog caught collective operation timeout")
_TIMEOUT = re.compile(r"\[(?:PG[^\]\n]*?)?Rank (?P<rank>\d+)\][^\n]*?caught collective operation timeout:?\s*"
                      r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)")
TIMEOUT_LITERAL = "WorkNCCL(SeqNum="
MAX_TIMEOUTS = 100_000


def parse_collective_timeouts(text: str) -> list[CollectiveTimeout]:
    """Every watchdog timeout line of ``text`` with its rank, sequence number and collective, in order."""
    if TIMEOUT_LITERAL not in text:
        return []
    return [CollectiveTimeout(rank=int(m.group("rank")), seq=int(m.group("seq")), op=m.group("op"))
            for m in _TIMEOUT.finditer(text)][:MAX_TIMEOUTS]


def _ints(v: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", v)]


def parse_rank_announcements(text: str) -> list[RankAnnouncement]:
    """Every rank announcement in ``text``, in order (the line is clipped to 200 characters)."""
    out: list[RankAnnouncement] = []
    if "GLOBAL_RANK: " in text:
        for m in _LIGHTNING.finditer(text):
            ls = text.rfind("\n", 0, m.start()) + 1
            le = text.find("\n", m.end())
            out.append(RankAnnouncement(rank=int(m.group(1)), world_size=int(m.group(2)), source="lightning",
                                        line=text[ls:le if le >= 0 else len(text)].strip()[:200]))
    if "Rendezvous complete for workers" in text:
        for m in _AGENT.finditer(text):
            f = {k: v for k, v in _FIELD.findall(m.group("body"))}
            ranks, worlds = _ints(f.get("global_ranks", "")), _ints(f.get("global_world_sizes", ""))
            restart = _ints(f.get("restart_count", ""))
            for r, w in zip(ranks, worlds, strict=False):  # a cut-off block: the pairs it has
                out.append(RankAnnouncement(rank=r, world_size=w, restart=restart[0] if restart else None,
                                            source="torchrun", line=f"global_ranks={f.get('global_ranks', '')}"[:200]))
    return out[:MAX_ANNOUNCEMENTS]


#: the literal every dynamic-rendezvous join line holds (a gate before the regex)
RENDEZVOUS_LITERAL = " of the rendezvous '"
_JOIN = re.compile(r"The node '(?P<node>[^'\n]{1,200})' (?:attempts to join the next round|has joined round "
                   r"(?P<round>\d+)) of the rendezvous '(?P<run>[^'\n]{0,200})'(?: as rank (?P<rank>\d+) in a world "
                   r"of size (?P<world>\d+))?")
MAX_JOINS = 4096


def parse_rendezvous_joins(text: str) -> list[RendezvousJoin]:
    """Every dynamic-rendezvous join line of ``text``, in order (at most MAX_JOINS; lines clipped to 200 chars)."""
    if RENDEZVOUS_LITERAL not in text:
        return []
    out: list[RendezvousJoin] = []
    for m in _JOIN.finditer(text):
        ls = text.rfind("\n", 0, m.start()) + 1
        le = text.find("\n", m.end())
        num = {k: int(v) for k, v in m.groupdict().items() if k in ("round", "rank", "world") and v is not None}
        out.append(RendezvousJoin(node=m.group("node"), run_id=m.group("run"), round=num.get("round"),
                                  rank=num.get("rank"), world_size=num.get("world"),
                                  line=text[ls:le if le >= 0 else len(text)].strip()[:200]))
        if len(out) >= MAX_JOINS:
            break
    return out


def node_host(node: str) -> str:
    """The host of a rendezvous node id: '<hostname>_<pid>_<local id>' -> hostname (the id itself otherwise)."""
    parts = node.rsplit("_", 2)
    return parts[0] if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() else node
