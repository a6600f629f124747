"""The per-process runtime of ``gpudoctor cluster``. Imports torch: used only by that command.

Protocol (every wait is bounded by ``--timeout``; no step can hang forever on one bad node):

1. **join** — each rank connects to the c10d TCPStore (torchrun's agent store, or one served by
   rank 0 under Slurm) and posts ``join/<rank>`` (hostname, node rank, local rank).
2. **scan** — local rank 0 of each node scans its node (the usual probes + rules) and posts
   ``snap/<rank>``; other local ranks post an empty one. Snapshots travel through the store,
   not through a collective, so that one hung node cannot stop the others' reports.
3. **plan** — rank 0 waits for joins and scans until the deadline, then posts ``plan``: the
   members (ranks that reported), the backend, the message size and the pair schedule.
   Ranks left out (late or hung) read it and exit; rank 0 names them in the report.
4. **confirm** — members form a process group over the same store (gloo; with GPUs
   ``cpu:gloo,cuda:nccl``, objects and clock ping-pongs always on gloo) with ``--timeout``:
   clock offsets (rank 0 ping-pongs each node), an all-reduce across all ranks, then
   round-robin node-to-node 2-rank all-reduces (see :mod:`gpudoctor.cluster.pairing`).
   Timings use :func:`gpudoctor.confirm.collectives.time_allreduce`, one timing per call (``groups=iters``):
   finding the slow node or link needs a median that one stalled call cannot move, and a constant
   per-call overhead cancels between pairs. Each rank posts ``result/<rank>``.
5. **report** — rank 0 waits for the results until the deadline, evaluates the CLU rules and prints.

Each rank also posts ``phase/<rank>`` at every step, so a node that hangs is named with the
phase it hung in.

Test-only knobs (environment variables, read only here; they exist so the test suite can make a
real multi-process run misbehave on one node, and are documented in docs/cluster.md):

* ``GPUDOCTOR_TEST_HANG=scan|confirm`` — this rank stops (sleeps) at that phase.
* ``GPUDOCTOR_TEST_LINK_DELAY_MS=D`` — every all-reduce this rank enters starts D ms late
  (a slow node); ``D@K`` — only in node-to-node tests with node rank K (a slow link).
* ``GPUDOCTOR_TEST_CLOCK_SKEW_MS=S`` — this rank's wall clock reads S ms ahead in the clock test.
"""
from __future__ import annotations

import datetime as _dt
import os
import socket
import sys
import time
from typing import Any

from gpudoctor.cluster.agent_store import (
    POLL_S,
    AgentError,
    Excluded,
    _get,
    _phase,
    _present,
    _put,
    _test_hang,
    _wait_count,
    connect,
    scan_node,
)
from gpudoctor.cluster.collectives import _short, confirm
from gpudoctor.cluster.launch import LaunchInfo
from gpudoctor.cluster.options import ClusterOptions
from gpudoctor.reports.redact import scrub_model

# ----------------------------------------------------------------------------------------------- run

def default_size(cpu: bool) -> int:
    from gpudoctor.compat import data

    msg = data.load("cluster")["message"]
    return int(float(msg["cpu_mib" if cpu else "gpu_mib"]) * 1024 * 1024)


def _join_and_scan(store, torch, opts: ClusterOptions, launch: LaunchInfo) -> dict[str, Any]:
    """Phases 1-2: post ``join/<rank>``, scan the node (its local rank 0 only), post ``snap/<rank>``."""
    rank = launch.rank
    _put(store, f"join/{rank}", {"rank": rank, "node_rank": launch.node_rank, "local_rank": launch.local_rank,
                                 "hostname": socket.gethostname(), "pid": os.getpid()})
    store.add("n/join", 1)
    _phase(store, rank, "scan")
    _test_hang("scan")
    snap: dict[str, Any] = {"report": None, "scan_s": None, "cuda_devices": None}
    if launch.is_leader:
        report, secs = scan_node(opts)
        # scrubbed here, with this node's environment: rank 0 does not know the other nodes' secret values
        snap = {"report": scrub_model(report).model_dump(mode="json"), "scan_s": round(secs, 3)}
    try:
        snap["cuda_devices"] = torch.cuda.device_count() if (not opts.cpu and torch.cuda.is_available()) else 0
        if snap["cuda_devices"]:
            snap["cuda_uuid"] = str(torch.cuda.get_device_properties(launch.local_rank % snap["cuda_devices"]).uuid)
    except Exception:
        snap["cuda_devices"] = 0
    _put(store, f"snap/{rank}", snap)
    store.add("n/snap", 1)
    _phase(store, rank, "wait plan")
    return snap


def _by_rank(store, prefix: str, ranks) -> dict[int, Any]:
    """``prefix/<rank>`` of every rank that posted one."""
    return {int(k.split("/")[1]): _get(store, k) for k in _present(store, [f"{prefix}/{r}" for r in ranks])}


def _backend(opts: ClusterOptions, members: list[int], joins: dict, snaps: dict) -> tuple[bool, str | None]:
    """(use CUDA, why not when GPUs were wanted): every member needs a CUDA device of its own."""
    use_cuda = (not opts.cpu) and all((snaps[r].get("cuda_devices") or 0) > 0 for r in members)
    note = None
    if not opts.cpu and not use_cuda:
        note = ("GPU runs skipped: no usable CUDA device on "
                + ", ".join(f"rank {r}" for r in members if not snaps[r].get("cuda_devices")))
    gpus = [(joins[r].get("hostname"), snaps[r].get("cuda_uuid")) for r in members]
    if use_cuda and len(set(gpus)) < len(gpus):
        use_cuda = False  # NCCL refuses two ranks on one GPU ("Duplicate GPU detected")
        note = "GPU runs skipped: two ranks share one GPU (more agents than GPUs on a host); measured over gloo"
    return use_cuda, note


def _make_plan(store, opts: ClusterOptions, world: int, t_start: float,
               phases_s: dict[str, float]) -> tuple[dict[str, Any], dict, dict]:
    """Phase 3 on rank 0: wait for the scans until ``--timeout`` after ``t_start``, post the plan; (plan, joins,
    snaps)."""
    from gpudoctor.cluster.pairing import schedule

    _wait_count(store, "n/snap", world, t_start + opts.timeout_s)
    phases_s["join + scan (all nodes)"] = time.monotonic() - t_start
    joins, snaps = _by_rank(store, "join", range(world)), _by_rank(store, "snap", range(world))
    members = sorted(snaps)
    leaders = [r for r in members if joins[r].get("local_rank", 0) == 0]
    leaders.sort(key=lambda r: (joins[r].get("node_rank") or 0, r))
    use_cuda, note = _backend(opts, members, joins, snaps)
    size = opts.size_bytes or default_size(not use_cuda)
    sched = schedule(len(leaders), opts.rounds) if (opts.confirm and len(members) > 1) else []
    plan: dict[str, Any] = {
        "members": members, "leaders": leaders, "node_of": {str(r): joins[r].get("node_rank") for r in members},
        "backend": "cpu:gloo,cuda:nccl" if use_cuda else "gloo", "device": "cuda" if use_cuda else "cpu",
        "size_bytes": size, "iters": opts.iters, "warmup": opts.warmup, "confirm": opts.confirm, "note": note,
        "rounds": [[[leaders[a], leaders[b]] for a, b in rnd] for rnd in sched]}
    _put(store, "plan", plan)
    return plan, joins, snaps


def _await_plan(store, opts: ClusterOptions, rank: int) -> dict[str, Any]:
    """Phase 3 on the other ranks: rank 0's plan; Excluded when it left this rank out."""
    wait_s = opts.timeout_s * 2 + 30
    try:
        store.wait(["plan"], _dt.timedelta(seconds=wait_s))
    except Exception:
        raise AgentError(f"rank 0 posted no plan within {wait_s:g} s (is rank 0 alive?)") from None
    plan = _get(store, "plan")
    if rank not in plan["members"]:
        raise Excluded(f"rank {rank} was left out by rank 0 (it reported too late); rank 0's report names it", store)
    return plan


def _confirm_phase(dist, torch, store, plan: dict[str, Any], launch: LaunchInfo,
                   opts: ClusterOptions) -> dict[int, tuple[float, float]]:
    """Phase 4 (members, more than one): the process group, the collectives, ``result/<rank>``; the clock
    offsets this rank measured (rank 0: every node's)."""
    rank, members = launch.rank, plan["members"]
    _phase(store, rank, "init process group")
    if plan["device"] == "cuda":  # bind this rank's GPU before NCCL sees it
        torch.cuda.set_device(launch.local_rank % max(torch.cuda.device_count(), 1))
    result: dict[str, Any]
    try:
        dist.init_process_group(plan["backend"], store=dist.PrefixStore("pg/", store), rank=members.index(rank),
                                world_size=len(members), timeout=_dt.timedelta(seconds=opts.timeout_s))
    except Exception as exc:
        result = {"error": f"init_process_group: {_short(exc)}", "pairs": [],
                  "allreduce": {"error": f"init_process_group: {_short(exc)}"}}
    else:
        _test_hang("confirm")
        try:
            result = confirm(dist, torch, store, plan, rank, launch, opts)
        finally:
            try:
                dist.destroy_process_group()
            except Exception:
                pass
    clock = {int(k): tuple(v) for k, v in result.pop("clock", {}).items()}
    if rank == 0 and "clock_error" not in result:
        clock[0] = (0.0, 0.0)  # the reference
    _put(store, f"result/{rank}", result)
    store.add("n/result", 1)
    return clock


def _measured(plan: dict[str, Any], results: dict[int, dict], labels: dict[int, str], opts: ClusterOptions,
              phases_s: dict[str, float]):
    """Phase 5, the measurements: (all-reduce result, pairwise result); rank 0's phase times into ``phases_s``."""
    from gpudoctor.cluster import assemble
    from gpudoctor.compat import data

    allreduce = assemble.allreduce_result(plan, results, nodes=len(plan["leaders"]))
    own: dict[str, float] = results.get(0, {}).get("phase_s", {})
    phases_s.update({f"{k} (rank 0)": own[k] for k in ("clock", "allreduce", "pairs") if k in own})
    if not plan["rounds"]:
        return allreduce, None
    pair_s = [x for x in (res.get("phase_s", {}).get("pairs") for res in results.values()) if x is not None]
    plan["pairs_s"] = round(max(pair_s), 3) if pair_s else None
    return allreduce, assemble.pairwise_result(plan, results, labels,
                                               float(data.load("cluster")["pairwise"]["slow_fraction"]),
                                               opts.min_pair_busbw)


def run(opts: ClusterOptions, launch: LaunchInfo):
    """Do this rank's part. Returns (the ClusterReport on rank 0 or None elsewhere, the store).

    Raises AgentError (one line) when this rank cannot take part: store unreachable, excluded by rank 0.
    """
    # c10d's C++ logger prints every retried connect and timed-out socket with a native stack trace; the
    # failures that matter reach the report as one-line messages. TORCH_CPP_LOG_LEVEL=INFO shows them all.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    import torch
    import torch.distributed as dist

    from gpudoctor import __version__
    from gpudoctor.cluster import assemble

    t_start = time.monotonic()
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    store = connect(dist, launch, opts.timeout_s, opts.timeout_s * 4 + 30)
    rank, world = launch.rank, launch.world_size
    snap = _join_and_scan(store, torch, opts, launch)
    phases_s: dict[str, float] = {"scan (rank 0)": snap.get("scan_s") or 0.0}
    if rank == 0:
        plan, joins, snaps = _make_plan(store, opts, world, t_start, phases_s)
    else:
        plan = _await_plan(store, opts, rank)
    members = plan["members"]
    confirming = plan["confirm"] and len(members) > 1
    t_confirm = time.monotonic()
    clock = _confirm_phase(dist, torch, store, plan, launch, opts) if confirming else {}
    _phase(store, rank, "done")
    if rank != 0:
        return None, store

    results: dict[int, dict] = {}
    if confirming:
        _wait_count(store, "n/result", len(members), time.monotonic() + opts.timeout_s)
        results = _by_rank(store, "result", members)
        phases_s["confirm (all nodes)"] = time.monotonic() - t_confirm
    phases = {r: store.get(f"phase/{r}").decode(errors="replace") for r in range(world)
              if store.check([f"phase/{r}"])}
    nodes = assemble.build_nodes(launch, joins, snaps, phases, members, results, clock,
                                 {"join": opts.timeout_s, "scan": opts.timeout_s, "confirm": opts.timeout_s},
                                 expect_nodes=opts.expect_nodes, expect_hosts=opts.expect_hosts,
                                 expect_results=bool(plan["confirm"]))
    labels = {r: n.label for n in nodes for r in n.ranks}
    allreduce, pairwise = _measured(plan, results, labels, opts, phases_s) if confirming else (None, None)
    return assemble.build_report(launch, nodes, created, __version__, plan["backend"] if len(members) > 1 else None,
                                 opts.cpu or plan["device"] == "cpu", allreduce, pairwise, phases_s,
                                 time.monotonic() - t_start, backend_note=plan.get("note")), store


def share_exit_code(store, launch: LaunchInfo, code: int | None, members: int, wait_s: float) -> int | None:
    """The exit code of this rank: rank 0 carries the cluster's verdict (issue 15 item 9; docs/cluster.md).

    Rank 0 posts its code (and, serving the store under Slurm, waits up to 10 s for the others to read it) and
    returns it; the other ranks wait for it up to ``wait_s``, so that every rank ends at the same time.
    Under srun they then return 0: srun's exit code is the highest of its tasks', so rank 0's alone decides it.
    Under torchrun they return rank 0's code: torchrun's agents meet at an exit barrier only when their workers
    succeeded, so rank 0 alone exiting 1 kept every other agent waiting 300 s and then printing a
    DistStoreError traceback (measured, torch 2.13: 331 s for 2 agents); the other ranks say so on stderr.
    None when rank 0's code never came (rank 0 died: this rank's own run ended normally).
    """
    try:
        if launch.rank == 0:
            store.set("exit", str(code))
            deadline = time.monotonic() + 10
            while store.add("n/bye", 0) < members - 1 and time.monotonic() < deadline:
                time.sleep(POLL_S)
            return code
        store.wait(["exit"], _dt.timedelta(seconds=wait_s))
        got = int(store.get("exit"))
        store.add("n/bye", 1)
        if launch.launcher != "torchrun":
            return 0
        if got:
            sys.stderr.write(f"gpudoctor: rank {launch.rank}: exit code {got} is rank 0's verdict (its report is on "
                             f"rank 0's node), given to every rank so that torchrun's agents end together; "
                             f"torchrun's ChildFailedError below reports that code, not a crash\n")
        return got
    except Exception:
        return None
