"""Launch confirmation runs from gpudoctor's own process (which never imports torch).

:func:`confirm` starts ``python -m gpudoctor.confirm.worker RUNDIR`` in the *target* interpreter
(the one the torch probe uses) through :func:`~gpudoctor.probes.subproc.run_cmd` (own process
group, hard timeout), follows the ranks' state files for progress, reaps any process of the run
left behind, validates what the workers wrote and, after a failure or hang on GPUs, re-runs once
with ``NCCL_P2P_DISABLE=1`` and once with ``NCCL_SHM_DISABLE=1`` to name the transport at fault.

The worker imports only the standard library and torch; the target interpreter finds the
``gpudoctor`` package through a private folder holding a link to it (``RUNDIR/pkg``) put first on
``PYTHONPATH``, so nothing else of gpudoctor's environment (pydantic, rich, ...) can shadow the
target's own packages (think of gpudoctor installed with pipx).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from gpudoctor.confirm import analysis
from gpudoctor.confirm.plan import RUN_ENV, make_spec, retry_spec
from gpudoctor.confirm.protocol import LaunchResult, ProtocolError, RankResult, RankState, Spec, check_message
from gpudoctor.facts.model import ConfirmationFacts, ConfirmationRun, RankStatus
from gpudoctor.probes.subproc import run_cmd

#: Seconds the outer guard waits past the run's deadline before killing the launcher's process group
#: (the launcher itself stops the ranks at the deadline; this only catches a stuck launcher).
BACKSTOP_S = 15.0
TRANSPORT_RETRIES = (("NCCL_P2P_DISABLE=1", {"NCCL_P2P_DISABLE": "1"}),
                     ("NCCL_SHM_DISABLE=1", {"NCCL_SHM_DISABLE": "1"}))


@dataclass
class Progress:
    """What the runs are doing now (for the progress bar). ``elapsed_s`` since this run started."""

    run: str
    label: str
    step: int
    total: int
    elapsed_s: float


ProgressFn = Callable[[Progress], None]


@dataclass
class Launch:
    """One launch: the typed run summary plus the raw per-rank results the facts are built from."""

    run: ConfirmationRun
    result: dict = field(default_factory=dict)
    rank_results: dict[int, dict] = field(default_factory=dict)
    world_size: int | None = None


def _package_dir(rundir: Path) -> Path:
    """RUNDIR/pkg with a link (or, where links fail, a copy) to the gpudoctor package."""
    from gpudoctor.confirm.selftest import package_path

    return package_path(rundir)


def _read_json(path: Path) -> dict | None:
    try:
        with open(path) as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _read_text(path: Path, limit: int = 256 * 1024) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _states(rundir: Path) -> dict[int, dict]:
    out = {}
    for p in rundir.glob("state-rank*.json"):
        d = _read_json(p)
        if d and isinstance(d.get("rank"), int):
            out[d["rank"]] = d
    return out


def _rank_results(rundir: Path) -> dict[int, dict]:
    out = {}
    for p in rundir.glob("result-rank*.json"):
        r, d = p.name[len("result-rank"):-len(".json")], _read_json(p)
        if r.isdigit() and d is not None:
            out[int(r)] = d
    return out


def find_run_processes(run_id: str) -> list[psutil.Process]:
    """Processes whose environment carries this run's marker (launcher, ranks, their children)."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.pid == os.getpid():
                continue
            if p.environ().get(RUN_ENV) == run_id:
                found.append(p)
        except (psutil.Error, OSError):
            continue
    return found


def reap(run_id: str, wait_s: float = 1.0) -> int:
    """Kill every process of the run still alive ``wait_s`` after the launcher ended; returns how many."""
    end = time.monotonic() + wait_s
    left = find_run_processes(run_id)
    while left and time.monotonic() < end:
        time.sleep(0.1)
        left = [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    killed = 0
    for p in left:
        try:
            p.send_signal(signal.SIGKILL)
            killed += 1
        except (psutil.Error, OSError):
            pass
    if left:
        psutil.wait_procs(left, timeout=3)
    return killed


INTERRUPTED = "interrupted (Ctrl-C or SIGTERM): the ranks were stopped; what they had measured is kept"


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM during a launch: the ranks are ended, ``launch`` holds what they had measured."""

    def __init__(self, launched: Launch) -> None:
        super().__init__(INTERRUPTED)
        self.launched = launched


class ConfirmInterrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM during the confirmation runs; ``facts`` (status 'interrupted') keeps the measurements.

    A KeyboardInterrupt, so a caller that only knows Ctrl-C still stops; one that reports uses ``facts``."""

    def __init__(self, facts: ConfirmationFacts) -> None:
        super().__init__(INTERRUPTED)
        self.facts = facts


def launch(spec: dict, python: str, *, name: str = "main", env_extra: dict[str, str] | None = None,
           on_progress: ProgressFn | None = None, keep_logs: bool = False) -> Launch:
    """Run the worker once with ``spec`` in interpreter ``python``; never raises for a failing run.

    The run's deadline is ``spec['timeout_s']`` from now (torch import included). Logs stay in a
    temporary folder when the run did not end 'ok' (or ``keep_logs``), else the folder is removed.
    """
    timeout = float(spec["timeout_s"])
    spec = check_message(Spec, dict(spec, deadline_unix=time.time() + timeout), "spec.json")
    rundir = Path(tempfile.mkdtemp(prefix="gpudoctor-confirm-"))
    run_id = uuid.uuid4().hex
    (rundir / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ)
    pkg = _package_dir(rundir)
    env["PYTHONPATH"] = os.pathsep.join([str(pkg)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env[RUN_ENV] = run_id
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(env_extra or {})
    box: dict[str, Any] = {}
    t0 = time.monotonic()

    def target():
        box["res"] = run_cmd([python, "-m", "gpudoctor.confirm.worker", str(rundir)], timeout=timeout + BACKSTOP_S,
                             env=env, cwd=str(rundir))

    th = threading.Thread(target=target, name=f"confirm-{name}", daemon=True)
    th.start()
    try:
        while th.is_alive():
            th.join(0.25)
            if on_progress is not None:
                st = _states(rundir).get(0)
                if st:
                    on_progress(Progress(name, st.get("label") or st.get("phase") or "", int(st.get("step") or 0),
                                         int(st.get("total") or 1), time.monotonic() - t0))
                else:
                    on_progress(Progress(name, "starting the workers (import torch)", 0, 1, time.monotonic() - t0))
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM: end the ranks, keep what they wrote, leave nothing behind
        reap(run_id, wait_s=0.0)
        try:
            launched = collect(rundir, spec, name=name, env_extra=env_extra, cmd=None,
                               seconds=round(time.monotonic() - t0, 3), keep_logs=False)
        except Exception:  # noqa: BLE001 - reading what is left must not hide the interrupt
            launched = None
        shutil.rmtree(rundir, ignore_errors=True)
        if launched is None:
            raise
        launched.run.status, launched.run.message, launched.run.log_dir = "interrupted", INTERRUPTED, None
        raise RunInterrupted(launched) from None
    except BaseException:  # anything else: take the whole run down with us, leave nothing behind
        reap(run_id, wait_s=0.0)
        shutil.rmtree(rundir, ignore_errors=True)
        raise
    orphans = reap(run_id)
    launched = collect(rundir, spec, name=name, env_extra=env_extra, cmd=box.get("res"),
                       seconds=round(time.monotonic() - t0, 3), orphans=orphans, keep_logs=keep_logs)
    if launched.run.log_dir is None:
        shutil.rmtree(rundir, ignore_errors=True)
    return launched


def collect(rundir: Path, spec: dict, *, name: str = "main", env_extra: dict[str, str] | None = None,
            cmd=None, seconds: float = 0.0, orphans: int = 0, keep_logs: bool = True) -> Launch:
    """Read what a launch left in ``rundir`` (result.json, state/result/log files per rank) into a Launch.

    ``cmd``: the launcher's CmdResult (None when unknown); a missing result.json means the launcher
    was killed (timeout) or died. ``run.log_dir`` is set when the run failed or ``keep_logs``.
    """
    rundir = Path(rundir)
    timeout = float(spec["timeout_s"])
    result = _read_json(rundir / "result.json")
    states = _states(rundir)
    rank_results = _rank_results(rundir)
    try:
        _check_outputs(result, states, rank_results)
    except ProtocolError as exc:  # a gpudoctor bug: the run's figures cannot be trusted to mean what they say
        result, rank_results = {"status": "error", "message": f"protocol error (a gpudoctor bug): {exc}"}, {}
    if result is None:
        why = cmd.describe_failure() if cmd is not None and not cmd.ok else "wrote no result"
        status = "hung" if cmd is not None and cmd.timed_out else "error"
        result = {"status": status, "message": f"the launcher {why}", "exitcodes": [],
                  "world_size": spec.get("nproc") or None}
    world = result.get("world_size") or spec.get("nproc") or len(states) or None
    exitcodes = result.get("exitcodes") or []
    ranks = []
    for r in range(world or 0):
        st = states.get(r, {})
        ranks.append(RankStatus(
            rank=r, exitcode=exitcodes[r] if r < len(exitcodes) else None, phase=st.get("phase"),
            label=st.get("label"), joined=bool(st.get("joined")), error=st.get("error"),
            nccl_warnings=analysis.nccl_warnings(_read_text(rundir / f"nccl-rank{r}.log")),
            log_tail=analysis.log_tail(_read_text(rundir / f"rank{r}.log"))))
    status = result.get("status", "error")
    culprit = analysis.culprit(ranks, result.get("first_failed"), result.get("killed") or []) \
        if status == "failed" else None
    if status == "error":
        message = result.get("message")
    elif status == "ok":
        message = None
    else:
        message = analysis.run_message(status, ranks, timeout, culprit, result.get("port"))
        if result.get("message"):
            message = f"{message}; {result['message']}"
    rank_results = {r: d for r, d in rank_results.items() if r < (world or 0)}
    # a failed or hung run keeps its per-rank logs (the report names the folder); a run that could not start
    # ("error": no torch, a bad interpreter) has its reason in the message and leaves nothing behind
    keep = keep_logs or status not in ("ok", "error")
    run = ConfirmationRun(name=name, env=dict(env_extra or {}), status=status, message=message, culprit_rank=culprit,
                          seconds=seconds, timeout_s=timeout, orphans_killed=orphans, ranks=ranks,
                          log_dir=str(rundir) if keep else None)
    return Launch(run=run, result=result, rank_results=rank_results, world_size=world)


def _check_outputs(result: dict | None, states: dict[int, dict], rank_results: dict[int, dict]) -> None:
    """ProtocolError when a file the workers wrote has a field outside :mod:`gpudoctor.confirm.protocol`."""
    if result is not None:
        check_message(LaunchResult, result, "result.json")
    for r, st in states.items():
        check_message(RankState, st, f"state-rank{r}.json")
    for r, d in rank_results.items():
        check_message(RankResult, d, f"result-rank{r}.json")


def confirm(*, python: str, cpu: bool = False, nproc: int = 0, tasks: list[str] | None = None,
            timeout_s: float = 120.0, retry_timeout_s: float = 45.0, retry_transports: bool | None = None,
            on_progress: ProgressFn | None = None, keep_logs: bool = False, **plan: Any) -> ConfirmationFacts:
    """Run the confirmation runs and return their facts (never raises for a failing run).

    ``tasks``: subset of copy/allreduce/ddp (default all). ``plan``: extra :func:`make_spec` options
    (sizes, dtypes, model, batch, seq, steps, scaling, ...). ``retry_transports``: re-run with P2P,
    then SHM disabled after a failure or hang (default: on GPUs with more than one rank).
    Raises ValueError for an invalid plan (a usage error).
    """
    spec = make_spec(cpu=cpu, nproc=nproc, tasks=list(tasks or ["copy", "allreduce", "ddp"]), timeout_s=timeout_s,
                     **plan)
    t0 = time.monotonic()
    try:
        main = launch(spec, python, name="main", on_progress=on_progress, keep_logs=keep_logs)
    except RunInterrupted as exc:
        facts = facts_from(exc.launched, spec, python)
        facts.reason, facts.seconds = INTERRUPTED, round(time.monotonic() - t0, 3)
        raise ConfirmInterrupted(facts) from None
    facts = facts_from(main, spec, python)
    if facts.status == "error" and "cannot import torch" in (facts.reason or ""):
        facts.reason = (f"{facts.reason} (interpreter {python}); gpudoctor never installs torch: give the "
                        f"interpreter of the training environment with --python PATH (its python, or its folder)")
    if main.run.status in ("failed", "hung"):
        world = main.world_size or 0
        retry = retry_transports if retry_transports is not None else (spec["backend"] == "nccl" and world > 1)
        if retry:
            ok = []
            rspec = retry_spec(dict(spec, nproc=world or spec["nproc"]), min(timeout_s, retry_timeout_s))
            for name, env in TRANSPORT_RETRIES:
                try:
                    r = launch(rspec, python, name=name, env_extra=env, on_progress=on_progress, keep_logs=keep_logs)
                except RunInterrupted as exc:  # the main run's verdict stands; the re-runs are incomplete
                    facts.runs.append(exc.launched.run)
                    facts.seconds = round(time.monotonic() - t0, 3)
                    raise ConfirmInterrupted(facts) from None
                facts.runs.append(r.run)
                ok.append(r.run.status == "ok")
            facts.transport_verdict, _ = analysis.transport_verdict(ok[0], ok[1])
    facts.seconds = round(time.monotonic() - t0, 3)
    return facts


def facts_from(main: Launch, spec: dict, python: str) -> ConfirmationFacts:
    """Typed facts of the main run (measurements of whatever completed, even when it failed later)."""
    res, rr = main.result, main.rank_results
    v = res.get("versions") or {}
    world = main.world_size or 0
    status = main.run.status
    return ConfirmationFacts(
        status=status,
        reason=main.run.message,
        interpreter=v.get("interpreter") or python,
        torch_version=v.get("torch"),
        nccl_version=v.get("nccl"),
        backend=spec["backend"],
        device=spec["device"],
        world_size=world or None,
        tasks=list(spec["tasks"]),
        log_dir=main.run.log_dir,
        devices=analysis.devices(rr),
        allreduce=analysis.allreduce_results((rr.get(0) or {}).get("allreduce") or [], world),
        copies=analysis.copy_results(rr),
        ddp=analysis.ddp_result(rr, world) if world else None,
        runs=[main.run],
    )


def for_scan(snap, *, run: bool = True, timeout_s: float = 120.0, on_progress: ProgressFn | None = None,
             selftest: bool = True, **kwargs: Any) -> ConfirmationFacts:
    """The confirmation runs of `gpudoctor scan`: on every GPU torch sees, after the probes.

    Skipped ('skipped') with ``run=False``; 'not_applicable' on a host without NVIDIA GPUs; 'error'
    when the probed torch cannot run them (not installed, CPU-only build, CUDA unusable) -- the
    PyTorch rules say why. ``selftest``: also run the GPU self-test (:mod:`gpudoctor.confirm.selftest`).
    Never raises for a failing run.
    """
    if not run:
        return ConfirmationFacts(status="skipped", reason="skipped (--no-confirm)")
    nv = snap.nvml
    if nv is None or not nv.available or not nv.gpus:
        return ConfirmationFacts(status="not_applicable",
                                 reason="no NVIDIA GPU on this host; `gpudoctor smoke --cpu` shows the runs on CPU")
    t = snap.torch
    if t is None:
        return ConfirmationFacts(status="error", reason="the torch probe failed; no interpreter to run them with")
    if not t.installed or t.error:
        return ConfirmationFacts(status="error", interpreter=t.interpreter,
                                 reason=f"torch is not usable in {t.interpreter}: {t.error or 'not installed'}")
    if not t.cuda_available:
        return ConfirmationFacts(status="error", interpreter=t.interpreter, torch_version=t.version,
                                 reason=f"torch {t.version} in {t.interpreter} cannot use the GPUs "
                                        "(torch.cuda.is_available() is False)")
    if (t.device_count or len(nv.gpus)) < 2 and "tasks" not in kwargs:
        # one GPU: no link between GPUs to measure; an all-reduce sweep of one rank is a local no-op
        kwargs["tasks"] = ["copy", "ddp"]
    facts = confirm(python=t.interpreter, cpu=False, nproc=0, timeout_s=timeout_s, on_progress=on_progress, **kwargs)
    if selftest and facts.status != "hung":  # issue 16: GEMM and device copies on every GPU at once, NVML samples
        from gpudoctor.confirm.selftest import run_selftest

        facts.selftest = run_selftest(t.interpreter)
    return facts
