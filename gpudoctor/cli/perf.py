"""Performance commands (issue 16): ``gpudoctor selftest``, ``gpudoctor burn``, ``gpudoctor baseline save``.

Registered on the main app by :func:`register` (one line in :mod:`gpudoctor.cli.app`).
"""
from __future__ import annotations

import datetime as _dt
import json
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import typer

from gpudoctor.cli.app import FailOn, Out, emit, fail
from gpudoctor.cli.output import ensure_writable, fail_on_option, json_option, save_option, verbose_option

baseline_app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                           rich_markup_mode=None, help="Record a fleet baseline on a trusted node.")


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load_baseline(path: str | None) -> Any:
    if path is None:
        return None
    from gpudoctor.confirm.baseline import BaselineError, load

    try:
        return load(path)
    except BaselineError as exc:
        raise fail(str(exc)) from None


def selftest(
    json_out: bool = json_option(),
    save: str | None = save_option(),
    verbose: bool = verbose_option(),
    python: str | None = typer.Option(None, "--python", help="Interpreter whose torch runs the test."),
    baseline: str | None = typer.Option(None, "--baseline", help="Judge against this fleet baseline file."),
    timeout: float = typer.Option(60.0, "--timeout", min=5, max=3600, help="Hard limit in seconds."),
    fail_on: FailOn = fail_on_option(),
) -> None:
    """The GPU self-test alone: bf16 GEMM and device copies on every GPU at once, judged (rules PRF)."""
    from gpudoctor.pipeline.errors import PipelineError
    from gpudoctor.pipeline.perf import run_selftest_report

    ensure_writable([("--save", save)])
    base = _load_baseline(baseline)
    try:
        report = run_selftest_report(python, timeout, base)
    except PipelineError as exc:
        raise fail(str(exc)) from None
    emit(report, Out("json" if json_out else "text"), save, verbose, fail_on)


def burn(
    minutes: float = typer.Option(3.0, "--minutes", min=0.05, max=24 * 60, help="Duration of the load."),
    series: str | None = typer.Option(None, "--series", help="Where to save the time series (JSON; default "
                                      "gpudoctor-burn-<UTC time>.json in the current folder)."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary and findings as JSON on stdout."),
    python: str | None = typer.Option(None, "--python", help="Interpreter whose torch runs the load."),
) -> None:
    """Burn-in: GEMM and memory load on every GPU for N minutes, watching throughput, clocks, reasons,
    temperature, power, ECC / row-remap / NVLink counters and XIDs. Ctrl-C keeps what was measured."""
    from gpudoctor.confirm.burn import run_burn
    from gpudoctor.pipeline.errors import PipelineError
    from gpudoctor.pipeline.perf import check_gpu_load_host
    from gpudoctor.rules import burn as judge

    try:
        interp = check_gpu_load_host(python)
    except PipelineError as exc:
        raise fail(str(exc)) from None
    total = minutes * 60.0
    console = None
    bar: Any = None
    task: Any = None
    last_note = [0.0]
    latest: dict[int, float] = {}
    if sys.stderr.isatty() and not json_out:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        bar = Progress(TextColumn("[bold]burn-in[/]"), BarColumn(), TextColumn("{task.description}"),
                       TimeElapsedColumn(), console=console)
        bar.start()
        task = bar.add_task("starting torch", total=total)
    timed_at = [None]

    def on_line(obj: dict[str, Any]) -> None:
        if obj.get("t") == "mark":
            timed_at[0] = obj.get("s")
        if obj.get("t") == "round" and obj.get("kind") == "gemm":
            latest[obj["i"]] = obj["value"]
        s = obj.get("s")
        if not isinstance(s, (int, float)) or timed_at[0] is None:
            return
        done = max(0.0, s - float(timed_at[0]))
        desc = " ".join(f"GPU{i} {v:.0f}" for i, v in sorted(latest.items())) + " TFLOP/s"
        if bar is not None:
            bar.update(task, completed=min(done, total), description=desc)
        elif not json_out and done - last_note[0] >= 10:
            last_note[0] = done
            sys.stderr.write(f"burn-in: {done:.0f}/{total:.0f} s  {desc}\n")

    def to_interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    # Ctrl-C and SIGTERM (timeout, systemd, Slurm) both stop the load and keep what was measured
    old_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    old_term = signal.signal(signal.SIGTERM, to_interrupt)
    try:
        run = run_burn(interp, total, on_line)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
        if bar is not None:
            bar.stop()
    if not any(ln.get("t") == "gpu" for ln in run.lines):
        why = next((ln.get("error") for ln in run.lines if ln.get("t") == "error"), None) or " | ".join(run.stderr_tail)
        raise fail(f"the burn-in could not start: {why or 'no output'}")
    findings = judge.analyze(run.lines, run.new_xids)
    summary = judge.per_gpu_summary(run.lines)
    date = _utc_now()
    doc: dict[str, Any] = {"gpudoctor_burn": 1, "host": socket.gethostname(), "date": date, "minutes": minutes,
           "seconds": run.seconds, "interrupted": run.interrupted, "timed_out": run.timed_out,
           "xids_readable": run.xids_readable, "new_xids": run.new_xids, "leftover_pids": run.leftover_pids,
           "summary": summary, "findings": [f.model_dump() for f in findings], "lines": run.lines}
    path = series or f"gpudoctor-burn-{date.replace(':', '')}.json"
    try:
        Path(path).write_text(json.dumps(doc) + "\n")
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}") from None
    if json_out:
        sys.stdout.write(json.dumps({k: v for k, v in doc.items() if k != "lines"}, indent=2) + "\n")
    else:
        sys.stdout.write(render_burn(doc, path))
    if run.interrupted:
        raise typer.Exit(130)
    raise typer.Exit(1 if any(f.severity == "error" for f in findings) else 0)


def render_burn(doc: dict[str, Any], path: str) -> str:
    """Plain-text summary of a burn-in: per-GPU figures, findings, where the series is."""
    out = [f"burn-in on {doc['host']}, {doc['date']}: {doc['seconds']:.0f} s"
           + (" (interrupted: what was measured is kept)" if doc["interrupted"] else "")]
    for s in doc["summary"]:
        out.append(f"  GPU {s['gpu']} {s['name']}: GEMM median {s['gemm_tflops_median']} TFLOP/s (min "
                   f"{s['gemm_tflops_min']}, {s['gemm_rounds']} rounds), copy {s['copy_gbs_median']} GB/s, "
                   f"SM {s['sm_mhz_median']}/{s['max_sm_mhz']} MHz, {s['power_w_median']}/{s['power_limit_w']} W, "
                   f"max {s['temp_c_max']} °C (slowdown {s['slowdown_temp_c']} °C), reasons {s['reasons'] or '-'}, "
                   f"counter changes {s['counter_deltas'] or 'none'}")
    out.append("  XIDs: " + ("none new" if doc["xids_readable"] and not doc["new_xids"] else
                             f"{len(doc['new_xids'])} new" if doc["xids_readable"] else "kernel log not readable"))
    if doc["leftover_pids"]:
        out.append(f"  left behind: pids {doc['leftover_pids']}")
    if doc["findings"]:
        for f in doc["findings"]:
            subj = f" ({f['subject']})" if f["subject"] else ""
            out.append(f"  [{f['severity']}] {f['rule_id']} {f['title']}{subj}")
            out += [f"      {e}" for e in f["evidence"]]
    else:
        out.append("  no findings: no drift, no fault throttling, no new errors")
    out.append(f"  time series: {path}")
    return "\n".join(out) + "\n"


@baseline_app.command("save")
def baseline_save(
    file: str = typer.Argument(..., help="Where to write the baseline (JSON)."),
    from_report: str | None = typer.Option(None, "--from", help="Take the figures from a saved `scan --json` "
                                           "report instead of running the confirmation runs now."),
    python: str | None = typer.Option(None, "--python", help="Interpreter whose torch runs the runs."),
    confirm_timeout: float = typer.Option(120.0, "--confirm-timeout", min=5, max=3600),
) -> None:
    """Record this trusted node's figures (GEMM, copies, all-reduce busbw, DDP step per GPU model)."""
    from gpudoctor.confirm.baseline import from_confirmation, save
    from gpudoctor.facts.model import ConfirmationFacts

    if from_report:
        try:
            doc = json.loads(Path(from_report).read_text())
            snap = doc.get("snapshot") or {}
            conf = ConfirmationFacts.model_validate(snap.get("confirmation") or {"status": "skipped"})
        except (OSError, ValueError, AttributeError) as exc:
            raise fail(f"{from_report}: not a readable gpudoctor report ({exc})".splitlines()[0]) from None
        host = (snap.get("host") or {}).get("hostname")
        date = snap.get("created_at")
    else:
        from gpudoctor.pipeline.perf import confirm_for_baseline

        conf, hostname = confirm_for_baseline(python, confirm_timeout)
        host = hostname or socket.gethostname()
        date = _utc_now()
    if conf.status != "ok" or conf.selftest is None:
        raise fail(f"no usable figures: the confirmation runs {conf.status}"
                   f"{': ' + conf.reason if conf.reason else ''}; a baseline needs a clean run")
    b = from_confirmation(conf, host, date)
    try:
        save(b, file)
    except OSError as exc:
        raise fail(f"cannot write {file}: {exc.strerror or exc}") from None
    sys.stdout.write(f"baseline for {', '.join(b.models) or 'no GPU model'} ({host}, {date}) written to {file}\n")


def register(app: typer.Typer) -> None:
    """Add the performance commands to the main app."""
    app.command("selftest")(selftest)
    app.command("burn")(burn)
    app.add_typer(baseline_app, name="baseline")
