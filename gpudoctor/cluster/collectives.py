"""`gpudoctor cluster`, phase 4: clock offsets, the all-rank all-reduce and the node-to-node pairs, timed with
:func:`gpudoctor.confirm.collectives.time_allreduce` (seconds; test-only delays and skews: see
:mod:`gpudoctor.cluster.agent`)."""
from __future__ import annotations

import datetime as _dt
import os
import time
from typing import Any

from gpudoctor.cluster.agent_store import TEST_DELAY, TEST_SKEW, _phase
from gpudoctor.cluster.launch import LaunchInfo
from gpudoctor.cluster.options import ClusterOptions

# ----------------------------------------------------------------------------------------- collectives

class _Delayed:
    """``torch.distributed`` with every all_reduce started late (test-only slow node/link, see module doc)."""

    def __init__(self, dist, delay_s: float):
        self._dist, self._delay = dist, delay_s

    def all_reduce(self, *args, **kwargs):
        time.sleep(self._delay)
        return self._dist.all_reduce(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._dist, name)


def _delay_for(peer_node: int | None) -> float:
    """Seconds of injected delay for an all-reduce with ``peer_node`` (None = the all-node all-reduce)."""
    raw = os.environ.get(TEST_DELAY, "").strip()
    if not raw:
        return 0.0
    ms, _, only = raw.partition("@")
    if only and (peer_node is None or str(peer_node) != only.strip()):
        return 0.0
    return float(ms) / 1e3


def _now() -> float:
    """Wall clock, s since the epoch (plus the test-only skew)."""
    return time.time() + float(os.environ.get(TEST_SKEW, "0") or 0) / 1e3


def clock_offsets(dist, torch, me: int, leaders: list[int], samples: int) -> dict[int, tuple[float, float]]:
    """Rank 0 ping-pongs each leader in turn (pg ranks); returns {pg rank: (offset ms, uncertainty ms)} on rank 0.

    Each sample: rank 0 sends, the peer stamps its wall clock and answers; the peer's clock minus the midpoint
    of rank 0's send/receive times is the offset, half the round trip its uncertainty (the NTP/Cristian method).
    The sample with the shortest round trip is kept.
    """
    buf = torch.zeros(1, dtype=torch.float64)
    out: dict[int, tuple[float, float]] = {}
    if me == 0:
        for peer in leaders:
            if peer == 0:
                continue
            best: tuple[float, float] | None = None
            for _ in range(samples):
                t0 = _now()
                p0 = time.perf_counter()
                buf[0] = t0
                dist.send(buf, dst=peer)
                dist.recv(buf, src=peer)
                rtt = time.perf_counter() - p0
                off = float(buf[0]) - (t0 + rtt / 2)
                if best is None or rtt < best[1]:
                    best = (off, rtt)
            assert best is not None, "samples must be >= 1"
            out[peer] = (best[0] * 1e3, best[1] / 2 * 1e3)
    elif me in leaders:
        for _ in range(samples):
            dist.recv(buf, src=0)
            buf[0] = _now()
            dist.send(buf, dst=0)
    return out


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def confirm(dist, torch, store, plan: dict, rank: int, launch: LaunchInfo, opts: ClusterOptions) -> dict:
    """Run this rank's part of the confirmation runs; returns its result dict (and, on rank 0, clock offsets)."""
    from gpudoctor.confirm.collectives import time_allreduce

    members: list[int] = plan["members"]
    idx = {r: i for i, r in enumerate(members)}
    me = idx[rank]
    node_of = {int(r): n for r, n in plan["node_of"].items()}
    result: dict[str, Any] = {"allreduce": None, "pairs": [], "clock": {}}
    device = torch.device("cuda", launch.local_rank % max(torch.cuda.device_count(), 1)) \
        if plan["device"] == "cuda" else torch.device("cpu")
    if plan["device"] == "cuda":
        torch.cuda.set_device(device)
    numel = max(plan["size_bytes"] // 4, 1)
    global_ok = True
    leaders = [idx[r] for r in plan["leaders"]]

    phase_s: dict[str, float] = {}
    result["phase_s"] = phase_s
    t0 = time.perf_counter()
    _phase(store, rank, "clock")
    try:
        offs = clock_offsets(dist, torch, me, leaders, opts.clock_samples)
        result["clock"] = {str(members[k]): v for k, v in offs.items()}
    except Exception as exc:
        result["clock_error"] = _short(exc)
        global_ok = False

    phase_s["clock"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    _phase(store, rank, "allreduce")
    ar: dict[str, Any] = {}
    if global_ok:
        try:
            t = torch.zeros(numel, dtype=torch.float32, device=device)
            ar["seconds"] = time_allreduce(_Delayed(dist, _delay_for(None)), t, plan["iters"], plan["warmup"],
                                          groups=plan["iters"])
            n = len(members)
            chk = torch.full((1024,), float(me + 1), dtype=torch.float32, device=device)
            dist.all_reduce(chk)
            ar["correct"] = bool((chk == n * (n + 1) / 2).all().item())
            del t
        except Exception as exc:
            ar["error"] = _short(exc)
            global_ok = False
    else:
        ar["error"] = "skipped: the clock test on the same process group failed"
    result["allreduce"] = ar
    phase_s["allreduce"] = time.perf_counter() - t0
    t0 = time.perf_counter()

    rounds = plan["rounds"]
    for i, rnd in enumerate(rounds):
        _phase(store, rank, f"pairs {i + 1}/{len(rounds)}")
        if global_ok:
            try:
                dist.barrier()  # all pairs of a round start together
            except Exception:
                global_ok = False
        mine = [p for p in rnd if rank in p]
        if not mine:
            continue
        a, b = mine[0]
        peer = b if rank == a else a
        entry: dict[str, Any] = {"round": i, "peer": peer}
        grp = None
        try:
            grp = dist.new_group([idx[a], idx[b]], use_local_synchronization=True,
                                 timeout=_dt.timedelta(seconds=opts.timeout_s))
            t = torch.zeros(numel, dtype=torch.float32, device=device)
            entry["seconds"] = time_allreduce(_Delayed(dist, _delay_for(node_of.get(peer))), t, plan["iters"],
                                              plan["warmup"], group=grp, groups=plan["iters"])
        except Exception as exc:
            entry["error"] = _short(exc)
        finally:
            if grp is not None:
                try:
                    dist.destroy_process_group(grp)
                except Exception:
                    pass
        result["pairs"].append(entry)
    if plan["device"] == "cuda":
        torch.cuda.synchronize()
    phase_s["pairs"] = time.perf_counter() - t0
    return result
