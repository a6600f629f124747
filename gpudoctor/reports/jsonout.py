"""JSON report: the stable document for provisioning pipelines (validated by `gpudoctor schema`)."""
from __future__ import annotations

import json

from gpudoctor.facts.findings import Report


def to_json(report: Report) -> str:
    return report.model_dump_json(indent=2)


def report_schema() -> dict:
    """JSON Schema (draft 2020-12) of the report document."""
    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpudoctor report"
    return schema


def save(report: Report, path: str) -> None:
    """Write the report atomically (temp file + rename). Raises OSError on an unwritable path."""
    from gpudoctor.reports.outputs import write_atomic

    write_atomic(path, to_json(report) + "\n")


def dumps_schema() -> str:
    return json.dumps(report_schema(), indent=2)
