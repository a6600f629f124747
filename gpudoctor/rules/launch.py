"""LOG005: the launcher's rank lines show the same global ranks started twice and others never
(parsers/launch_ranks.py reads Lightning's GLOBAL_RANK lines and torchrun's rendezvous results)."""
from __future__ import annotations

from collections import Counter

from gpudoctor.parsers._text import int_ranges
from gpudoctor.rules.engine import NotAssessed, rule


@rule("LOG005")
def duplicate_ranks(ctx):
    """Counts each world's announced global ranks: some announced more than once while others never were (so not
    a restart, which announces every rank again)."""
    logs = ctx.snap.logs
    if logs is None or not logs.rank_announcements:
        raise NotAssessed("no launcher rank lines (Lightning GLOBAL_RANK, torchrun rendezvous result) in the inputs")
    by_world: dict[int, Counter] = {}
    for a in logs.rank_announcements:
        by_world.setdefault(a.world_size, Counter())[a.rank] += 1
    for world, counts in sorted(by_world.items()):
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
    initialisation and fewer ranks started it than the communicator has."""
    logs = ctx.snap.logs
    nccl = logs.nccl if logs is not None else None
    if nccl is None or not nccl.comms:
        raise NotAssessed("no NCCL 'Init START' lines with a commId (NCCL_DEBUG=INFO, NCCL 2.17+) in the inputs")
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
