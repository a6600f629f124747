"""Who am I in the job? Rank, world size, node rank and the rendezvous address, from the launcher's variables.

Pure functions over an environment mapping (no torch), so they are testable anywhere.

* torchrun (torch.distributed.run) sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
  ``LOCAL_WORLD_SIZE``, ``GROUP_RANK`` (the node rank), ``MASTER_ADDR``/``MASTER_PORT``
  and, with ``TORCHELASTIC_USE_AGENT_STORE=True``, serves the c10d store itself at that
  address. Source: https://pytorch.org/docs/stable/elastic/run.html ("Environment Variables").
* Slurm's srun sets ``SLURM_PROCID`` (rank), ``SLURM_NTASKS`` (world size), ``SLURM_LOCALID``
  (local rank), ``SLURM_NODEID`` (node index within the step), ``SLURM_STEP_NODELIST`` /
  ``SLURM_JOB_NODELIST`` (hostlist expression) and ``SLURM_STEP_TASKS_PER_NODE`` /
  ``SLURM_TASKS_PER_NODE`` (e.g. ``2(x3),1``). Source: https://slurm.schedmd.com/srun.html
  ("OUTPUT ENVIRONMENT VARIABLES"). ``MASTER_ADDR``/``MASTER_PORT`` are honoured when set;
  otherwise the first host of the node list and ``20000 + SLURM_JOB_ID % 20000``.

torchrun's variables win when both are present (torchrun started inside an srun step).
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field


class LaunchError(Exception):
    """The environment does not describe a distributed launch (one-line message for the user)."""


@dataclass
class LaunchInfo:
    launcher: str  # "torchrun" or "slurm"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    master_addr: str
    master_port: int
    host_store: bool  # True: this process (rank 0) must serve the c10d TCPStore; False: connect as a client
    run_id: str = "none"
    restart_count: int = 0
    job_id: str | None = None
    rank_hosts: list[str | None] = field(default_factory=list)  # expected host of each rank (Slurm), else []
    rank_nodes: list[int | None] = field(default_factory=list)  # expected node index of each rank (Slurm), else []

    @property
    def is_leader(self) -> bool:
        """The process that scans its node (local rank 0)."""
        return self.local_rank == 0


def _int(env: Mapping[str, str], name: str, default: int | None = None) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        if default is None:
            raise LaunchError(f"{name} is not set")
        return default
    try:
        return int(raw)
    except ValueError:
        raise LaunchError(f"{name}={raw!r} is not an integer") from None


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise LaunchError(f"unbalanced brackets in host list {text!r}")
    parts.append("".join(cur))
    return [p for p in parts if p]


def _expand_range(body: str) -> list[str]:
    out = []
    for item in body.split(","):
        if "-" in item:
            lo, hi = item.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise LaunchError(f"bad range {item!r} in host list")
            width = len(lo)
            out += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
        elif item.isdigit():
            out.append(item)
        else:
            raise LaunchError(f"bad entry {item!r} in host list")
    return out


def expand_hostlist(text: str) -> list[str]:
    """Expand a Slurm hostlist expression: ``gpu[01-03,07],login-[1-2]x`` -> gpu01, gpu02, gpu03, gpu07, login-1x,
    login-2x.

    Zero padding of the lower bound is kept (``[08-10]`` -> 08, 09, 10); several bracket groups in one
    name expand as a product. Raises LaunchError on a malformed expression.
    Source: Slurm hostlist syntax, https://slurm.schedmd.com/scontrol.html ("show hostnames").
    """
    hosts: list[str] = []
    for name in _split_top(text.strip()):
        pieces = re.split(r"(\[[^\]]*\])", name)
        acc = [""]
        for piece in pieces:
            if piece.startswith("["):
                acc = [a + x for a in acc for x in _expand_range(piece[1:-1])]
            elif "[" in piece or "]" in piece:
                raise LaunchError(f"unbalanced brackets in host list {text!r}")
            else:
                acc = [a + piece for a in acc]
        hosts += acc
    return hosts


def expand_tasks_per_node(text: str) -> list[int]:
    """``2(x3),1`` -> [2, 2, 2, 1] (Slurm's SLURM_TASKS_PER_NODE format). Raises LaunchError."""
    out: list[int] = []
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", item)
        if not m:
            raise LaunchError(f"bad tasks-per-node entry {item!r}")
        out += [int(m.group(1))] * int(m.group(2) or 1)
    return out


def detect(environ: Mapping[str, str] | None = None) -> LaunchInfo:
    """Read the launcher's variables. Raises LaunchError when neither torchrun's nor Slurm's are present."""
    env = os.environ if environ is None else environ
    if env.get("RANK") is not None and env.get("WORLD_SIZE") is not None:
        return _torchrun(env)
    if env.get("SLURM_PROCID") is not None and env.get("SLURM_NTASKS") is not None:
        return _slurm(env)
    raise LaunchError("not started by a distributed launcher (neither torchrun's RANK/WORLD_SIZE nor srun's "
                      "SLURM_PROCID/SLURM_NTASKS are set); see `gpudoctor cluster --help` for the command lines")


def _torchrun(env: Mapping[str, str]) -> LaunchInfo:
    rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
    local_rank = _int(env, "LOCAL_RANK", 0)
    if not env.get("MASTER_ADDR"):
        raise LaunchError("MASTER_ADDR is not set")
    agent = env.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() in ("true", "1")
    info = LaunchInfo(launcher="torchrun", rank=rank, world_size=world, local_rank=local_rank,
                      local_world_size=_int(env, "LOCAL_WORLD_SIZE", 1), node_rank=_int(env, "GROUP_RANK", rank),
                      master_addr=env["MASTER_ADDR"], master_port=_int(env, "MASTER_PORT"),
                      host_store=(rank == 0 and not agent), run_id=env.get("TORCHELASTIC_RUN_ID", "none"),
                      restart_count=_int(env, "TORCHELASTIC_RESTART_COUNT", 0))
    _check(info)
    return info


def _slurm(env: Mapping[str, str]) -> LaunchInfo:
    rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS")
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""
    hosts = expand_hostlist(nodelist) if nodelist else []
    tpn_text = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or ""
    tpn = expand_tasks_per_node(tpn_text) if tpn_text else []
    node_rank = _int(env, "SLURM_NODEID", 0)
    # srun's default block distribution: the first tpn[0] ranks on node 0, and so on.
    rank_nodes: list[int | None] = []
    for node, count in enumerate(tpn):
        rank_nodes += [node] * count
    if len(rank_nodes) != world:
        rank_nodes = []
    rank_hosts: list[str | None] = [hosts[n] if n is not None and n < len(hosts) else None for n in rank_nodes]
    addr = env.get("MASTER_ADDR") or (hosts[0] if hosts else None)
    if not addr:
        raise LaunchError("under Slurm: neither MASTER_ADDR nor SLURM_STEP_NODELIST/SLURM_JOB_NODELIST is set")
    job = env.get("SLURM_JOB_ID")
    port = _int(env, "MASTER_PORT", 20000 + int(job) % 20000 if job and job.isdigit() else 29500)
    local_world = tpn[node_rank] if node_rank < len(tpn) else _int(env, "SLURM_NTASKS_PER_NODE", 1)
    info = LaunchInfo(launcher="slurm", rank=rank, world_size=world, local_rank=_int(env, "SLURM_LOCALID", 0),
                      local_world_size=local_world, node_rank=node_rank, master_addr=addr, master_port=port,
                      host_store=(rank == 0), run_id=f"slurm-{job or 'none'}-{env.get('SLURM_STEP_ID', '0')}",
                      job_id=job, rank_hosts=rank_hosts, rank_nodes=rank_nodes)
    _check(info)
    return info


def _check(info: LaunchInfo) -> None:
    if info.world_size < 1:
        raise LaunchError(f"world size {info.world_size} < 1")
    if not 0 <= info.rank < info.world_size:
        raise LaunchError(f"rank {info.rank} outside world size {info.world_size}")
    if not 0 < info.master_port < 65536:
        raise LaunchError(f"MASTER_PORT {info.master_port} is not a TCP port")
