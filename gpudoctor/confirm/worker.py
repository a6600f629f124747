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
import os
import platform
import socket
import sys
import time
import traceback

from gpudoctor.confirm.ddp_task import task_ddp
from gpudoctor.confirm.plan import (
    FAULT_ENV,
    parse_fault,
)
from gpudoctor.confirm.protocol import LaunchResult, ProtocolError, RankResult, Spec, check_message
from gpudoctor.confirm.tasks import (
    State,
    _device_info,
    _maybe_fault,
    _progress_total,
    task_allreduce,
    task_copy,
    write_json,
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (as torchrun picks one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _save(path: str, result: dict) -> None:
    """Write this rank's result-rank{r}.json (checked against :class:`~gpudoctor.confirm.protocol.RankResult`)."""
    write_json(path, check_message(RankResult, result))


def rank_main(rank: int, spec: Spec) -> None:
    """One rank: join the process group on 127.0.0.1, run the tasks, write result-rank{rank}.json."""
    rundir, n = spec["rundir"], spec["nproc"]
    fd = os.open(os.path.join(rundir, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        # a TextIOWrapper here; TextIO has no reconfigure, the except covers other streams
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]
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
            threads = max(
                1, (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) // n
            )
            torch.set_num_threads(threads)
            result["cpu_threads"] = threads
        state.set("rendezvous", f"rendezvous on 127.0.0.1:{spec['port']} (world size {n})")
        dist.init_process_group(spec["backend"], init_method=f"tcp://127.0.0.1:{spec['port']}", rank=rank,
                                world_size=n, timeout=datetime.timedelta(seconds=spec["pg_timeout_s"]))
        dist.barrier()
        state.joined = True
        tasks = spec["tasks"]
        out_path = os.path.join(rundir, f"result-rank{rank}.json")
        _save(out_path, result)  # rewritten after each task: a later hang keeps what was measured
        if "copy" in tasks and device == "cuda":
            result["copy"] = task_copy(torch, dist, rank, n, spec["copy"], state, fault)
            _save(out_path, result)
        if "allreduce" in tasks:
            ar = task_allreduce(torch, dist, rank, n, device, spec["allreduce"], state, fault)
            if rank == 0:
                result["allreduce"] = ar
            _save(out_path, result)
        if "ddp" in tasks:
            result["ddp"] = task_ddp(torch, dist, rank, n, device, spec["ddp"], state, fault)
        if device == "cpu" or "ddp" not in tasks:
            try:
                import resource

                result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            except (ImportError, OSError):  # pragma: no cover
                pass
        _save(out_path, result)
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


def _finish(path: str, result: dict) -> int:
    """Write result.json (checked against :class:`~gpudoctor.confirm.protocol.LaunchResult`); the exit code 0."""
    write_json(path, check_message(LaunchResult, result))
    return 0


def _cannot_start(torch, spec: Spec) -> str | None:
    """Why this interpreter cannot run ``spec`` (None when it can); sets ``spec['nproc']`` (0: one rank per GPU
    torch sees; CPU default 2)."""
    n = spec.get("nproc") or 0
    if spec["device"] == "cuda":
        if not torch.cuda.is_available():
            return "torch.cuda.is_available() is False in the target interpreter"
        seen = torch.cuda.device_count()
        n = spec["nproc"] = n or seen
        if seen < n:
            return f"{n} processes asked for but torch sees {seen} GPU(s)"
    if n < 1:
        spec["nproc"] = 2
    if "ddp" in spec["tasks"] and spec["ddp"]["model"] == "hf":
        import importlib.util

        if importlib.util.find_spec("transformers") is None:
            return f"--model hf needs transformers, not installed in {sys.executable}"
    if spec["backend"] == "nccl" and not (hasattr(torch, "distributed") and torch.distributed.is_nccl_available()):
        return "this torch build has no NCCL backend"
    return None


def _first_traceback(ctx, first) -> str | None:
    """The traceback torch recorded for rank ``first`` (None if none); removes torch's error files."""
    text = None
    for i, err_file in enumerate(getattr(ctx, "error_files", None) or []):
        if i == first and os.path.exists(err_file) and os.path.getsize(err_file) > 0:
            import pickle

            try:
                with open(err_file, "rb") as fh:
                    text = str(pickle.load(fh))[-4000:]
            except Exception:  # noqa: BLE001
                text = None
        try:
            os.unlink(err_file)  # torch leaves these in the temp folder
        except OSError:
            pass
    return text


def main(argv=None) -> int:
    """Launcher entry point. Exit code 0 when result.json was written (whatever the run's outcome)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write("usage: python -m gpudoctor.confirm.worker RUNDIR\n")
        return 2
    rundir = os.path.abspath(argv[0])
    t0 = time.monotonic()
    result_path = os.path.join(rundir, "result.json")
    base = {"python": platform.python_version(), "interpreter": sys.executable}
    with open(os.path.join(rundir, "spec.json")) as fh:
        spec = json.load(fh)
    try:
        check_message(Spec, spec, "spec.json")
    except ProtocolError as exc:
        return _finish(result_path, {"status": "error", "message": f"protocol error (a gpudoctor bug): {exc}",
                                     "versions": base})
    try:
        import torch
        import torch.multiprocessing as mp
    except Exception as exc:  # noqa: BLE001
        return _finish(result_path, {"status": "error", "versions": base,
                                     "message": f"cannot import torch: {type(exc).__name__}: {exc}"})
    versions = _versions(torch)
    why = _cannot_start(torch, spec)
    if why:
        return _finish(result_path, {"status": "error", "versions": versions, "message": why})
    n = spec["nproc"]
    spec["rundir"] = rundir
    spec["port"] = free_port()
    spec.setdefault("pg_timeout_s", spec["timeout_s"] + 60)  # our deadline must come first
    # the parent fixes an absolute deadline (its --timeout counts from launch, torch import included)
    deadline = (time.monotonic() + spec["deadline_unix"] - time.time()) if "deadline_unix" in spec \
        else t0 + spec["timeout_s"]
    ctx = mp.start_processes(
        rank_main, args=(spec,), nprocs=n, join=False, start_method=spec.get("start_method", "spawn")
    )
    procs = list(ctx.processes)
    outcome = {"status": "hung", "first_failed": None}
    try:
        outcome = supervise(procs, deadline)
    finally:
        # a failed run: give the other ranks a moment to record their own error; a hung one: kill now
        killed = kill_all(procs, grace_s=1.0 if outcome["status"] == "failed" else 0.1)
    first = outcome["first_failed"]
    return _finish(result_path, {"status": outcome["status"], "first_failed": first,
                                 "exitcodes": [p.exitcode for p in procs], "world_size": n, "killed": killed,
                                 "pids": [p.pid for p in procs], "port": spec["port"],
                                 "elapsed_s": round(time.monotonic() - t0, 3), "versions": versions,
                                 "traceback": _first_traceback(ctx, first)})


if __name__ == "__main__":
    sys.exit(main())
