"""Rules on what the logs say about the launch and the run: LOG005 (the launcher's rank lines show the same global
ranks started twice and others never; parsers/launch_ranks.py reads Lightning's GLOBAL_RANK lines and torchrun's
rendezvous results), LOG006 (an NCCL communicator only some ranks started), LOG007 (a pasted nccl-tests run far below
its GPUs' NVLink rate; parsers/nccl_tests.py), LOG008 (hosts whose NCCL chose different networks), LOG009 (a hang on
PCIe peer-to-peer), LOG010 (ranks timed out in different collectives), LOG011 (the job waited for ranks never
started), LOG012 (hosts joined torchrun rendezvous of different ids), LOG013 (the first failure is an exception no
signature explains, and the errors after it are only its consequences)."""
from __future__ import annotations

from collections import Counter

from gpudoctor.facts.model import FirstException
from gpudoctor.parsers._text import int_ranges
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule


def _offline(ctx) -> None:
    """These rules read logs given to `gpudoctor check`: a live scan has none (not applicable, as the signatures)."""
    if not ctx.snap.inputs:
        raise NotApplicable("a live scan reads no logs: pass them to `gpudoctor check`")


def _announced(logs) -> list[tuple[int, Counter]]:
    """(world size, how many times each global rank was announced) of every world the launcher's lines name."""
    by_world: dict[int, Counter] = {}
    for a in logs.rank_announcements:
        by_world.setdefault(a.world_size, Counter())[a.rank] += 1
    return sorted(by_world.items())


@rule("LOG005")
def duplicate_ranks(ctx):
    """Counts each world's announced global ranks: some announced more than once while others never were (so not
    a restart, which announces every rank again)."""
    _offline(ctx)
    logs = ctx.snap.logs
    if logs is None or not logs.rank_announcements:
        raise NotAssessed("no launcher rank lines (Lightning GLOBAL_RANK, torchrun rendezvous result) in the inputs")
    for world, counts in _announced(logs):
        twice = sorted(r for r, n in counts.items() if n > 1)
        missing = sorted(set(range(world)) - set(counts))
        if not twice or not missing:
            continue
        first = next(a for a in logs.rank_announcements if a.world_size == world and a.rank == twice[0])
        yield ctx.finding(
            [f"world size {world}: global rank(s) {int_ranges(twice)} started {max(counts.values())} times, rank(s) "
             f"{int_ranges(missing)} never ({len(counts)} of {world} ranks seen)",
             f"e.g. {first.line}",
             "the launcher started the same ranks on several nodes: the job waits for the missing ranks"],
            subject=f"world size {world}",
            data={"world_size": world, "duplicated": twice, "missing": missing, "source": first.source})


@rule("LOG006")
def comm_init_missing_ranks(ctx):
    """For each NCCL communicator of the log (its Init START lines, NCCL 2.17+): fires when no rank completed its
    initialisation and fewer ranks started it than the communicator has, and no NCCL WARN says the ranks that did
    start failed instead of waiting."""
    _offline(ctx)
    logs = ctx.snap.logs
    nccl = logs.nccl if logs is not None else None
    if nccl is None or not nccl.comms:
        raise NotAssessed("no NCCL 'Init START' lines with a commId (NCCL_DEBUG=INFO, NCCL 2.17+) in the inputs")
    if nccl.warnings:
        return  # an NCCL WARN in the same log: the initialisation failed there (its signature says why), not a wait
    for c in nccl.comms:
        missing = sorted(set(range(c.nranks)) - set(c.started))
        if c.completed or not c.started or not missing:
            continue
        yield ctx.finding(
            [f"communicator {c.comm_id}: {len(c.started)} of {c.nranks} ranks printed Init START "
             f"({int_ranges(c.started)}), none printed Init COMPLETE",
             f"ranks {int_ranges(missing)} never started it in these logs: if the logs cover every node, they never "
             "called ncclCommInitRank (stuck earlier, or creating their groups in another order); if not, add the "
             "other nodes' logs"],
            subject=f"commId {c.comm_id}",
            data={"comm_id": c.comm_id, "nranks": c.nranks, "started": c.started, "missing": missing})


def _nccl_tests_line_rate(ctx, run) -> tuple[float, str] | None:
    """(NVLink line rate of the run's GPUs, GB/s per direction, basis): from NVML's active links when the inputs
    have them for every GPU, else from the model named on the run's rank lines (rules/topology.toml)."""
    from gpudoctor.facts import topology as T
    from gpudoctor.rules.confirmation import nvlink_gbs

    nv = ctx.snap.nvml
    if nv is not None and nv.available and nv.gpus and all(g.nvlinks for g in nv.gpus):
        worst = min((nvlink_gbs(g) for g in nv.gpus), key=lambda n: n[0])
        if worst[1]:
            return worst[0], f"{worst[1]} active NVLinks (NVML) x {worst[0] / worst[1]:g} GB/s"
    names = set(run.gpus)
    if len(names) != 1:
        return None
    return T.expected_nvlink_gbs(names.pop())


@rule("LOG007")
def nccl_tests_busbw_low(ctx):
    """A pasted nccl-tests run on one host: its best busbw at messages of 256 MiB and more ([allreduce]
    judge_min_size_bytes of rules/confirm.toml) against the NVLink line rate of its GPUs (NVML's active links, else
    the model's link count x the generation's per-link rate) x nvlink_min_fraction (0.6), as CNF003 judges
    gpudoctor's own all-reduce. Multi-node runs (bound by the NICs) and PCIe-only GPUs are not assessed."""
    _offline(ctx)
    from gpudoctor.compat import data
    from gpudoctor.facts.units import fmt_size

    logs = ctx.snap.logs
    runs = logs.nccl_tests if logs is not None else []
    if not runs:
        raise NotAssessed("no nccl-tests output in the inputs")
    cfg = data.load("confirm")["allreduce"]
    why_not = []
    for run in runs:
        if len(run.hosts) > 1:
            why_not.append(f"{len(run.hosts)} hosts: the NICs, not NVLink, bound the busbw")
            continue
        if len(run.ranks) == 1 or (not run.ranks and run.gpus_per_process == 1):
            why_not.append("one rank: busbw is 0 by definition")
            continue
        if not run.gpus:
            why_not.append("the run's '#  Rank' lines (hosts, GPU models) are not in the input")
            continue
        big = [r for r in run.rows if r.size_bytes >= cfg["judge_min_size_bytes"] and r.busbw_gbs and not r.wrong]
        if not big:
            why_not.append(f"no size of {fmt_size(cfg['judge_min_size_bytes'])} or more in the sweep")
            continue
        rate = _nccl_tests_line_rate(ctx, run)
        if rate is None:
            why_not.append(f"no NVLink line rate known for {', '.join(sorted(set(run.gpus)))} (PCIe GPUs: "
                           "busbw depends on the host's CPU and PCIe switches)")
            continue
        line, basis = rate
        best = max(big, key=lambda r: r.busbw_gbs or 0.0)
        if (best.busbw_gbs or 0.0) >= cfg["nvlink_min_fraction"] * line:
            continue
        ev = [f"{run.collective or 'nccl-tests'}: best busbw {best.busbw_gbs:g} GB/s at {fmt_size(best.size_bytes)} "
              f"over {len(run.ranks)} GPUs ({sorted(set(run.gpus))[0]}, one host"
              + (f" {run.hosts[0]}" if run.hosts else "") + ")",
              f"NVLink line rate {line:g} GB/s per direction ({basis}): expected at least "
              f"{cfg['nvlink_min_fraction']:.0%} = {cfg['nvlink_min_fraction'] * line:g} GB/s (NCCL's ring reaches "
              "~80%)"]
        nccl = logs.nccl if logs is not None else None
        if nccl and nccl.transports:
            ev.append("channels in the NCCL log: " + ", ".join(nccl.transports[:6]))
        if nccl and nccl.env_set:
            ev.append("NCCL settings in the log: " + ", ".join(f"{k}={v}" for k, v in list(nccl.env_set.items())[:6]))
        yield ctx.finding(ev, subject=f"{len(run.ranks)} GPUs",
                          data={"busbw_gbs": best.busbw_gbs, "size_bytes": best.size_bytes, "line_rate_gbs": line,
                                "fraction": cfg["nvlink_min_fraction"], "basis": basis, "ranks": len(run.ranks)})
        return
    if why_not and len(why_not) == len(runs):
        raise NotAssessed("; ".join(dict.fromkeys(why_not)))


@rule("LOG008")
def hosts_on_different_networks(ctx):
    """Compares the network each process's NCCL chose ('host:pid:tid [dev] NCCL INFO Using network IB|Socket|<plugin>'):
    the processes of one node choose alike, so a job whose processes disagree has nodes that cannot connect (ranks on
    IB cannot talk to ranks on sockets) or run at the speed of the slowest. Grouped by host, or by process when the
    host names are the same (an anonymised paste)."""
    _offline(ctx)
    logs = ctx.snap.logs
    nccl = logs.nccl if logs is not None else None
    if nccl is None or len(nccl.host_nets) < 2:
        raise NotAssessed("the 'Using network' lines of fewer than two processes are in the inputs")
    hosts = {k.rsplit(":", 1)[0] for k in nccl.host_nets}
    by_net: dict[str, list[str]] = {}
    for key, net in sorted(nccl.host_nets.items()):
        name = key.rsplit(":", 1)[0] if len(hosts) > 1 else f"pid {key.rsplit(':', 1)[1]}"
        if name not in by_net.setdefault(net, []):
            by_net[net].append(name)
    if len(by_net) < 2:
        return
    ev = [f"{net}: {', '.join(hosts[:8])}" + (f" and {len(hosts) - 8} more" if len(hosts) > 8 else "")
          for net, hosts in sorted(by_net.items(), key=lambda kv: -len(kv[1]))]
    # the side to fix: the processes that fell back to sockets when others use a faster network; else the fewer
    odd = by_net["Socket"] if "Socket" in by_net else min(by_net.values(), key=len)
    yield ctx.finding(ev + ["NCCL picks the network on each node on its own: the nodes in the smaller group could "
                            "not use the others' network (IB missing or disabled there)"],
                      subject=", ".join(odd[:8]), data={"by_network": by_net})


#: signatures that mean a collective never finished (watchdog timeouts, blocking-wait timeouts, heartbeat)
HANG_SIGNATURES = frozenset({"SIG022", "SIG043", "SIG301"})


def _hang_evidence(logs) -> str | None:
    hit = next((h for h in logs.signatures if h.id in HANG_SIGNATURES), None)
    if hit is not None:
        return f"a collective timed out ({hit.id}: {hit.lines[0][:160] if hit.lines else ''})"
    run = next((r for r in logs.nccl_tests if r.ranks and not r.rows and r.avg_busbw_gbs is None), None)
    if run is not None:
        return (f"nccl-tests ({run.collective or '?'}, {len(run.ranks)} ranks) printed its header and no result row: "
                "the first collective never finished")
    return None


def _gpus_without_nvlink(ctx, logs) -> str | None:
    topo = ctx.snap.topology
    m = topo.matrix if topo is not None else None
    if m is not None and len(m.gpus) >= 2:
        rels = {m.rel(a, b) for a in m.gpus for b in m.gpus if a < b}
        if rels and not any(r and r.startswith("NV") for r in rels):
            return "topo -m: no NVLink between the GPUs (" + "/".join(sorted(r or "?" for r in rels)) + ")"
    names = {g for r in logs.nccl_tests for g in r.gpus}
    nv = ctx.snap.nvml
    names |= {g.name for g in (nv.gpus if nv is not None else []) if g.name}
    consumer = sorted(n for n in names if "GeForce" in n or "RTX" in n)
    if consumer:
        return f"GPUs {', '.join(consumer)}: PCIe-only boards, whose peer-to-peer often does not work"
    return None


@rule("LOG009")
def p2p_hang(ctx):
    """A hang (a collective timeout, or nccl-tests stopped before its first result row) in a log whose NCCL channels
    use PCIe peer-to-peer ('via P2P/IPC', 'P2P/CUMEM', 'P2P/direct pointer') between GPUs without NVLink (topo -m) or
    on GeForce / RTX boards: the classic cause is P2P that the platform reports but does not carry (ACS redirection or
    an IOMMU on the PCIe path, a VM, consumer GPUs with drivers that enable P2P they cannot do)."""
    _offline(ctx)
    logs = ctx.snap.logs
    nccl = logs.nccl if logs is not None else None
    if nccl is None or not nccl.transports:
        raise NotAssessed("no NCCL channel lines (NCCL_DEBUG=INFO) in the inputs")
    p2p = [t for t in nccl.transports if t.startswith("P2P")]
    if not p2p:
        raise NotApplicable("NCCL used no peer-to-peer transport")
    hang = _hang_evidence(logs)
    pcie = _gpus_without_nvlink(ctx, logs)
    if hang is None or pcie is None:
        return
    yield ctx.finding([hang, f"NCCL channels: {', '.join(p2p[:4])}", pcie,
                       "rerun with NCCL_P2P_DISABLE=1: if it then completes, peer-to-peer over this PCIe path is the "
                       "cause"], subject="P2P", data={"transports": p2p, "hang": hang, "topology": pcie})


#: how many collectives ranks of one process group can be apart when the watchdog fires: each collective waits for
#: every rank, so the ranks ahead stop within what the host enqueues ahead of the GPU (a few hundred under FSDP /
#: ZeRO, whose steps launch hundreds of collectives); a gap of tens of thousands is two runs' or two groups'
#: timeouts pasted together
MAX_DESYNC_GAP = 10000


@rule("LOG010")
def ranks_at_different_collectives(ctx):
    """Each rank's first watchdog timeout (SeqNum, OpType): ranks that timed out in different collectives were not
    waiting for the same thing. The rank(s) at the lowest sequence number are behind: the others wait in a collective
    those never reached (a rank stuck, slow, or on another code path: uneven batches, data-dependent branches, a
    backward skipped under FSDP / ZeRO-3)."""
    _offline(ctx)
    logs = ctx.snap.logs
    events = logs.collective_timeouts if logs is not None else []
    if not events:
        raise NotAssessed("no watchdog timeout lines with SeqNum / OpType in the inputs")
    first: dict[int, tuple[int, str]] = {}
    for e in events:
        first.setdefault(e.rank, (e.seq, e.op))
    groups: dict[tuple[int, str], list[int]] = {}
    for rank, key in sorted(first.items()):
        groups.setdefault(key, []).append(rank)
    if len(groups) < 2:
        return
    ordered = sorted(groups.items())
    (seq0, op0), behind = ordered[0]
    top = ordered[-1][0][0]
    if top - seq0 > MAX_DESYNC_GAP:
        raise NotApplicable(f"SeqNum {seq0} and {top} are too far apart for ranks of one process group (a rank "
                            "behind blocks the others within the collectives the host enqueued ahead): timeouts of "
                            "separate runs or groups")
    ev = [f"ranks {int_ranges(r)}: SeqNum {s} {op}" for (s, op), r in ordered[:8]]
    ev.append(f"rank(s) {int_ranges(behind)} stopped earliest (SeqNum {seq0}, {op0}): the other ranks wait in "
              "collectives these never issued")
    yield ctx.finding(ev, subject=f"rank(s) {int_ranges(behind)}",
                      data={"groups": [{"seq": s, "op": op, "ranks": r} for (s, op), r in ordered]})


def _fewer_tasks(env: dict[str, str]) -> str | None:
    """Slurm's own numbers saying it starts fewer tasks than nodes x tasks per node (--ntasks below that), or None."""
    try:
        ntasks = int(env["SLURM_NTASKS"])
        per_node = int(env["SLURM_NTASKS_PER_NODE"].split("(")[0])
        nodes = int(env.get("SLURM_NNODES") or env.get("SLURM_JOB_NUM_NODES") or 1)
    except (KeyError, ValueError):
        return None
    if ntasks < nodes * per_node:
        return (f"SLURM_NTASKS={ntasks} is below {nodes} node(s) x SLURM_NTASKS_PER_NODE={per_node}: Slurm starts "
                f"{ntasks} task(s) while each node's launcher expects {per_node}: drop --ntasks or make it "
                f"{nodes * per_node}")
    return None


#: signatures that mean the job was left waiting until something ended it: a collective or rendezvous timeout, a
#: scheduler's cancel at the time limit (rules/signatures.toml)
WAIT_SIGNATURES = HANG_SIGNATURES | frozenset({"SIG014", "SIG458", "SIG471"})


@rule("LOG011")
def ranks_never_announced(ctx):
    """For each world of the launcher's rank lines (Lightning's 'GLOBAL_RANK: r, MEMBER: r+1/N', torchrun's
    rendezvous result): fewer distinct ranks than the world size, none announced twice (that is LOG005), and the job
    then waited until a timeout or the scheduler ended it. The launch started fewer processes than the world needs
    (Slurm --ntasks below nodes x --ntasks-per-node, a stale NODE_RANK / WORLD_SIZE, nodes never started) -- or the
    other nodes' logs are not among the inputs, which the finding says."""
    _offline(ctx)
    logs = ctx.snap.logs
    if logs is None or not logs.rank_announcements:
        raise NotAssessed("no launcher rank lines (Lightning GLOBAL_RANK, torchrun rendezvous result) in the inputs")
    waited = next((h for h in logs.signatures if h.id in WAIT_SIGNATURES), None)
    if waited is None:
        raise NotAssessed("the inputs show no wait (a timeout, a cancel at the time limit): a log of some ranks only "
                          "is normal")
    for world, counts in _announced(logs):
        missing = sorted(set(range(world)) - set(counts))
        if not missing or any(n > 1 for n in counts.values()):
            continue
        env = ctx.snap.env.variables if ctx.snap.env is not None else {}
        short = _fewer_tasks(env)
        slurm = [f"{k}={env[k]}" for k in ("SLURM_NTASKS", "SLURM_NNODES", "SLURM_NTASKS_PER_NODE", "WORLD_SIZE",
                                           "NODE_RANK", "RANK", "MASTER_ADDR") if k in env]
        yield ctx.finding(
            [f"world size {world}: only rank(s) {int_ranges(sorted(counts))} announced themselves, rank(s) "
             f"{int_ranges(missing)} never did",
             f"then: {waited.id} ({waited.lines[0][:160] if waited.lines else ''})",
             "the ranks that started waited for the others: fewer processes were launched than the world size (if "
             "these logs cover every node)"]
            + (["launcher variables in the inputs: " + ", ".join(slurm)] if slurm else []) + ([short] if short else []),
            severity="error" if short else "warning",
            subject=f"world size {world}", data={"world_size": world, "announced": sorted(counts), "missing": missing})


def rendezvous_split(logs) -> dict[str, list[str]]:
    """run id -> hosts, when torchrun agents of different hosts joined rendezvous of different ids (each host
    under one id: a host that shows several ids ran several jobs one after another, which says nothing); {} when
    they agree or fewer than two hosts are seen."""
    from gpudoctor.parsers.launch_ranks import node_host

    if logs is None or not logs.rendezvous:
        return {}
    ids: dict[str, set[str]] = {}
    for j in logs.rendezvous:
        ids.setdefault(node_host(j.node), set()).add(j.run_id)
    single = {h: next(iter(r)) for h, r in ids.items() if len(r) == 1}
    by_id: dict[str, list[str]] = {}
    for host, run in sorted(single.items()):
        by_id.setdefault(run, []).append(host)
    return by_id if len(by_id) > 1 else {}


@rule("LOG012")
def rendezvous_ids_differ(ctx):
    """Reads torchrun's dynamic-rendezvous join lines ("The node '<host>_<pid>_<n>' attempts to join the next round
    of the rendezvous '<run id>'"): the agents of different hosts named different run ids, so they wait in separate
    rendezvous and never form one job."""
    _offline(ctx)
    logs = ctx.snap.logs
    if logs is None or not logs.rendezvous:
        raise NotAssessed("no torchrun rendezvous join lines ('The node ... of the rendezvous ...', INFO level) in "
                          "the inputs")
    split = rendezvous_split(logs)
    if not split:
        return
    from gpudoctor.rules.logs import follow_on_lines, follow_ons_of

    ev = [f"rendezvous '{run}': host(s) {', '.join(hosts[:8])}{' ...' if len(hosts) > 8 else ''}"
          for run, hosts in sorted(split.items())]
    ev.append("torchrun groups only agents given the same --rdzv-id (rdzv_id): each group waits for the nodes of "
              "the others until its join timeout")
    follow = follow_ons_of(logs, "LOG012")
    ev += follow_on_lines(follow, "the wait this caused")
    yield ctx.finding(ev, data={"run_ids": sorted(split), "hosts": split,
                                "follow_on_signatures": [h.id for h in follow]})


#: signatures that say another rank or the store went away -- the others' view of a rank that failed first
CONSEQUENCES = frozenset({"SIG022", "SIG027", "SIG032", "SIG042", "SIG043", "SIG048", "SIG050", "SIG014"})


def first_failure(logs, severities: dict[str, str]) -> FirstException | None:
    """The earliest FirstException of the logs when every error-severity signature of them is a consequence
    (CONSEQUENCES) and, in its own file, comes after it; None otherwise (a known cause explains the failure, or no
    unexplained exception is there). ``severities``: signature id -> catalogue severity."""
    if logs is None or not logs.first_exceptions:
        return None
    errors = [h for h in logs.signatures if severities.get(h.id) == "error"]
    if not errors or any(h.id not in CONSEQUENCES for h in errors):
        return None
    first = min(logs.first_exceptions, key=lambda e: e.line)
    same = [h.first_line for h in errors if h.files[:1] == [first.file] and h.first_line is not None]
    return first if all(first.line < n for n in same) else None


@rule("LOG013")
def unexplained_first_failure(ctx):
    """Finds the first exception line no signature explains when the only errors the catalogue reads are the
    other ranks' view of a failure (a peer exited, a connection closed, a watchdog timeout, the store went away)."""
    _offline(ctx)
    logs = ctx.snap.logs
    if logs is None or not logs.signatures:
        raise NotAssessed("no error signature in the inputs")
    from gpudoctor.rules.logs import SEVERITIES, follow_on_lines, follow_ons_of

    first = first_failure(logs, SEVERITIES)
    if first is None:
        return
    follow = follow_ons_of(logs, "LOG013")
    who = f"rank {first.rank}" if first.rank is not None else "a process"
    ev = [f"{who} raised first ({first.file}, line {first.line}): {first.text}",
          "no signature explains it, and the errors after it only say that a peer or the store went away"]
    ev += follow_on_lines(follow, "the other ranks' view of it")
    yield ctx.finding(ev, subject=who, data={"file": first.file, "line": first.line, "rank": first.rank,
                                              "follow_on_signatures": [h.id for h in follow]})
