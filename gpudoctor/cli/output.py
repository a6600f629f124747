"""How every command ends: save, print (text, json, junit, github, prometheus, html; to stdout or --output), and
the documented exit code."""
from __future__ import annotations

import dataclasses
import enum
import os
import sys
from typing import Any

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
    from gpudoctor.reports.console import Console

    if sys.stdout.isatty():
        return Console()
    try:
        width = int(os.environ.get("COLUMNS", "120"))
    except ValueError:
        width = 120
    return Console(width=max(60, width))


class Format(str, enum.Enum):
    text = "text"
    json = "json"
    junit = "junit"
    github = "github"
    prometheus = "prometheus"
    html = "html"


def format_option() -> Any:  # typer.Option's own return type: a parameter default of it type-checks
    """--format, shared by every report command (scan, check, cluster, smoke, bench, ...)."""
    return typer.Option(None, "--format", help="Output format: text (default), json (same as --json), junit, "
                        "github (workflow commands; Markdown summary to $GITHUB_STEP_SUMMARY), prometheus "
                        "(textfile collector), html (one self-contained page).")


def json_option() -> Any:  # as format_option
    """--json, shared by every report command."""
    return typer.Option(False, "--json", help="Print the report as JSON on stdout (nothing else).")


def save_option(help: str = "Also write the JSON report to this file.") -> Any:  # as format_option
    """--save FILE, shared by every report command."""
    return typer.Option(None, "--save", help=help)


def verbose_option(help: str = "Show every check and every fact.") -> Any:  # as format_option
    return typer.Option(False, "-v", "--verbose", help=help)


def fail_on_option(default: FailOn = FailOn.error,
                   help: str = "Lowest severity that makes the exit code 1.") -> Any:  # as format_option
    return typer.Option(default, "--fail-on", help=help)


def keep_logs_option() -> Any:  # as format_option
    """--keep-logs of the commands that start confirmation runs."""
    return typer.Option(False, "--keep-logs", help="Keep the per-rank logs even when the run succeeds.")


def output_option() -> Any:  # as format_option
    """--output, shared by every report command."""
    return typer.Option(None, "--output", "-o", help="Write the report (in --format) to this file instead of "
                        "stdout, atomically (temporary file + rename: safe for node_exporter's textfile collector).")


@dataclasses.dataclass(frozen=True)
class Out:
    """Where and how a report command writes its report."""

    fmt: str = "text"
    path: str | None = None


def unwritable(path: str) -> str | None:
    """Why ``path`` cannot take a report (a folder, a missing or read-only folder, a read-only file), or None when
    it can; asked before a scan or a check runs, so its result is not lost to a typo after minutes of work."""
    if os.path.isdir(path):
        return "is a directory"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"no such directory {parent}"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return "permission denied"
    if os.path.exists(path) and not os.path.isfile(path):
        return None  # a FIFO, /dev/stdout, a terminal: written directly (reports/outputs.py write_atomic)
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"permission denied (directory {parent})"
    return _cannot_create_in(parent)


def _cannot_create_in(folder: str) -> str | None:
    """Why a file cannot be created in ``folder`` (the report is written to a temporary file there, then renamed),
    found by creating and removing one: os.access says yes to root in /proc, /sys or a read-only mount."""
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=".gpudoctor-probe-", dir=folder)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:
        pass
    return None


def ensure_writable(targets: list[tuple[str, str | None]]) -> None:
    """Exit 2 with one line for the first of (flag, path) whose path cannot be written (:func:`unwritable`)."""
    for flag, path in targets:
        why = unwritable(path) if path else None
        if why:
            raise fail(f"{flag} {path}: cannot write there: {why}")


def output_spec(fmt: Format | None, json_out: bool, output: str | None, save: str | None = None) -> Out:
    """--format / --json / --output as one value; --json with another --format is a usage error, and so is an
    --output or --save path that cannot be written (checked now, before the work)."""
    if json_out and fmt not in (None, Format.json):
        raise fail(f"--json and --format {fmt.value} disagree; give one")
    ensure_writable([("--output", output), ("--save", save)])
    return Out("json" if json_out else (fmt.value if fmt else "text"), output)


def write_report(report, out: Out, save: str | None, verbose: bool, renderer, fail_on: FailOn | None = None,
                 on_save_error=None) -> None:
    """Save (``--save``, JSON, atomically), then print the report in ``out.fmt`` (text: with ``renderer``, a
    terminal report function) on stdout or to ``out.path`` (atomically). An unwritable path is a one-line
    error, exit 2 (after ``on_save_error``)."""
    from gpudoctor.reports import jsonout

    fail_on = fail_on or FailOn.error
    save_error = None
    if save:
        try:
            jsonout.save(report, save)
        except OSError as exc:  # the report is still printed below: what was measured is not lost
            save_error = f"cannot write {save}: {exc.strerror or exc}"
    if out.fmt == "text" and out.path is None:
        renderer(report, report_console(), verbose=verbose)
        if save and save_error is None:
            from rich.console import Console

            Console(stderr=True).print(f"[dim]report saved to {save}[/]")
        _raise_save_error(save_error, on_save_error)
        return
    from gpudoctor.reports.outputs import render, write_atomic

    text = render(report, out.fmt, fail_on.value, verbose, renderer, scrub=False)  # callers scrubbed it
    if out.path is None:
        sys.stdout.write(text)
        _raise_save_error(save_error, on_save_error)
        return
    try:
        write_atomic(out.path, text)
    except OSError as exc:
        if on_save_error is not None:
            on_save_error()
        sys.stdout.write(text)  # the report, on stdout instead of the file: not lost
        raise fail(f"cannot write {out.path}: {exc.strerror or exc} (the report was printed instead)") from exc
    _raise_save_error(save_error, on_save_error)


def _raise_save_error(message: str | None, on_save_error) -> None:
    """Exit 2 for a --save that failed (after the report was printed), calling ``on_save_error`` first."""
    if message is None:
        return
    if on_save_error is not None:
        on_save_error()
    raise fail(message + " (the report was printed)")


def exit_code(report_or_findings, fail_on: FailOn) -> int:
    """1 when any finding (of a Report, or a list of findings) is at or above ``fail_on``, else 0."""
    from gpudoctor.facts.findings import SEVERITY_ORDER

    findings = getattr(report_or_findings, "findings", report_or_findings)
    if fail_on == FailOn.never:
        return EXIT_OK
    bar = SEVERITY_ORDER[fail_on.value]
    return EXIT_FINDINGS if any(SEVERITY_ORDER[f.severity] >= bar for f in findings) else EXIT_OK


def _terminal_render(*args: Any, **kwargs: Any) -> Any:
    """reports.terminal.render, imported only when a text report is written (it pulls in rich: ~70 ms)."""
    from gpudoctor.reports.terminal import render

    return render(*args, **kwargs)


def emit(report, out: Out, save: str | None, verbose: bool, fail_on: FailOn,
         input_errors: list[str] | None = None) -> None:
    """Save, print (terminal or JSON) and exit with the documented code (2 when some input was bad).

    Every string of the report is scrubbed of secrets first (:mod:`gpudoctor.reports.redact`)."""
    from gpudoctor.reports.redact import scrub_model

    report = scrub_model(report)
    write_report(report, out, save, verbose, _terminal_render, fail_on)
    for msg in input_errors or []:
        sys.stderr.write(f"gpudoctor: error: {msg}\n")
    conf = report.snapshot.confirmation
    if conf is not None and conf.status == "interrupted":  # smoke / bench stopped by Ctrl-C or SIGTERM
        sys.stderr.write("gpudoctor: interrupted; the report holds what was measured\n")
        raise typer.Exit(130)
    raise typer.Exit(EXIT_USAGE if input_errors else exit_code(report, fail_on))


def _emit_partial(report, out: Out, save: str | None, verbose: bool, fail_on: FailOn = FailOn.never) -> None:
    """Report what an interrupted scan found (saved too with --save) and exit 130. ``fail_on`` reaches the
    formats that state it (Prometheus' gpudoctor_healthy, JUnit failures); the exit code stays 130."""
    try:
        emit(report, out, save, verbose, fail_on)
    except typer.Exit:
        pass
    raise typer.Exit(130)


def _flush_stdout() -> None:
    """Flush stdout now, so a reader that went away (`| head`) is a quiet SIGPIPE-style exit, not a shutdown error."""
    from gpudoctor.cli.stdio import quiet_broken_pipe_exit

    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_broken_pipe_exit()
    except OSError as exc:  # > /dev/full: the buffered report could not be written
        sys.stderr.write(f"gpudoctor: error: cannot write the output: {exc.strerror or exc}\n")
        os._exit(EXIT_USAGE)


def run_app(app) -> None:
    """Run the typer ``app``; turn any unexpected exception into one line and exit 3; EPIPE is a quiet exit 141
    and a closed stdout one line and exit 2 (:mod:`gpudoctor.cli.stdio`)."""
    try:  # typer >= 0.20 vendors click as typer._click; older typer uses click itself
        from typer._click import exceptions as cx
    except ImportError:  # pragma: no cover
        from click import exceptions as cx  # type: ignore[no-redef]  # the same module, under its pre-0.20 name

    from gpudoctor.cli.stdio import STDOUT_CLOSED, quiet_broken_pipe_exit, stdout_closed

    if stdout_closed():  # `gpudoctor rules >&-`: every command writes its report there
        sys.stderr.write(f"gpudoctor: error: {STDOUT_CLOSED}\n")
        sys.exit(EXIT_USAGE)
    try:
        rv = app(standalone_mode=False)
        # --help prints and returns; typer.Exit(code) returns its code in non-standalone mode
        _flush_stdout()
        sys.exit(rv if isinstance(rv, int) else 0)
    except SystemExit:
        from gpudoctor.cli.stdio import pipe_broken_by_framework

        if pipe_broken_by_framework():  # typer's own EPIPE handling exits 1: make it the quiet EPIPE exit
            quiet_broken_pipe_exit()
        _flush_stdout()
        raise
    except cx.UsageError as exc:
        # one line, not click's usage block: "gpudoctor scan: No such option: --frob"
        from gpudoctor.cli.stdio import usage_error_line

        sys.stderr.write(usage_error_line(exc, sys.argv[1:], typer.main.get_command(app)) + "\n")
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
        # `gpudoctor ... | head`: the reader went away; exit like a process killed by SIGPIPE, quietly
        quiet_broken_pipe_exit()
    except OSError as exc:
        if getattr(exc, "filename", None) is None and exc.errno is not None:  # writing stdout failed (disk full, ...)
            sys.stderr.write(f"gpudoctor: error: cannot write the output: {exc.strerror}\n")
            sys.exit(EXIT_USAGE)
        sys.stderr.write(f"gpudoctor: internal error: OSError: {exc} (set GPUDOCTOR_DEBUG=1 for the traceback)\n")
        if os.environ.get("GPUDOCTOR_DEBUG"):
            raise
        sys.exit(EXIT_INTERNAL)
    except Exception as exc:
        from gpudoctor.compat.data import RulesDataError
        from gpudoctor.pipeline.errors import ScanInterrupted

        if isinstance(exc, RulesDataError):  # the user's rule data override: their input, one line, exit 2
            sys.stderr.write(f"gpudoctor: error: {exc}\n")
            sys.exit(EXIT_USAGE)
        if isinstance(exc, ScanInterrupted):  # Ctrl-C while probing in smoke / bench / cluster: children are killed
            sys.stderr.write("gpudoctor: interrupted\n")
            sys.exit(130)
        # a gpudoctor bug: one line, never a traceback for users
        sys.stderr.write(f"gpudoctor: internal error: {type(exc).__name__}: {exc} "
                         f"(set GPUDOCTOR_DEBUG=1 for the traceback)\n")
        if os.environ.get("GPUDOCTOR_DEBUG"):
            raise
        sys.exit(EXIT_INTERNAL)
