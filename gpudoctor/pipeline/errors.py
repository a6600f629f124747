"""What a pipeline raises instead of printing: the CLI turns these into a one-line error or a partial report."""
from __future__ import annotations

from typing import Any

from gpudoctor.probes.runner import ScanInterrupted

__all__ = ["PipelineError", "Interrupted", "ScanInterrupted"]


class PipelineError(Exception):
    """Bad user input or an unusable host: the CLI prints the message on one line and exits 2."""


class Interrupted(Exception):
    """Ctrl-C / SIGTERM during a scan: ``report`` is what the finished steps found; the CLI shows it, exits 130."""

    def __init__(self, message: str, report: Any):
        super().__init__(message)
        self.report = report
