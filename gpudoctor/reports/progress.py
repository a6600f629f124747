"""Progress of the confirmation runs on stderr: which run, what it does (collective and size), elapsed.

A rich progress bar on a terminal; nothing when stderr is not a terminal (logs, CI, pipes). It
never writes to stdout, so `--json` output stays clean.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class RunProgress:
    """Context manager and callback for :class:`gpudoctor.confirm.runner.Progress` events.

    ``console``: a rich Console (default: stderr); ``enabled``: default when that console is a terminal.
    """

    def __init__(self, console=None, enabled: bool | None = None):
        self.console = console
        self.enabled = enabled
        self.bar: Progress | None = None
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RunProgress:
        if self.enabled is None:
            self.enabled = self.console.is_terminal if self.console is not None else sys.stderr.isatty()
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("[bold]{task.fields[run]}[/]"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.description}"), TimeElapsedColumn(),
                                console=self.console or Console(stderr=True), transient=False)
            self.bar.start()
        return self

    def __call__(self, p) -> None:
        if self.bar is None:
            return
        label = "confirmation run" if p.run == "main" else f"re-run {p.run}"
        if p.run not in self.tasks:
            self.tasks[p.run] = self.bar.add_task(p.label, total=max(1, p.total), run=label)
        self.bar.update(self.tasks[p.run], description=p.label, completed=p.step, total=max(1, p.total))

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
