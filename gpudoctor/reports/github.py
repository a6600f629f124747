"""GitHub Actions: workflow commands (annotations) on stdout, and a Markdown job summary.

``::error title=GPU002 ...::message`` for findings at or above ``--fail-on`` (and error findings),
``::warning`` for warnings below it, ``::notice`` for infos. Data is escaped as the runner's
``CommandExtensions`` expects (``%`` ``\\r`` ``\\n``); property values also escape ``:`` and ``,``.
When ``GITHUB_STEP_SUMMARY`` names a file, the Markdown summary is appended to it.
"""
from __future__ import annotations

import os
from typing import Any

from gpudoctor.compat.ghactions import escape_data, escape_property
from gpudoctor.reports import cases as C

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def command(level: str, message: str, **props: str) -> str:
    """``::level k=v,...::message`` with every part escaped."""
    p = ",".join(f"{k}={escape_property(v)}" for k, v in props.items() if v)
    return f"::{level}{' ' + p if p else ''}::{escape_data(message)}"


def render(report: Any, fail_on: str = "error") -> str:
    """One workflow command per finding, a group with the not-assessed rules, and a last summary line."""
    lines = []
    for node, f in C.all_findings(report):
        level = "error" if C.fails([f], fail_on) else LEVEL[f.severity]
        if level == "error" and not C.fails([f], fail_on):
            level = "warning"
        name = (f"{node}: " if node else "") + f"{f.rule_id} {f.title}" + (f" — {f.subject}" if f.subject else "")
        body = "\n".join([*f.evidence, f"fix: {f.remedy}"])
        lines.append(command(level, body, title=f"gpudoctor {name}"))
    na = [c for c in C.cases(report) if c.status == "not_assessed"]
    if na:
        lines.append("::group::not assessed (facts missing)")
        lines += [escape_data(C.case_name(c) + (f": {c.reason}" if c.reason else "")) for c in na]
        lines.append("::endgroup::")
    for node, e in C.probe_errors(report):
        lines.append(command("warning", e.message, title=f"gpudoctor probe {e.probe} {e.kind}"
                             + (f" on {node}" if node else "")))
    n = C.counts(report)
    lines.append(f"{C.title(report)}: {C.verdict(report, fail_on)} · {n['errors']} error(s), {n['warnings']} "
                 f"warning(s), {n['infos']} info · {n['passed']} passed, {n['not_assessed']} not assessed")
    return "\n".join(lines) + "\n"


def _md(s: str) -> str:
    """Table-cell text: pipes escaped, line breaks as <br>, HTML-ish brackets neutralised."""
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("\r", "").replace("\n", "<br>")


def summary_markdown(report: Any, fail_on: str = "error") -> str:
    """The job summary: verdict, counts, one table row per finding, then the not-assessed rules."""
    icon = {"FAIL": ":x:", "WARN": ":warning:", "OK": ":white_check_mark:"}
    v = C.verdict(report, fail_on)
    n = C.counts(report)
    out = [f"## {icon[v]} {_md(C.title(report))}: {v}", "",
           f"{n['errors']} error(s) · {n['warnings']} warning(s) · {n['infos']} info · {n['passed']} passed · "
           f"{n['not_assessed']} not assessed · {n['not_applicable']} not applicable (fail on: {fail_on})", ""]
    found = C.all_findings(report)
    if found:
        out += ["| severity | rule | finding | evidence | fix |", "|---|---|---|---|---|"]
        for node, f in found:
            what = (f"{node}: " if node else "") + f.title + (f" — {f.subject}" if f.subject else "")
            out.append(f"| {f.severity} | `{f.rule_id}` | {_md(what)} | {_md(chr(10).join(f.evidence))} | "
                       f"{_md(f.remedy)} |")
        out.append("")
    na = [c for c in C.cases(report) if c.status == "not_assessed"]
    if na:
        out += ["<details><summary>Not assessed</summary>", ""]
        out += [f"- `{c.rule_id}` {_md(C.case_name(c))}" + (f": {_md(c.reason)}" if c.reason else "") for c in na]
        out += ["", "</details>", ""]
    errs = C.probe_errors(report)
    if errs:
        out += ["**Probe errors**", ""]
        out += [f"- {(node + ': ') if node else ''}{e.probe} ({e.kind}): {_md(e.message)}" for node, e in errs]
        out.append("")
    return "\n".join(out)


def write_step_summary(report: Any, fail_on: str, environ: dict[str, str] | None = None) -> str | None:
    """Append the summary to $GITHUB_STEP_SUMMARY when it is set; the path written, else None."""
    path = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(summary_markdown(report, fail_on) + "\n")
    except OSError as exc:  # the workflow's summary file is not this run's result: warn, keep the annotations
        import sys

        sys.stderr.write(f"gpudoctor: warning: cannot append the summary to GITHUB_STEP_SUMMARY={path}: "
                         f"{exc.strerror or exc}\n")
        return None
    return path
