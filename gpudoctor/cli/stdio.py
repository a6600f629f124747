"""Standard output of the command line: the console reports are written to, and what happens when stdout
cannot be written (issue 15 item 6; the usual CLI convention, as in coreutils and git).

- The reader went away (``gpudoctor scan | head -1``): EPIPE is a quiet exit with 141 (128 + SIGPIPE, what a
  shell reports for a process killed by SIGPIPE), no message, whatever the findings were.
- stdout is closed (``gpudoctor rules >&-``) or fails otherwise (``> /dev/full``): one line on stderr, exit 2.

rich's Console handles a BrokenPipeError itself by ``SystemExit(1)``, which reads as "findings"; the
:class:`Console` here raises it instead, so that :func:`gpudoctor.cli.output.run_app` treats every command alike.
"""
from __future__ import annotations

import os
import sys
from typing import Any

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE (13)
STDOUT_CLOSED = "cannot write the output: standard output is closed"


def command_of(exc: Exception, argv: list[str], root: Any = None) -> str:
    """'gpudoctor bench allreduce': the (sub)command a usage error is about. From the error's click context chain
    (the root's name is the program, e.g. 'python -m gpudoctor', so it is left out); when the error came before the
    subcommand's context existed (``scan --fail-on`` without a value), from the leading command words of argv."""
    names: list[str] = []
    ctx = getattr(exc, "ctx", None)
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name)
        ctx = ctx.parent
    if not names and (ctx is not None or root is not None):
        group = ctx.command if ctx is not None else root
        for word in argv:
            sub = getattr(group, "commands", {}).get(word) if not word.startswith("-") else None
            if sub is None:
                break
            names.append(word)
            group = sub
    return " ".join(["gpudoctor", *names])


def usage_error_line(exc: Exception, argv: list[str], root: Any = None) -> str:
    """One line for a usage error: 'gpudoctor bench: error: missing command (allreduce) (see `gpudoctor bench --help`)'.

    click's "no arguments: show the help" of a command group arrives as a usage error whose message is the whole
    help text; it becomes one line naming the commands."""
    cmd = command_of(exc, argv, root)
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None and hasattr(ctx.command, "list_commands"):
        message = f"missing command ({', '.join(ctx.command.list_commands(ctx))})"
    else:
        format_message = getattr(exc, "format_message", None)
        message = format_message() if callable(format_message) else str(exc)
        message = " ".join(message.split())
    return f"{cmd}: error: {message} (see `{cmd} --help`)"


def stdout_closed() -> bool:
    """True when file descriptor 1 is closed (Python then sets ``sys.stdout`` to None)."""
    if sys.stdout is None:
        return True
    try:
        os.fstat(sys.stdout.fileno())
    except (OSError, ValueError):
        return True
    except Exception:  # a replaced stdout without a file descriptor (tests' CliRunner): usable
        return False
    return False


def pipe_broken_by_framework() -> bool:
    """True when typer / click met EPIPE itself: it then wraps stdout in a PacifyFlushWrapper and raises
    ``SystemExit(1)``, which must not read as "findings" (exit 1)."""
    return type(sys.stdout).__name__ == "PacifyFlushWrapper"


def quiet_broken_pipe_exit() -> None:
    """Exit like a process killed by SIGPIPE, without Python's 'Exception ignored ... BrokenPipeError' at shutdown."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(EXIT_BROKEN_PIPE)
