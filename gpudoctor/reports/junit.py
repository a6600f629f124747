"""JUnit XML (the Ant/Jenkins schema CI systems read): one testcase per rule outcome.

classname = the rule's area (prefixed with the node label in a cluster report), name = rule id + title.
A rule with findings at or above ``--fail-on`` is a ``<failure>``; below it, the testcase passes and the
findings go to ``<system-out>``; not assessed / not applicable is ``<skipped>`` with the reason.
The evidence and the remedy are the failure's body. Probe errors are ``<error>`` testcases.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from gpudoctor.facts.findings import Finding
from gpudoctor.reports import cases as C

#: characters XML 1.0 forbids (control characters from a pasted log would make the file unreadable)
_BAD = {i: None for i in [*range(0, 9), 11, 12, *range(14, 32)]}


def clean(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry."""
    return text.translate(_BAD)


def finding_body(f: Finding) -> str:
    """Evidence lines, then the fix and the sources, as plain text."""
    lines = [f"[{f.severity}] {f.rule_id} {f.title}" + (f" — {f.subject}" if f.subject else "")]
    lines += [f"  {e}" for e in f.evidence]
    lines.append(f"fix: {f.remedy}")
    if f.sources:
        lines.append("sources: " + "; ".join(f.sources))
    return "\n".join(lines)


def _suite(name: str, items: list[C.Case], fail_on: str, errors: list[Any], timestamp: str | None,
           hostname: str | None) -> ET.Element:
    n_fail = sum(c.fails(fail_on) for c in items)
    n_skip = sum(c.status in ("not_assessed", "not_applicable") for c in items)
    attrs = {"name": name, "tests": str(len(items) + len(errors)), "failures": str(n_fail),
             "errors": str(len(errors)), "skipped": str(n_skip), "time": "0"}
    if timestamp:
        attrs["timestamp"] = timestamp[:19]  # xs:dateTime without the zone, as Ant writes it
    if hostname:
        attrs["hostname"] = clean(hostname)
    suite = ET.Element("testsuite", attrs)
    for c in items:
        case = ET.SubElement(suite, "testcase", classname=clean((f"{c.node}." if c.node else "") + c.area),
                             name=clean(f"{c.rule_id} {c.title}"), time="0")
        body = "\n\n".join(finding_body(f) for f in c.findings)
        if c.fails(fail_on):
            worst = c.severity or "error"
            first = c.findings[0]
            msg = first.title + (f" — {first.subject}" if first.subject else "")
            if len(c.findings) > 1:
                msg += f" (+{len(c.findings) - 1} more)"
            ET.SubElement(case, "failure", message=clean(msg[:1000]), type=worst).text = clean(body)
        elif c.status in ("not_assessed", "not_applicable"):
            label = c.status.replace("_", " ")
            ET.SubElement(case, "skipped", message=clean(f"{label}: {c.reason}" if c.reason else label))
        elif c.findings:  # below --fail-on: a pass that says what it saw
            ET.SubElement(case, "system-out").text = clean(body)
    for e in errors:
        node, err = e
        case = ET.SubElement(suite, "testcase", classname=clean((f"{node}." if node else "") + "Probes"),
                             name=clean(f"probe {err.probe}"), time=f"{err.seconds:.3f}")
        ET.SubElement(case, "error", message=clean(err.message[:1000]), type=err.kind).text = clean(err.message)
    return suite


def render(report: Any, fail_on: str = "error") -> str:
    """The JUnit XML document of ``report`` (``<testsuites>`` with one ``<testsuite>``)."""
    items = C.cases(report)
    errors = C.probe_errors(report)
    suite = _suite(C.title(report), items, fail_on, errors, C.created_at(report), C.hostname(report))
    root = ET.Element("testsuites", name="gpudoctor", tests=suite.get("tests", "0"),
                      failures=suite.get("failures", "0"), errors=suite.get("errors", "0"), time="0")
    if (d := C.duration(report)) is not None:
        root.set("time", f"{d:.3f}")
        suite.set("time", f"{d:.3f}")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
