"""JSON report: the stable document for provisioning pipelines (validated by `gpudoctor schema`)."""
from __future__ import annotations

import json
import os
import tempfile

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
    directory = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".gpudoctor-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(to_json(report))
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def dumps_schema() -> str:
    return json.dumps(report_schema(), indent=2)
