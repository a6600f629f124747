"""What a lint rule produces: a finding at a place in a file, with an optional mechanical fix.

Kept free of gpudoctor's host-report models: lint runs on source text only (nothing imported or run).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"info": 1, "warning": 2, "error": 3}


@dataclass(frozen=True)
class Edit:
    """Replace the source between two (line, col) positions (1-based lines, 0-based UTF-8 columns as ``ast``
    gives them) with ``text``."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass
class LintFinding:
    """One pitfall found at ``path:line:col``; ``edits`` is the mechanical fix when there is a safe one."""

    rule_id: str
    severity: Severity
    path: str
    line: int
    col: int
    message: str
    remedy: str
    sources: list[str]
    edits: list[Edit] = field(default_factory=list)

    @property
    def fixable(self) -> bool:
        return bool(self.edits)

    def as_dict(self) -> dict[str, object]:
        """The ``--json`` record (columns 1-based, as printed)."""
        return {"rule_id": self.rule_id, "severity": self.severity, "path": self.path, "line": self.line,
                "col": self.col + 1, "message": self.message, "remedy": self.remedy, "sources": list(self.sources),
                "fixable": self.fixable}
