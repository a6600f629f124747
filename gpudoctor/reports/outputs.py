"""Every report command's output: one format table, one atomic writer.

``render(report, fmt, ...)`` gives the text of a report in any format; ``write_atomic`` writes a file as
node_exporter's textfile collector and Slurm/Kubernetes readers need it: a temporary file in the same
directory, then a rename, so a reader never sees half a file. The report is scrubbed of secrets
(:mod:`gpudoctor.reports.redact`) before any format sees it.
"""
from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable
from typing import Any

FORMATS = ("text", "json", "junit", "github", "prometheus", "html")


def _json(report: Any, fail_on: str, verbose: bool, text_renderer: Callable | None) -> str:
    return report.model_dump_json(indent=2) + "\n"


def _junit(report: Any, fail_on: str, verbose: bool, text_renderer: Callable | None) -> str:
    from gpudoctor.reports import junit

    return junit.render(report, fail_on)


def _github(report: Any, fail_on: str, verbose: bool, text_renderer: Callable | None) -> str:
    from gpudoctor.reports import github

    github.write_step_summary(report, fail_on)
    return github.render(report, fail_on)


def _prometheus(report: Any, fail_on: str, verbose: bool, text_renderer: Callable | None) -> str:
    from gpudoctor.reports import prometheus

    return prometheus.render(report, fail_on)


def _html(report: Any, fail_on: str, verbose: bool, text_renderer: Callable | None) -> str:
    from gpudoctor.reports import html

    return html.render(report, fail_on)


def _text(report: Any, fail_on: str, verbose: bool, text_renderer: Callable | None) -> str:
    """The terminal report as plain text (no colour, 120 columns): what --format text --output writes."""
    from gpudoctor.reports.console import Console

    renderer: Callable[..., None]
    if text_renderer is not None:
        renderer = text_renderer
    else:
        from gpudoctor.reports.cases import is_cluster
        from gpudoctor.reports.cluster_terminal import render_cluster
        from gpudoctor.reports.terminal import render as render_host

        renderer = render_cluster if is_cluster(report) else render_host
    buf = io.StringIO()
    renderer(report, Console(file=buf, width=120, color_system=None, force_terminal=False), verbose=verbose)
    return buf.getvalue()


RENDERERS: dict[str, Callable[[Any, str, bool, Callable | None], str]] = {
    "text": _text, "json": _json, "junit": _junit, "github": _github, "prometheus": _prometheus, "html": _html}


def render(report: Any, fmt: str, fail_on: str = "error", verbose: bool = False,
           text_renderer: Callable | None = None, scrub: bool = True) -> str:
    """``report`` (any gpudoctor report document) in format ``fmt``; secrets scrubbed first unless ``scrub``
    is False (the caller already did). ``text_renderer`` is the command's terminal renderer (text only)."""
    if fmt not in RENDERERS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if scrub:
        from gpudoctor.reports.redact import scrub_model

        report = scrub_model(report)
    return RENDERERS[fmt](report, fail_on, verbose, text_renderer)


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename.

    A symlink is followed (the file it points to is replaced, the link stays); a path that exists and is not a
    regular file (a FIFO, /dev/stdout, a terminal, /dev/full) is written directly, never replaced. Raises OSError
    (unwritable directory, disk full, a device that refuses the write); no temporary file is left behind."""
    if not (os.path.exists(path) and not os.path.isfile(path)):  # (/dev/stdout of a pipe resolves to no path)
        path = os.path.realpath(path)
    if os.path.exists(path) and not os.path.isfile(path):
        if os.path.isdir(path):
            raise IsADirectoryError(f"{path} is a directory")
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        return
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".gpudoctor-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plain `>` redirect would (node_exporter must read it); mkstemp gives 0600
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
