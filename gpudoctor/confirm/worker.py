"""Confirmation-run worker: ``python -m gpudoctor.confirm.worker RUNDIR`` in the *target* interpreter.

Standard library + torch only (the target interpreter may lack pydantic); gpudoctor's own
process starts this as a subprocess and validates the JSON it leaves in ``RUNDIR``.

The launcher (this module's :func:`main`) reads ``RUNDIR/spec.json``, picks a free port on
127.0.0.1 and starts one process per GPU (or per CPU rank with gloo) with PyTorch's own
``torch.multiprocessing.start_processes`` (spawn). It supervises them against a deadline:
a rank that exits or raises, or a run still going at the deadline (a hung collective, a rank
that never joined the rendezvous), ends the run; every rank still alive is SIGKILLed, and
``RUNDIR/result.json`` says how it ended.

Each rank writes, in ``RUNDIR``:
  - ``state-rank{r}.json``: its current phase, rewritten atomically at each phase change (it
    names what hung when the launcher gives up, and feeds the progress bar);
  - ``rank{r}.log``: its stdout/stderr; ``nccl-rank{r}.log``: NCCL's log (NCCL_DEBUG=WARN unless
    the user asked for more; checklist C6);
  - ``result-rank{r}.json``: its measurements (raw times in seconds; statistics are computed by
    the parent).

Test-only fault injection: ``GPUDOCTOR_CONFIRM_FAULT=RANK:KIND:AT[:unless=VAR]`` makes rank RANK
hang / exit(3) / raise at phase AT (init, copy, allreduce, ddp); see :func:`plan.parse_fault`.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import socket
import sys
import time
import traceback

from gpudoctor.confirm.collectives import time_allreduce
from gpudoctor.confirm.plan import (
    AUTO_BATCHES,
    AUTO_MAX_TOKENS,
    AUTO_MEMORY_FRACTION,
    BERT_BASE_BYTES_PER_TOKEN,
    BERT_BASE_FIXED_BYTES,
    FAULT_ENV,
    auto_batch,
    fmt_size,
    parse_fault,
)

EXACT_LIMIT = {"bfloat16": 256, "float16": 2048, "float32": 2 ** 24}  # largest integer each dtype holds exactly
EPS = {"bfloat16": 2 ** -7, "float16": 2 ** -10, "float32": 2 ** -23}


def write_json(path: str, obj) -> None:
    """Write ``obj`` as JSON atomically (temp file + rename): a reader never sees half a file."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(obj, fh)
    os.replace(tmp, path)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (as torchrun picks one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        write_json(self.path, {"rank": self.rank, "pid": os.getpid(), "phase": phase, "label": label,
                               "step": min(self.step, self.total), "total": self.total, "joined": self.joined,
                               "t": time.time(), **extra})


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


def _progress_total(spec: dict, n: int) -> int:
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


def task_copy(torch, dist, rank: int, n: int, cfg: dict, state: State, fault) -> dict:
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
                a = m.mark(); dev.copy_(host, non_blocking=True); b = m.mark()
                host.copy_(dev, non_blocking=True); c = m.mark()
                h2d.append((a, b)); d2h.append((b, c))
            m.sync()
            out = {"size_bytes": size, "h2d_s": [m.seconds(a, b) for a, b in h2d],
                   "d2h_s": [m.seconds(a, b) for a, b in d2h]}
            del host, dev
        dist.barrier()
    return out


def task_allreduce(torch, dist, rank: int, n: int, device: str, cfg: dict, state: State, fault) -> list:
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
                iters = cfg["iters"] if size < 256 * 1024 ** 2 else max(3, cfg["iters"] // 2)
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


def _optimizer(torch, params, lr: float, cuda: bool):
    try:
        return torch.optim.AdamW(params, lr=lr, fused=True), "AdamW(fused)"
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(params, lr=lr, foreach=cuda), "AdamW(foreach)" if cuda else "AdamW"


def _train_steps(torch, model, loss_fn, opt, scaler, autocast, ids, labels, marks: Marks, warmup: int, steps: int,
                 no_sync=None) -> dict:
    """Warm-up then timed steps; returns per-step forward/backward/optimizer/step seconds and losses."""
    import contextlib

    rows, losses = [], []
    for i in range(warmup + steps):
        ctx = no_sync() if no_sync is not None else contextlib.nullcontext()
        with ctx:
            a = marks.mark()
            with autocast():
                loss = loss_fn(model, ids, labels)
            b = marks.mark()
            (scaler.scale(loss) if scaler else loss).backward()
            c = marks.mark()
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        d = marks.mark()
        losses.append(loss.detach())
        if i >= warmup:
            rows.append((a, b, c, d))
    marks.sync()
    # the timed window end to end (gaps between steps included): what a loop timed with one event pair
    # gives, and what throughput follows from
    window = marks.seconds(rows[0][0], rows[-1][3]) / len(rows) if rows else None
    return {"window_step_s": window,
            "forward_s": [marks.seconds(a, b) for a, b, _, _ in rows],
            "backward_s": [marks.seconds(b, c) for _, b, c, _ in rows],
            "optimizer_s": [marks.seconds(c, d) for _, _, c, d in rows],
            "step_s": [marks.seconds(a, d) for a, _, _, d in rows],
            "losses": [float(x.float().item()) for x in losses]}


def _resolve_batch(torch, dist, cfg: dict, cuda: bool) -> tuple[int, str]:
    """The step's batch (per rank, or global under strong scaling) and how it was chosen. "auto" (the GPU
    default): :func:`plan.auto_batch` on this rank's free memory, then the minimum over ranks (an
    all-reduce), so every rank runs the same batch."""
    if cfg["batch"] != "auto":
        return int(cfg["batch"]), ("given (--batch)" if cfg.get("batch_given") else "default of the tiny model")
    if not cuda:
        return 4, "default of the tiny model"
    free, _total = torch.cuda.mem_get_info()
    mine, _est = auto_batch(free, cfg["seq"])
    t = torch.tensor([mine], dtype=torch.int64, device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    batch = int(t.item())
    est = BERT_BASE_FIXED_BYTES + BERT_BASE_BYTES_PER_TOKEN * batch * cfg["seq"]
    if est > AUTO_MEMORY_FRACTION * free:
        return batch, (f"auto: even the smallest batch ({batch}) is estimated at {est / 1e9:.1f} GB, more than "
                       f"{AUTO_MEMORY_FRACTION:.0%} of the {free / 1e9:.1f} GB free on rank {dist.get_rank()}: "
                       f"free GPU memory (other processes?) or pass a smaller --seq")
    return batch, (f"auto: the largest of {'/'.join(map(str, AUTO_BATCHES))} with at most {AUTO_MAX_TOKENS} tokens "
                   f"whose estimated peak ({est / 1e9:.1f} GB) fits {AUTO_MEMORY_FRACTION:.0%} of every GPU's free memory "
                   f"(rank {dist.get_rank()}: {free / 1e9:.0f} GB free)")


def task_ddp(torch, dist, rank: int, n: int, device: str, cfg: dict, state: State, fault) -> dict:
    """DDP BERT smoke step (checklist C2-C5, C8); returns raw timings and checks."""
    import contextlib

    from torch.nn.parallel import DistributedDataParallel as DDP

    from gpudoctor.confirm import bert

    cuda = device == "cuda"
    marks = Marks(torch, cuda)
    strong = cfg["scaling"] == "strong"
    batch, batch_choice = _resolve_batch(torch, dist, cfg, cuda)
    per_rank = max(1, batch // n) if strong else batch
    if strong and per_rank * n != batch:  # one rank per GPU, GPU count not known when the plan was made
        batch_choice += f"; global batch {batch} is not a multiple of {n} ranks: {per_rank * n} used"
    state.set("ddp", f"DDP: building {cfg['model']} model")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        major, _ = torch.cuda.get_device_capability()
        dtype = torch.bfloat16 if major >= 8 else torch.float16
        precision = "bf16 autocast" if major >= 8 else "fp16 autocast + GradScaler"
    else:
        dtype, precision = None, "fp32"

    def autocast():
        return torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()

    def make_scaler():
        if not cuda or dtype is not torch.float16:
            return None
        try:
            return torch.amp.GradScaler("cuda")
        except (AttributeError, TypeError):
            return torch.cuda.amp.GradScaler()

    torch.manual_seed(1234 + rank)  # different init per rank: DDP must broadcast rank 0's parameters
    model, loss_fn = bert.build(cfg["model"], cfg["config"], device)
    vocab = model.config.vocab_size if cfg["model"] == "hf" else cfg["config"]["vocab"]
    params = sum(p.numel() for p in model.parameters())
    ddp = DDP(model, device_ids=[torch.cuda.current_device()] if cuda else None, gradient_as_bucket_view=True)
    opt, opt_name = _optimizer(torch, ddp.parameters(), cfg["lr"], cuda)
    ids, labels = bert.synthetic_batch(per_rank, cfg["seq"], vocab, device, seed=100 + rank)
    state.set("ddp", f"DDP: {cfg['warmup']} warm-up + {cfg['steps']} timed steps, batch {per_rank}/rank x seq {cfg['seq']}")
    _maybe_fault(fault, "ddp", state)
    main = _train_steps(torch, ddp, loss_fn, opt, make_scaler(), autocast, ids, labels, marks, cfg["warmup"], cfg["steps"])
    out = {"model": cfg["model"], "params": params, "grad_bytes": params * 4, "precision": precision,
           "optimizer": opt_name, "per_rank_batch": per_rank, "global_batch": per_rank * n, "seq": cfg["seq"],
           "warmup": cfg["warmup"], "steps": cfg["steps"], "scaling": cfg["scaling"], "batch_choice": batch_choice,
           "ddp": main}

    state.set("ddp-check", "DDP: comparing parameters across ranks")
    flat = torch.cat([p.detach().float().reshape(-1) for p in model.parameters()])
    hi, lo = flat.clone(), flat.clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    out["params_max_abs_diff"] = float((hi - lo).abs().max().item())
    del hi, lo, flat

    state.set("ddp-allreduce", f"all-reduce of the gradient size ({fmt_size(params * 4)} fp32)")
    buf = torch.zeros(params, dtype=torch.float32, device=device)
    out["grad_allreduce_s"] = time_allreduce(dist, buf, iters=5 if cuda else 3, warmup=2 if cuda else 1)
    del buf

    if n > 1:
        state.set("ddp-nosync", "DDP: timed steps without gradient all-reduce (no_sync)")
        out["nosync"] = _train_steps(torch, ddp, loss_fn, opt, make_scaler(), autocast, ids, labels, marks, 1,
                                     cfg["steps"], no_sync=ddp.no_sync)
    if cuda:
        out["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    dist.barrier()
    if n > 1 and cfg["baseline"] and rank == 0:
        # T1: the same model and settings on this one device, no DDP, no other rank involved (C2)
        batch1 = per_rank * n if strong else per_rank
        state.set("baseline", f"single-device baseline: {cfg['steps']} timed steps, batch {batch1}")
        del ddp, opt, model
        if cuda:
            torch.cuda.empty_cache()
        torch.manual_seed(1234)
        model1, loss_fn1 = bert.build(cfg["model"], cfg["config"], device)
        opt1, _ = _optimizer(torch, model1.parameters(), cfg["lr"], cuda)
        ids1, labels1 = bert.synthetic_batch(batch1, cfg["seq"], vocab, device, seed=100)
        out["baseline"] = _train_steps(torch, model1, loss_fn1, opt1, make_scaler(), autocast, ids1, labels1, marks,
                                       cfg["warmup"], cfg["steps"])
        out["baseline"]["batch"] = batch1
    return out


def rank_main(rank: int, spec: dict) -> None:
    """One rank: join the process group on 127.0.0.1, run the tasks, write result-rank{rank}.json."""
    rundir, n = spec["rundir"], spec["nproc"]
    fd = os.open(os.path.join(rundir, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        sys.stdout.reconfigure(line_buffering=True)
        sys.stderr.reconfigure(line_buffering=True)
    except AttributeError:  # pragma: no cover
        pass
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(spec["port"]),
                      NCCL_DEBUG_FILE=os.path.join(rundir, f"nccl-rank{rank}.log"))
    if os.environ.get("NCCL_DEBUG", "").upper() not in ("WARN", "INFO", "TRACE"):
        os.environ["NCCL_DEBUG"] = "WARN"
    fault = parse_fault(os.environ.get(FAULT_ENV), dict(os.environ))
    fault = fault if fault and fault["rank"] == rank else None
    state = State(rundir, rank, _progress_total(spec, n))
    state.set("start", "starting (import torch)")
    try:
        import torch
        import torch.distributed as dist

        device = spec["device"]
        _maybe_fault(fault, "init", state)
        result: dict = {"rank": rank, "pid": os.getpid()}
        if device == "cuda":
            torch.cuda.set_device(rank)
            result["device"] = _device_info(torch, rank)
        else:
            threads = max(1, (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) // n)
            torch.set_num_threads(threads)
            result["cpu_threads"] = threads
        state.set("rendezvous", f"rendezvous on 127.0.0.1:{spec['port']} (world size {n})")
        dist.init_process_group(spec["backend"], init_method=f"tcp://127.0.0.1:{spec['port']}", rank=rank,
                                world_size=n, timeout=datetime.timedelta(seconds=spec["pg_timeout_s"]))
        dist.barrier()
        state.joined = True
        tasks = spec["tasks"]
        out_path = os.path.join(rundir, f"result-rank{rank}.json")
        write_json(out_path, result)  # rewritten after each task: a later hang keeps what was measured
        if "copy" in tasks and device == "cuda":
            result["copy"] = task_copy(torch, dist, rank, n, spec["copy"], state, fault)
            write_json(out_path, result)
        if "allreduce" in tasks:
            ar = task_allreduce(torch, dist, rank, n, device, spec["allreduce"], state, fault)
            if rank == 0:
                result["allreduce"] = ar
            write_json(out_path, result)
        if "ddp" in tasks:
            result["ddp"] = task_ddp(torch, dist, rank, n, device, spec["ddp"], state, fault)
        if device == "cpu" or "ddp" not in tasks:
            try:
                import resource

                result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            except (ImportError, OSError):  # pragma: no cover
                pass
        write_json(out_path, result)
        state.set("done", "done")
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - teardown errors change nothing measured
            pass
    except BaseException as exc:
        tb = traceback.format_exc().strip().splitlines()
        state.set("error", f"failed during {state.phase}", advance=False, failed_phase=state.phase,
                  error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:500] if str(exc) else ''}",
                  traceback=tb[-12:])
        raise


# --------------------------------------------------------------------------------------------------
# launcher side
def _versions(torch) -> dict:
    v = {"python": platform.python_version(), "interpreter": sys.executable, "torch": torch.__version__,
         "cuda": getattr(torch.version, "cuda", None)}
    try:
        nccl = torch.cuda.nccl.version()
        v["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl)
    except Exception:  # noqa: BLE001 - CPU builds have no NCCL
        v["nccl"] = None
    return v


def supervise(procs, deadline: float, poll_s: float = 0.2) -> dict:
    """Wait for the rank processes until all end, one fails, or ``deadline`` (time.monotonic()).

    Returns {'status': ok|failed|hung, 'first_failed': rank or None}. Never kills anything itself.
    """
    from multiprocessing.connection import wait

    pending = {p.sentinel: i for i, p in enumerate(procs)}
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            return {"status": "hung", "first_failed": None}
        for s in wait(list(pending), timeout=min(poll_s, left)):
            i = pending.pop(s)
            procs[i].join()
            if procs[i].exitcode != 0:
                return {"status": "failed", "first_failed": i}
    return {"status": "ok", "first_failed": None}


def kill_all(procs, grace_s: float = 1.0) -> list[int]:
    """SIGKILL every rank still alive after ``grace_s`` (time to write a last state); returns their ranks."""
    end = time.monotonic() + grace_s
    for p in procs:
        p.join(max(0.0, end - time.monotonic()))
    killed = []
    for i, p in enumerate(procs):
        if p.is_alive():
            p.kill()
            killed.append(i)
    for p in procs:
        p.join(5)
    return killed


def main(argv=None) -> int:
    """Launcher entry point. Exit code 0 when result.json was written (whatever the run's outcome)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write("usage: python -m gpudoctor.confirm.worker RUNDIR\n")
        return 2
    rundir = os.path.abspath(argv[0])
    t0 = time.monotonic()
    result_path = os.path.join(rundir, "result.json")
    with open(os.path.join(rundir, "spec.json")) as fh:
        spec = json.load(fh)
    try:
        import torch
        import torch.multiprocessing as mp
    except Exception as exc:  # noqa: BLE001
        write_json(result_path, {"status": "error", "message": f"cannot import torch: {type(exc).__name__}: {exc}",
                                 "versions": {"python": platform.python_version(), "interpreter": sys.executable}})
        return 0
    versions = _versions(torch)
    n = spec.get("nproc") or 0  # 0: one process per GPU torch sees
    if spec["device"] == "cuda":
        if not torch.cuda.is_available():
            write_json(result_path, {"status": "error", "versions": versions,
                                     "message": "torch.cuda.is_available() is False in the target interpreter"})
            return 0
        seen = torch.cuda.device_count()
        n = n or seen
        spec["nproc"] = n
        if seen < n:
            write_json(result_path, {"status": "error", "versions": versions,
                                     "message": f"{n} processes asked for but torch sees {seen} GPU(s)"})
            return 0
    if n < 1:
        n = spec["nproc"] = 2
    if "ddp" in spec["tasks"] and spec["ddp"]["model"] == "hf":
        import importlib.util

        if importlib.util.find_spec("transformers") is None:
            write_json(result_path, {"status": "error", "versions": versions,
                                     "message": f"--model hf needs transformers, not installed in {sys.executable}"})
            return 0
    if spec["backend"] == "nccl" and not (hasattr(torch, "distributed") and torch.distributed.is_nccl_available()):
        write_json(result_path, {"status": "error", "versions": versions,
                                 "message": "this torch build has no NCCL backend"})
        return 0
    spec["rundir"] = rundir
    spec["port"] = free_port()
    spec.setdefault("pg_timeout_s", spec["timeout_s"] + 60)  # our deadline must come first
    # the parent fixes an absolute deadline (its --timeout counts from launch, torch import included)
    deadline = (time.monotonic() + spec["deadline_unix"] - time.time()) if "deadline_unix" in spec \
        else t0 + spec["timeout_s"]
    ctx = mp.start_processes(rank_main, args=(spec,), nprocs=n, join=False, start_method=spec.get("start_method", "spawn"))
    procs = list(ctx.processes)
    outcome = {"status": "hung", "first_failed": None}
    try:
        outcome = supervise(procs, deadline)
    finally:
        # a failed run: give the other ranks a moment to record their own error; a hung one: kill now
        killed = kill_all(procs, grace_s=1.0 if outcome["status"] == "failed" else 0.1)
    exitcodes = [p.exitcode for p in procs]
    traceback_text = None
    first = outcome["first_failed"]
    for i, err_file in enumerate(getattr(ctx, "error_files", None) or []):
        if i == first and os.path.exists(err_file) and os.path.getsize(err_file) > 0:
            import pickle

            try:
                with open(err_file, "rb") as fh:
                    traceback_text = str(pickle.load(fh))[-4000:]
            except Exception:  # noqa: BLE001
                traceback_text = None
        try:
            os.unlink(err_file)  # torch leaves these in the temp folder
        except OSError:
            pass
    write_json(result_path, {"status": outcome["status"], "first_failed": first, "exitcodes": exitcodes,
                             "world_size": n,
                             "killed": killed, "pids": [p.pid for p in procs], "port": spec["port"],
                             "elapsed_s": round(time.monotonic() - t0, 3), "versions": versions,
                             "traceback": traceback_text})
    return 0


if __name__ == "__main__":
    sys.exit(main())
