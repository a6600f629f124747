"""What a confirmation rank runs: its phase file (State), step marks, and the copy and all-reduce tasks
(standard library + torch only, as :mod:`gpudoctor.confirm.worker`; raw times in seconds)."""
from __future__ import annotations

import json
import math
import os
import time

from gpudoctor.confirm.collectives import time_allreduce, timed_calls
from gpudoctor.confirm.plan import (
    FAULT_ENV,
    fmt_size,
)
from gpudoctor.confirm.protocol import AllreduceCfg, CopyCfg, RankState, Spec, check_message

EXACT_LIMIT = {"bfloat16": 256, "float16": 2048, "float32": 2 ** 24}  # largest integer each dtype holds exactly
EPS = {"bfloat16": 2 ** -7, "float16": 2 ** -10, "float32": 2 ** -23}


def write_json(path: str, obj) -> None:
    """Write ``obj`` as JSON atomically (temp file + rename): a reader never sees half a file."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(obj, fh)
    os.replace(tmp, path)



# --------------------------------------------------------------------------------------------------
# rank side
class State:
    """The rank's state file: what it is doing now (phase, human label, progress step)."""

    def __init__(self, rundir: str, rank: int, total: int):
        self.path = os.path.join(rundir, f"state-rank{rank}.json")
        self.rank, self.total, self.step = rank, total, 0
        self.joined = False
        self.phase = "start"

    def set(self, phase: str, label: str, advance: bool = True, **extra) -> None:
        if advance:
            self.step += 1
        self.phase = phase
        write_json(self.path, check_message(RankState, {
            "rank": self.rank, "pid": os.getpid(), "phase": phase, "label": label, "step": min(self.step, self.total),
            "total": self.total, "joined": self.joined, "t": time.time(), **extra}))


class Marks:
    """Timestamps on the device timeline: CUDA events on GPU, perf_counter on CPU (ops are synchronous)."""

    def __init__(self, torch, cuda: bool):
        self.torch, self.cuda = torch, cuda

    def mark(self):
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def seconds(self, a, b) -> float:
        return a.elapsed_time(b) / 1e3 if self.cuda else b - a

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()


def _maybe_fault(fault, at: str, state: State) -> None:
    if not fault or fault["at"] != at:
        return
    if fault["kind"] == "exit":
        os._exit(3)
    if fault["kind"] == "raise":
        raise RuntimeError(f"injected fault at {at} (test-only {FAULT_ENV})")
    while True:  # hang: keep the state as it is and never return
        time.sleep(0.5)


def _progress_total(spec: Spec, n: int) -> int:
    tasks = spec["tasks"]
    total = 2  # start, rendezvous
    if "copy" in tasks:
        total += 1
    if "allreduce" in tasks:
        total += len(spec["allreduce"]["sizes"]) * len(spec["allreduce"]["dtypes"])
    if "ddp" in tasks:
        total += 4 + (1 if n > 1 else 0) + (1 if n > 1 and spec["ddp"]["baseline"] else 0)
    return total


def _device_info(torch, idx: int) -> dict:
    p = torch.cuda.get_device_properties(idx)
    info = {"index": idx, "name": p.name, "capability": f"{p.major}.{p.minor}", "total_memory_bytes": p.total_memory}
    uuid = getattr(p, "uuid", None)
    if uuid is not None:
        info["uuid"] = str(uuid)
    if hasattr(p, "pci_bus_id") and hasattr(p, "pci_device_id"):
        info["pci_bus_id"] = f"{getattr(p, 'pci_domain_id', 0):08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0"
    return info


def task_copy(torch, dist, rank: int, n: int, cfg: CopyCfg, state: State, fault) -> dict | None:
    """Pinned host<->device copies, one GPU at a time (others wait at a barrier). Seconds per copy."""
    state.set("copy", f"pinned host<->device copies, {fmt_size(cfg['size_bytes'])} per GPU")
    _maybe_fault(fault, "copy", state)
    out = None
    for turn in range(n):
        if turn == rank:
            size = cfg["size_bytes"]
            host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
            dev = torch.empty(size, dtype=torch.uint8, device="cuda")
            m = Marks(torch, True)
            for _ in range(cfg["warmup"]):
                dev.copy_(host, non_blocking=True)
                host.copy_(dev, non_blocking=True)
            m.sync()
            h2d, d2h = [], []
            for _ in range(cfg["iters"]):
                a = m.mark()
                dev.copy_(host, non_blocking=True)
                b = m.mark()
                host.copy_(dev, non_blocking=True)
                c = m.mark()
                h2d.append((a, b))
                d2h.append((b, c))
            m.sync()
            out = {"size_bytes": size, "h2d_s": [m.seconds(a, b) for a, b in h2d],
                   "d2h_s": [m.seconds(a, b) for a, b in d2h]}
            del host, dev
        dist.barrier()
    return out


def task_allreduce(torch, dist, rank: int, n: int, device: str, cfg: AllreduceCfg, state: State, fault) -> list:
    """All-reduce sweep (sizes x dtypes): correctness check, then timed calls (checklist C1, C7)."""
    results = []
    for dname in cfg["dtypes"]:
        dtype = getattr(torch, dname)
        elem = torch.tensor([], dtype=dtype).element_size()
        for size in cfg["sizes"]:
            numel = max(1, size // elem)
            state.set("allreduce", f"all-reduce {dname} {fmt_size(size)}", size_bytes=size, dtype=dname)
            _maybe_fault(fault, "allreduce", state)
            entry = {"dtype": dname, "size_bytes": numel * elem, "iters": 0, "times_s": []}
            try:
                # correctness: rank r contributes (r+1) * pattern, pattern = 1,2,3,4,1,2,...
                pattern = torch.tensor([1, 2, 3, 4], dtype=dtype, device=device).repeat(numel // 4 + 1)[:numel]
                t = pattern * (rank + 1)
                dist.all_reduce(t)
                factor = n * (n + 1) // 2
                expected = pattern * factor
                err = float((t - expected).abs().max().item())  # native dtype: no fp32 copies of 1 GiB tensors
                err = err if math.isfinite(err) else float("inf")
                top = 4 * factor
                tol = 0.0 if top <= EXACT_LIMIT.get(dname, 0) else top * EPS.get(dname, 1e-3) * n
                bad = torch.tensor([err], dtype=torch.float64 if device == "cpu" else torch.float32, device=device)
                dist.all_reduce(bad, op=dist.ReduceOp.MAX)
                worst = float(bad.item())
                entry.update(correct=bool(worst <= tol), max_abs_error=worst, tolerance=tol)
                del pattern, expected
                t.zero_()  # zeros stay zeros: repeated in-place sums never overflow
                iters = timed_calls(cfg["iters"], size)
                entry["times_s"] = time_allreduce(dist, t, iters=iters, warmup=cfg["warmup"])
                entry["iters"] = iters
                del t
            except RuntimeError as exc:
                # only local trouble is recorded and skipped (no memory for this size, a dtype the backend
                # lacks); anything else (a lost peer, a broken communicator) ends the run
                text = str(exc).lower()
                if "out of memory" not in text and "unsupported" not in text and "not supported" not in text:
                    raise
                entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                if device == "cuda":
                    torch.cuda.empty_cache()
            results.append(entry)
    return results
