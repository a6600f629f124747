"""The c10d store protocol of `gpudoctor cluster` (keys, bounded waits, phases, test-only hangs) and phase 2, the
per-node scan (see :mod:`gpudoctor.cluster.agent` for the protocol)."""
from __future__ import annotations

import datetime as _dt
import json
import os
import time
from typing import Any

from gpudoctor.cluster.launch import LaunchInfo
from gpudoctor.cluster.options import ClusterOptions

TEST_HANG = "GPUDOCTOR_TEST_HANG"
TEST_DELAY = "GPUDOCTOR_TEST_LINK_DELAY_MS"
TEST_SKEW = "GPUDOCTOR_TEST_CLOCK_SKEW_MS"
POLL_S = 0.1


class AgentError(Exception):
    """A failure this rank cannot work around (store unreachable, excluded by rank 0); one-line message."""


class Excluded(AgentError):
    """Rank 0 left this rank out (it was late or silent); not an error of this rank's making."""

    def __init__(self, message: str, store=None):
        super().__init__(message)
        self.store = store




# --------------------------------------------------------------------------------------------- store

def _put(store, key: str, obj: Any) -> None:
    store.set(key, json.dumps(obj))


def _get(store, key: str) -> Any:
    return json.loads(store.get(key))


def _wait_count(store, counter: str, target: int, deadline: float) -> int:
    """Poll the counter ``counter`` until it reaches ``target`` or ``deadline`` (time.monotonic) passes."""
    while True:
        got = store.add(counter, 0)
        if got >= target or time.monotonic() >= deadline:
            return got
        time.sleep(POLL_S)


def _present(store, keys: list[str]) -> list[str]:
    return [k for k in keys if store.check([k])]


def connect(dist, launch: LaunchInfo, timeout_s: float, op_timeout_s: float):
    """The c10d store shared by all ranks, under a per-run prefix. Raises AgentError when unreachable.

    ``timeout_s`` bounds connecting (rank 0 may start later than the others); ``op_timeout_s`` each later
    blocking store call.
    """
    td = _dt.timedelta(seconds=timeout_s)
    try:
        base = dist.TCPStore(launch.master_addr, launch.master_port, None, launch.host_store, td,
                             wait_for_workers=False)
        base.set_timeout(_dt.timedelta(seconds=op_timeout_s))
    except Exception as exc:  # RuntimeError / DistStoreError / TimeoutError
        what = "serve" if launch.host_store else "reach"
        raise AgentError(
            f"cannot {what} the c10d store at {launch.master_addr}:{launch.master_port} "
            f"within {timeout_s:g} s: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from exc
    return dist.PrefixStore(f"gpudoctor/{launch.run_id}/{launch.restart_count}/", base)


def _phase(store, rank: int, name: str) -> None:
    try:
        store.set(f"phase/{rank}", name)
    except Exception:
        pass


def _test_hang(phase: str) -> None:
    if os.environ.get(TEST_HANG) == phase:
        while True:  # test-only: behave like a node stuck in this phase until killed
            time.sleep(3600)


# ---------------------------------------------------------------------------------------------- scan

def scan_node(opts: ClusterOptions):
    """This node's own scan (the usual probes and rules). Returns (Report, seconds)."""
    from gpudoctor.probes.registry import PROBES, scan
    from gpudoctor.rules import evaluate

    probes = PROBES if opts.probes is None else [p for p in PROBES if p.name in opts.probes]
    t0 = time.perf_counter()
    snap = scan(opts.probe_opts, probes)
    return evaluate(snap), time.perf_counter() - t0
