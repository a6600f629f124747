"""How every command ends: save, print (terminal or JSON), and the documented exit code."""
from __future__ import annotations

import enum
import os
import sys

import typer

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class FailOn(str, enum.Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print a one-line error to stderr and return the Exit to raise."""
    sys.stderr.write(f"gpudoctor: error: {message}\n")
    return typer.Exit(code)


def report_console():
    """The console reports go to: the terminal's width on a TTY; 120 columns (or $COLUMNS) when piped or
    saved, so tables do not wrap at 80."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console()
    try:
        width = int(os.environ.get("COLUMNS", "120"))
    except ValueError:
        width = 120
    return Console(width=max(60, width))


def write_report(report, json_out: bool, save: str | None, verbose: bool, renderer, on_save_error=None) -> None:
    """Save (``--save``, atomically), then print the report as JSON or with ``renderer`` (a terminal
    report function). An unwritable ``save`` path is a one-line error, exit 2 (after ``on_save_error``)."""
    from gpudoctor.reports import jsonout

    if save:
        try:
            jsonout.save(report, save)
        except OSError as exc:
            if on_save_error is not None:
                on_save_error()
            raise fail(f"cannot write {save}: {exc.strerror or exc}") from None
    if json_out:
        sys.stdout.write(jsonout.to_json(report) + "\n")
    else:
        renderer(report, report_console(), verbose=verbose)
        if save:
            from rich.console import Console

            Console(stderr=True).print(f"[dim]report saved to {save}[/]")


def exit_code(report_or_findings, fail_on: FailOn) -> int:
    """1 when any finding (of a Report, or a list of findings) is at or above ``fail_on``, else 0."""
    from gpudoctor.facts.findings import SEVERITY_ORDER

    findings = getattr(report_or_findings, "findings", report_or_findings)
    if fail_on == FailOn.never:
        return EXIT_OK
    bar = SEVERITY_ORDER[fail_on.value]
    return EXIT_FINDINGS if any(SEVERITY_ORDER[f.severity] >= bar for f in findings) else EXIT_OK


def emit(report, json_out: bool, save: str | None, verbose: bool, fail_on: FailOn,
         input_errors: list[str] | None = None) -> None:
    """Save, print (terminal or JSON) and exit with the documented code (2 when some input was bad).

    Every string of the report is scrubbed of secrets first (:mod:`gpudoctor.reports.redact`)."""
    from gpudoctor.reports.redact import scrub_model

    report = scrub_model(report)

    from gpudoctor.reports.terminal import render

    write_report(report, json_out, save, verbose, render)
    for msg in input_errors or []:
        sys.stderr.write(f"gpudoctor: error: {msg}\n")
    raise typer.Exit(EXIT_USAGE if input_errors else exit_code(report, fail_on))


def _emit_partial(report, json_out: bool, save: str | None, verbose: bool) -> None:
    """Report what an interrupted scan found (saved too with --save) and exit 130."""
    try:
        emit(report, json_out, save, verbose, FailOn.never)
    except typer.Exit:
        pass
    raise typer.Exit(130)


def _sigpipe_exit() -> None:
    """Exit like a process killed by SIGPIPE (141), quietly: stdout's reader went away."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass
    os._exit(141)


def _flush_stdout() -> None:
    """Flush stdout now, so a reader that went away (`| head`) is a quiet SIGPIPE-style exit, not a shutdown error."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _sigpipe_exit()


def run_app(app) -> None:
    """Run the typer ``app``; turn any unexpected exception into one line and exit 3."""
    try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
        from typer._click import exceptions as cx
    except ImportError:  # pragma: no cover
        from click import exceptions as cx

    try:
        rv = app(standalone_mode=False)
        # --help prints and returns; typer.Exit(code) returns its code in non-standalone mode
        _flush_stdout()
        sys.exit(rv if isinstance(rv, int) else 0)
    except SystemExit:
        _flush_stdout()
        raise
    except cx.UsageError as exc:
        # one line, not click's usage block: "gpudoctor scan: No such option: --frob"
        cmd = f" {exc.ctx.info_name}" if exc.ctx is not None and exc.ctx.parent is not None else ""
        sys.stderr.write(f"gpudoctor{cmd}: error: {exc.format_message()} (see `gpudoctor{cmd} --help`)\n")
        sys.exit(EXIT_USAGE)
    except (getattr(cx, "Abort", typer.Abort), typer.Abort):
        sys.stderr.write("gpudoctor: interrupted\n")
        sys.exit(130)
    except cx.ClickException as exc:
        sys.stderr.write(f"gpudoctor: error: {exc.format_message()}\n")
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        sys.stderr.write("gpudoctor: interrupted\n")
        sys.exit(130)
    except BrokenPipeError:
        _sigpipe_exit()  # `gpudoctor ... | head`: the reader went away
    except OSError as exc:
        if getattr(exc, "filename", None) is None and exc.errno is not None:  # writing stdout failed (disk full, ...)
            sys.stderr.write(f"gpudoctor: error: cannot write the output: {exc.strerror}\n")
            sys.exit(EXIT_USAGE)
        sys.stderr.write(f"gpudoctor: internal error: OSError: {exc} (set GPUDOCTOR_DEBUG=1 for the traceback)\n")
        if os.environ.get("GPUDOCTOR_DEBUG"):
            raise
        sys.exit(EXIT_INTERNAL)
    except Exception as exc:
        from gpudoctor.pipeline.errors import ScanInterrupted

        if isinstance(exc, ScanInterrupted):  # Ctrl-C while probing in smoke / bench / cluster: children are killed
            sys.stderr.write("gpudoctor: interrupted\n")
            sys.exit(130)
        # a gpudoctor bug: one line, never a traceback for users
        sys.stderr.write(f"gpudoctor: internal error: {type(exc).__name__}: {exc} "
                         f"(set GPUDOCTOR_DEBUG=1 for the traceback)\n")
        if os.environ.get("GPUDOCTOR_DEBUG"):
            raise
        sys.exit(EXIT_INTERNAL)
