"""Standard output of the command line: the console reports are written to, and what happens when stdout
cannot be written (issue 15 item 6; the usual CLI convention, as in coreutils and git).

- The reader went away (``gpudoctor scan | head -1``): EPIPE is a quiet exit with 141 (128 + SIGPIPE, what a
  shell reports for a process killed by SIGPIPE), no message, whatever the findings were.
- stdout is closed (``gpudoctor rules >&-``) or fails otherwise (``> /dev/full``): one line on stderr, exit 2.

rich's Console handles a BrokenPipeError itself by ``SystemExit(1)``, which reads as "findings"; the
:class:`Console` here raises it instead, so that :func:`gpudoctor.cli.app.main` treats every command alike.
"""
from __future__ import annotations

import os
import sys

from rich.console import Console as _RichConsole

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE (13)
STDOUT_CLOSED = "cannot write the output: standard output is closed"


class Console(_RichConsole):
    """rich's Console, except that a reader that went away raises BrokenPipeError (handled once, in main)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


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
