"""The `gpudoctor` command line. Heavy modules are imported inside commands, never at start-up.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 usage or
input error; 3 internal error (a gpudoctor bug; please report it).
"""
from __future__ import annotations

import enum
import os
import sys
from typing import List, Optional

import typer

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,
                  help="Is this GPU host fit for multi-GPU PyTorch training, and what must be fixed?\n\n"
                       "Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage/input error, 3 internal error.")


class FailOn(str, enum.Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def fail(message: str, code: int = EXIT_USAGE) -> "typer.Exit":
    """Print a one-line error to stderr and return the Exit to raise."""
    sys.stderr.write(f"gpudoctor: error: {message}\n")
    return typer.Exit(code)


def exit_code(report, fail_on: FailOn) -> int:
    from gpudoctor.facts.findings import SEVERITY_ORDER

    if fail_on == FailOn.never:
        return EXIT_OK
    bar = SEVERITY_ORDER[fail_on.value]
    return EXIT_FINDINGS if any(SEVERITY_ORDER[f.severity] >= bar for f in report.findings) else EXIT_OK


def emit(report, json_out: bool, save: Optional[str], verbose: bool, fail_on: FailOn,
         input_errors: Optional[List[str]] = None) -> None:
    """Save, print (terminal or JSON) and exit with the documented code (2 when some input was bad)."""
    from gpudoctor.reports import jsonout

    if save:
        try:
            jsonout.save(report, save)
        except OSError as exc:
            raise fail(f"cannot write {save}: {exc.strerror or exc}")
    if json_out:
        sys.stdout.write(jsonout.to_json(report) + "\n")
    else:
        from rich.console import Console

        from gpudoctor.reports.terminal import render

        render(report, Console(), verbose=verbose)
        if save:
            Console(stderr=True).print(f"[dim]report saved to {save}[/]")
    for msg in input_errors or []:
        sys.stderr.write(f"gpudoctor: error: {msg}\n")
    raise typer.Exit(EXIT_USAGE if input_errors else exit_code(report, fail_on))


@app.command()
def scan(
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout (nothing else)."),
    save: Optional[str] = typer.Option(None, "--save", help="Also write the JSON report to this file."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every check and every fact."),
    python: Optional[str] = typer.Option(None, "--python", help="Interpreter whose torch to probe "
                                         "(default: this one if it has torch, else python3 on PATH)."),
    data_path: str = typer.Option(".", "--data-path", help="Directory of the training data (storage checks)."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity that makes the exit code 1."),
    torch_timeout: float = typer.Option(90.0, "--torch-timeout", min=1, help="Seconds allowed for the torch probe."),
):
    """Probe this host, check the rules, print the report."""
    if not os.path.isdir(data_path):
        raise fail(f"--data-path {data_path}: not a directory")
    from gpudoctor.probes.registry import scan as do_scan
    from gpudoctor.probes.runner import ProbeOptions
    from gpudoctor.rules import evaluate

    opts = ProbeOptions(python=python, data_path=data_path, torch_timeout_s=torch_timeout)
    if not json_out and sys.stderr.isatty():
        from rich.console import Console

        with Console(stderr=True).status("probing (driver, GPUs, torch, host)..."):
            snap = do_scan(opts)
    else:
        snap = do_scan(opts)
    emit(evaluate(snap), json_out, save, verbose, fail_on)


@app.command()
def check(
    paths: List[str] = typer.Argument(..., help="Saved outputs, files or folders: collect_env, nvidia-smi (table, -q, "
                                      "-q -x, nvlink -s, topo -m), lspci -vvv, df, ulimit -a, dmesg, NCCL_DEBUG logs, "
                                      "env dumps, error messages, or a saved gpudoctor JSON report."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON on stdout."),
    save: Optional[str] = typer.Option(None, "--save", help="Also write the JSON report to this file."),
    verbose: bool = typer.Option(False, "-v", "--verbose"),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on"),
):
    """Diagnose saved outputs offline: recognise each file by content, turn it into facts, run the rules.

    A bad input (binary, empty, too large, unknown format, a report of a newer schema) gets a one-line error
    naming it on stderr and exit code 2; the other inputs are still diagnosed and reported.
    """
    from gpudoctor.facts.offline import build_snapshot
    from gpudoctor.rules import evaluate

    snap, errors = build_snapshot(paths)
    if snap is None:
        for msg in errors or ["no usable input"]:
            sys.stderr.write(f"gpudoctor: error: {msg}\n")
        raise typer.Exit(EXIT_USAGE)
    emit(evaluate(snap), json_out, save, verbose, fail_on, input_errors=errors)


@app.command()
def schema():
    """Print the JSON Schema of the report (`scan --json`)."""
    from gpudoctor.reports.jsonout import dumps_schema

    sys.stdout.write(dumps_schema() + "\n")


@app.command()
def explain(rule_id: str = typer.Argument(..., help="A rule id, e.g. GPU002.")):
    """Explain one rule: what it checks, why it matters, how to fix it, sources."""
    from gpudoctor.reports.ruledocs import rule_markdown
    from gpudoctor.rules import REGISTRY

    spec = REGISTRY.get(rule_id.upper())
    if spec is None:
        raise fail(f"unknown rule {rule_id!r}; `gpudoctor rules` lists them")
    sys.stdout.write(rule_markdown(spec) + "\n")


@app.command("rules")
def list_rules():
    """List every rule: id, severity, area, title."""
    from gpudoctor.rules import REGISTRY

    for spec in REGISTRY.values():
        sys.stdout.write(f"{spec.id:8} {spec.severity:8} {spec.area:20} {spec.title}\n")


def main() -> None:
    """Console entry point: run the app; turn any unexpected exception into one line and exit 3."""
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("gpudoctor: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # pragma: no cover - a bug; never show a traceback to users
        sys.stderr.write(f"gpudoctor: internal error: {type(exc).__name__}: {exc} "
                         f"(set GPUDOCTOR_DEBUG=1 for the traceback)\n")
        if os.environ.get("GPUDOCTOR_DEBUG"):
            raise
        sys.exit(EXIT_INTERNAL)
