"""The console every terminal report is written to (issue 15 items 6 and 13).

- An indented line (``console.print("    text")``) that wraps keeps its indentation on the continuation lines,
  instead of restarting at column 0 (piped at 120 columns, or with a narrow ``COLUMNS``).
- No automatic highlighting: rich's highlighter colours numbers inside versions and paths ("12.4", "/dev/shm")
  at random; the reports colour what they mean to.
- No emoji codes: rich turns ``:name:`` into an emoji, and log lines hold such text (NCCL's ``file.cc:100:`` read
  as 💯); evidence is printed as written.
- ``NO_COLOR`` (https://no-color.org, any non-empty value) turns off every escape sequence, bold and dim
  included (rich's own NO_COLOR support drops only the colours).
- A reader that went away raises BrokenPipeError (rich would exit 1, which reads as "findings"); the command
  line turns it into a quiet exit (gpudoctor/cli/output.py).
"""
from __future__ import annotations

import os
from typing import Any

from rich.console import Console as _RichConsole
from rich.text import Text


class Console(_RichConsole):
    """rich's Console with the report conventions above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("highlight", False)
        kwargs.setdefault("emoji", False)
        if os.environ.get("NO_COLOR"):
            kwargs["color_system"] = None
        super().__init__(*args, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if len(objects) == 1 and isinstance(objects[0], str) and objects[0].startswith(" ") and "end" not in kwargs:
            s = objects[0]
            n = len(s) - len(s.lstrip(" "))
            text = self.render_str(s[n:], markup=kwargs.pop("markup", None), highlight=kwargs.pop("highlight", None),
                                   emoji=kwargs.pop("emoji", None))
            kwargs.setdefault("soft_wrap", True)  # each line below is already cut to the width
            for line in text.wrap(self, max(20, self.width - n)):
                line.rstrip()
                super().print(Text(" " * n) + line, **kwargs)
            return
        super().print(*objects, **kwargs)

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")
