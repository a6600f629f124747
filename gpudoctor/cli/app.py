"""The `gpudoctor` command line. Heavy modules are imported inside commands, never at start-up.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or
input error; 3 internal error (a gpudoctor bug; please report it).
"""
from __future__ import annotations

import enum
import os
import sys

import typer

from gpudoctor.cli.output import (  # noqa: F401 (re-exported)
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    FailOn,
    Format,
    Out,
    _emit_partial,
    emit,
    exit_code,
    fail,
    fail_on_option,
    format_option,
    json_option,
    keep_logs_option,
    output_option,
    output_spec,
    run_app,
    save_option,
    verbose_option,
)
from gpudoctor.pipeline import defaults as D
from gpudoctor.pipeline.defaults import MAX_TIMEOUT_S

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
                  help="Is this GPU host fit for multi-GPU PyTorch training, and what must be fixed?\n\n"
                       "Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage/input error, 3 internal error, "
                       "130 interrupted (Ctrl-C, SIGTERM; the partial report is kept), 141 the reader of stdout "
                       "went away (| head).")


def _version(value: bool) -> None:
    if value:
        from gpudoctor import __version__

        sys.stdout.write(f"gpudoctor {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print gpudoctor's version and exit.")):
    """Is this GPU host fit for multi-GPU PyTorch training, and what must be fixed?"""


@app.command()
def scan(
    json_out: bool = json_option(),
    save: str | None = save_option(),
    fmt: Format | None = format_option(),
    output: str | None = output_option(),
    verbose: bool = verbose_option(),
    python: str | None = typer.Option(None, "--python", help="Interpreter (or its virtualenv / conda env folder) "
                                         "whose torch to probe "
                                         "(default: this one if it has torch, else python3 on PATH)."),
    data_path: str = typer.Option(".", "--data-path", help="Directory of the training data (storage checks)."),
    fail_on: FailOn = fail_on_option(),
    torch_timeout: float = typer.Option(D.TORCH_TIMEOUT_S, "--torch-timeout", min=1, max=MAX_TIMEOUT_S,
                                        help="Seconds allowed for the torch probe."),
    no_confirm: bool = typer.Option(False, "--no-confirm", help="Skip the confirmation runs (all-reduce, DDP step)."),
    confirm_timeout: float = typer.Option(D.CONFIRM_TIMEOUT_S, "--confirm-timeout", min=5, max=MAX_TIMEOUT_S,
                                          help="Hard limit in seconds for the confirmation runs (each transport "
                                               "re-run after a failure gets at most 45 s more)."),
    baseline: str | None = typer.Option(None, "--baseline", help="Judge the measured figures against this fleet "
                                        "baseline (`gpudoctor baseline save`) instead of the SKU table."),
    script: list[str] = typer.Option([], "--script", help="Also lint this training script (or folder): adds a "
                                     "'Training script' area (rules LNT, `gpudoctor lint`). Repeatable."),
):
    """Probe this host, check the rules, run the confirmation runs on the GPUs, print the report."""
    out = output_spec(fmt, json_out, output, save)
    from gpudoctor.cli.perf import _load_baseline

    perf_baseline = _load_baseline(baseline)
    for s in script:
        if not os.path.exists(s):
            raise fail(f"--script {s}: no such file or directory")
    from gpudoctor.pipeline.errors import Interrupted, PipelineError
    from gpudoctor.pipeline.scan import ScanOptions, run_scan

    def status():
        from rich.console import Console

        return Console(stderr=True).status("probing (driver, GPUs, torch, host)...")

    from contextlib import nullcontext

    opts = ScanOptions(python=python, data_path=data_path, torch_timeout_s=torch_timeout, confirm=not no_confirm,
                       confirm_timeout_s=confirm_timeout, baseline=perf_baseline, scripts=list(script))
    try:
        report = run_scan(opts, status if out.fmt == "text" and sys.stderr.isatty() else nullcontext)
    except PipelineError as exc:
        raise fail(str(exc)) from None
    except Interrupted as exc:
        sys.stderr.write(f"gpudoctor: {exc}\n")
        _emit_partial(exc.report, out, save, verbose, fail_on)
    emit(report, out, save, verbose, fail_on)


class Model(str, enum.Enum):
    builtin = "builtin"
    hf = "hf"
    tiny = "tiny"


class Scaling(str, enum.Enum):
    weak = "weak"
    strong = "strong"


def _confirm_report(cpu: bool, python: str | None, nproc: int | None, timeout: float, keep_logs: bool,
                    **plan):
    """The smoke / bench report (:func:`gpudoctor.pipeline.confirm.run_confirm`); a bad option is exit 2."""
    from gpudoctor.pipeline.confirm import run_confirm
    from gpudoctor.pipeline.errors import PipelineError

    try:
        return run_confirm(cpu, python, nproc, timeout, keep_logs, **plan)
    except PipelineError as exc:
        raise fail(str(exc)) from None


@app.command()
def smoke(
    cpu: bool = typer.Option(False, "--cpu", help="Run on CPU with gloo and a tiny BERT (no GPU needed)."),
    nproc: int | None = typer.Option(None, "--nproc", help="Processes (ranks): default one per GPU, 2 with --cpu."),
    model: Model | None = typer.Option(
        None,
        "--model",
        help="builtin = BERT-base built with torch alone (GPU "
        "default); hf = transformers BertForMaskedLM(BertConfig()); tiny (CPU default).",
    ),
    batch: int | None = typer.Option(
        None,
        "--batch",
        min=1,
        help="Per-GPU batch (weak scaling) or global batch "
        "(strong). Default on GPU: the largest of 128/64/32/16/8 whose estimated peak "
        "memory fits 40% of the free memory of every GPU; tiny: 4.",
    ),
    seq: int | None = typer.Option(None, "--seq", min=8, max=512, help="Sequence length (default 128; tiny 32)."),
    steps: int | None = typer.Option(None, "--steps", min=1, help="Timed steps (default 20; CPU 6)."),
    warmup: int | None = typer.Option(None, "--warmup", min=0, help="Warm-up steps (default 5; CPU 2)."),
    scaling: Scaling = typer.Option(
        Scaling.weak, "--scaling", help="weak: per-GPU batch fixed; strong: global batch fixed."
    ),
    no_baseline: bool = typer.Option(
        False, "--no-baseline", help="Skip the single-device run (no scaling efficiency)."
    ),
    timeout: float = typer.Option(
        D.RUN_TIMEOUT_S, "--timeout", min=5, max=MAX_TIMEOUT_S, help="Hard limit in seconds; a hung rank is killed."
    ),
    python: str | None = typer.Option(
        None,
        "--python",
        help="Interpreter (or its environment folder) whose torch runs the step (default: as for the torch probe).",
    ),
    json_out: bool = json_option(),
    save: str | None = save_option(),
    fmt: Format | None = format_option(),
    output: str | None = output_option(),
    keep_logs: bool = keep_logs_option(),
    verbose: bool = verbose_option(),
    fail_on: FailOn = fail_on_option(),
):
    """DDP BERT smoke step: per-step forward/backward/optimizer times, memory, sync check, scaling efficiency."""
    out = output_spec(fmt, json_out, output, save)
    report = _confirm_report(cpu, python, nproc, timeout, keep_logs, tasks=["ddp"],
                             model=model.value if model else None, batch=batch, seq=seq, steps=steps,
                             warmup_steps=warmup, scaling=scaling.value, baseline=not no_baseline)
    emit(report, out, save, verbose, fail_on)


bench_app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                        rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
                        help="Benchmarks of the confirmation runs.")
app.add_typer(bench_app, name="bench")


@bench_app.command("allreduce")
def bench_allreduce(
    cpu: bool = typer.Option(False, "--cpu", help="Run on CPU with gloo (no GPU needed)."),
    nproc: int | None = typer.Option(None, "--nproc", help="Processes (ranks): default one per GPU, 2 with --cpu."),
    sizes: str | None = typer.Option(None, "--sizes", help="Comma-separated message sizes, e.g. 1M,64M,1G "
                                        "(default 1 MiB..1 GiB and the BERT-base gradient; CPU 64K,1M,4M)."),
    dtypes: str = typer.Option("bf16,fp32", "--dtypes", help="Comma-separated: bf16, fp16, fp32."),
    iters: int | None = typer.Option(None, "--iters", min=1, help="Timed calls per size (default 20; CPU 5)."),
    warmup: int | None = typer.Option(None, "--warmup", min=0, help="Untimed calls first (default 5; CPU 2)."),
    no_copy: bool = typer.Option(False, "--no-copy", help="Skip the pinned host<->device copy bandwidth."),
    timeout: float = typer.Option(D.RUN_TIMEOUT_S, "--timeout", min=5, max=MAX_TIMEOUT_S,
                                  help="Hard limit in seconds; a hung rank is killed."),
    python: str | None = typer.Option(None, "--python", help="Interpreter (or its environment folder) "
                                         "whose torch runs the benchmark."),
    json_out: bool = json_option(),
    save: str | None = save_option(),
    fmt: Format | None = format_option(),
    output: str | None = output_option(),
    keep_logs: bool = keep_logs_option(),
    verbose: bool = verbose_option(),
    fail_on: FailOn = fail_on_option(),
):
    """All-reduce sweep: algbw/busbw (nccl-tests definitions), correctness, and pinned copy bandwidth per GPU."""
    out = output_spec(fmt, json_out, output, save)
    from gpudoctor.confirm.plan import normalize_dtype, parse_size

    try:
        size_list = [parse_size(x) for x in sizes.split(",") if x.strip()] if sizes is not None else None
        dtype_list = [normalize_dtype(x) for x in dtypes.split(",") if x.strip()]
    except ValueError as exc:
        raise fail(str(exc)) from None
    if size_list == []:
        raise fail("--sizes is empty")
    if not dtype_list:
        raise fail("--dtypes is empty")
    tasks = ["allreduce"] + ([] if no_copy else ["copy"])
    report = _confirm_report(cpu, python, nproc, timeout, keep_logs, tasks=tasks, sizes=size_list,
                             dtypes=dtype_list, ar_iters=iters, ar_warmup=warmup)
    emit(report, out, save, verbose, fail_on)


@app.command()
def check(
    paths: list[str] = typer.Argument(..., help="Saved outputs, files or folders: collect_env, nvidia-smi (table, -q, "
                                      "-q -x, nvlink -s, topo -m), lspci -vvv, df, ulimit -a, dmesg, NCCL_DEBUG logs, "
                                      "env dumps, error messages, or a saved gpudoctor JSON report."),
    json_out: bool = json_option(),
    save: str | None = save_option(),
    fmt: Format | None = format_option(),
    output: str | None = output_option(),
    verbose: bool = verbose_option(),
    fail_on: FailOn = fail_on_option(),
    jobs: int | None = typer.Option(None, "--jobs", "-j", min=1, show_default=False, envvar="GPUDOCTOR_JOBS",
                                    help="Worker processes for inputs over 4 MiB (default: one per usable CPU, or "
                                         "GPUDOCTOR_JOBS; 1: read in this process)."),
):
    """Diagnose saved outputs offline: recognise each file by content, turn it into facts, run the rules.

    A bad input (binary, empty, unknown format, a report of a newer schema) gets a one-line error
    naming it on stderr and exit code 2; the other inputs are still diagnosed and reported. Ctrl-C while a large
    log is read reports what was read so far and exits 130.
    """
    out = output_spec(fmt, json_out, output, save)
    clash = _written_input(paths, [("--save", save), ("--output", output)])
    if clash:
        raise fail(clash)
    from gpudoctor.pipeline.check import run_check

    result = run_check(paths, jobs)
    if result.report is None and result.interrupted:
        sys.stderr.write(f"gpudoctor: {result.interrupted}; nothing was diagnosed\n")
        raise typer.Exit(130)
    if result.report is None:
        for msg in result.skipped:
            sys.stderr.write(f"gpudoctor: skipped (in a folder): {msg}\n")
        if (out.fmt != "text" or save) and result.unusable is not None:  # a script reading --json gets a report
            emit(result.unusable, out, save, verbose, fail_on, input_errors=result.errors or ["no usable input"])
        for msg in result.errors or ["no usable input"]:
            sys.stderr.write(f"gpudoctor: error: {msg}\n")
        raise typer.Exit(EXIT_USAGE)
    if result.skipped:  # each one is in the report (snapshot.inputs, status "skipped"): one line, not one per file
        sys.stderr.write(f"gpudoctor: skipped {len(result.skipped)} file(s) found in the folder(s) that are not inputs "
                         f"`check` reads (-v or --json lists each with why)\n")
    for hint in result.hints:
        sys.stderr.write(f"gpudoctor: note: {hint}\n")
    if result.interrupted:
        sys.stderr.write(f"gpudoctor: {result.interrupted}; reporting what was read\n")
        _emit_partial(result.report, out, save, verbose, fail_on)
    emit(result.report, out, save, verbose, fail_on, input_errors=result.errors)


def _written_input(paths: list[str], targets: list[tuple[str, str | None]]) -> str | None:
    """Why the report must not be written where asked: a --save / --output file that is one of the inputs (the
    user's log would be replaced by the report), or --save and --output naming one file. None when fine."""
    def same(a: str, b: str) -> bool:
        try:
            return os.path.samefile(a, b)
        except OSError:
            return os.path.abspath(a) == os.path.abspath(b)

    given = [(opt, t) for opt, t in targets if t and t != "-"]
    for opt, target in given:
        if not os.path.exists(target) or os.path.isdir(target):
            continue
        for p in paths:
            if p != "-" and os.path.isfile(p) and same(p, target):
                return f"{opt} {target} is one of the inputs: writing the report there would replace it"
    if len(given) == 2 and same(given[0][1], given[1][1]):
        return f"--save and --output name the same file ({given[0][1]}): give each its own"
    return None


@app.command()
def schema(cluster_report: bool = typer.Option(False, "--cluster", help="The schema of `cluster --json` instead.")):
    """Print the JSON Schema of the report (`scan --json`, or `cluster --json` with --cluster)."""
    if cluster_report:
        import json

        from gpudoctor.facts.cluster import ClusterReport

        doc = ClusterReport.model_json_schema()
        doc.update({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "gpudoctor cluster report"})
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    from gpudoctor.reports.jsonout import dumps_schema

    sys.stdout.write(dumps_schema() + "\n")


@app.command()
def explain(rule_id: str = typer.Argument(..., help="A rule id, e.g. GPU002.")):
    """Explain one rule: what it checks, why it matters, how to fix it, sources."""
    from gpudoctor.reports.ruledocs import rule_markdown
    from gpudoctor.rules import REGISTRY

    spec = REGISTRY.get(rule_id.upper())
    text = rule_markdown(spec) if spec is not None else lint_cmd.explain_text(rule_id)  # LNT: gpudoctor/lint
    if text is None:
        raise fail(f"unknown rule {rule_id!r}; `gpudoctor rules` lists them")
    if sys.stdout.isatty():  # a person reading: rendered; piped or redirected: the Markdown itself
        from rich.markdown import Markdown

        from gpudoctor.reports.console import Console

        Console().print(Markdown(text))
    else:
        sys.stdout.write(text + "\n")


@app.command("rules")
def list_rules():
    """List every rule: id, severity, area, title."""
    from gpudoctor.rules import REGISTRY

    for spec in REGISTRY.values():
        sys.stdout.write(f"{spec.id:8} {spec.severity:8} {spec.area:20} {spec.title}\n")
    sys.stdout.writelines(lint_cmd.rule_lines())


def main() -> None:
    """Console entry point: run the app; turn any unexpected exception into one line and exit 3."""
    run_app(app)


# Imported last, deliberately: each module registers its command on `app` defined above.
from gpudoctor.cli import (  # noqa: E402  (must run after `app` exists)
    cluster_cmd,  # noqa: F401  (registers `gpudoctor cluster` on app)
    compat_cmd,  # noqa: F401  (registers cuda-version-check on app)
    lint_cmd,  # registers `gpudoctor lint`; gpudoctor/lint/
)
from gpudoctor.cli import perf as _perf  # noqa: E402  (selftest, burn, baseline: issue 16)

_perf.register(app)
