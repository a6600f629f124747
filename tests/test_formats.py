"""JUnit, GitHub and Prometheus output, each read back by its consumer's parser or schema (issue 17)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from formats_helpers import CLUSTER, H200_2GPU, JUNIT_XSD, NASTY, TOKEN, all_reports, hostile, load

from gpudoctor.reports import cases as C
from gpudoctor.reports import github, junit, prometheus
from gpudoctor.reports.outputs import FORMATS, render

xmlschema = pytest.importorskip("xmlschema", reason="xmlschema (test extra) validates the JUnit XML")
parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client (test extra) parses the textfile")

REPORTS = all_reports()
needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                                    reason="promtool not installed (Debian: apt-get install prometheus)")


# --- JUnit ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def schema():
    return xmlschema.XMLSchema(str(JUNIT_XSD))


@pytest.mark.parametrize("name", sorted(REPORTS))
@pytest.mark.parametrize("fail_on", ["error", "warning", "info", "never"])
def test_junit_valid_and_counts(schema, name, fail_on):
    report = REPORTS[name]
    xml = render(report, "junit", fail_on)
    schema.validate(xml)  # raises with the offending path when invalid
    doc = schema.to_dict(xml)
    suite = doc["testsuite"][0]
    cases = C.cases(report)
    errors = C.probe_errors(report)
    assert len(suite["testcase"]) == len(cases) + len(errors) == suite["@tests"]
    failures = [t for t in suite["testcase"] if "failure" in t]
    assert len(failures) == suite["@failures"] == sum(c.fails(fail_on) for c in cases)
    skipped = [t for t in suite["testcase"] if "skipped" in t]
    assert len(skipped) == suite["@skipped"] == sum(c.status in ("not_assessed", "not_applicable") for c in cases)
    for t, c in zip(suite["testcase"], cases, strict=False):
        assert t["@classname"] == (f"{c.node}." if c.node else "") + c.area
        assert t["@name"] == f"{c.rule_id} {c.title}"


def test_junit_schema_rejects_a_broken_document(schema):
    """The negative control: the schema can fail (a testcase without its name)."""
    with pytest.raises(xmlschema.XMLSchemaValidationError):
        schema.validate('<testsuites><testsuite name="x" tests="1"><testcase classname="a"/></testsuite></testsuites>')


def test_junit_failure_body_has_evidence_and_remedy(schema):
    xml = render(hostile(), "junit", "error")
    doc = schema.to_dict(xml)
    fail = next(t for t in doc["testsuite"][0]["testcase"] if t["@name"].startswith("GPU002"))
    body = fail["failure"][0]["$"] if isinstance(fail["failure"], list) else fail["failure"]["$"]
    assert "Cool it: check fans, 100% duty" in body and "second line" in body and "<script>" in body
    assert fail["failure"][0]["@type"] == "error"
    assert "\x07" not in xml  # a control character would make the file unreadable XML
    assert TOKEN not in xml and "<redacted>" in body
    skipped = next(t for t in doc["testsuite"][0]["testcase"] if t["@name"].startswith("ZZZ001"))
    assert skipped["skipped"][0]["@message"].startswith("not assessed: facts missing")
    err = next(t for t in doc["testsuite"][0]["testcase"] if t["@name"] == "probe storage")
    assert err["error"][0]["@type"] == "timeout"


def test_junit_warning_below_fail_on_passes_with_output(schema):
    report = load(H200_2GPU)  # two TOP006 warnings
    doc = schema.to_dict(junit.render(report, "error"))
    top = [t for t in doc["testsuite"][0]["testcase"] if t["@name"].startswith("TOP006")]
    assert top and all("failure" not in t and "NVLink" in t["system-out"][0] for t in top)
    doc = schema.to_dict(junit.render(report, "warning"))
    assert all("failure" in t for t in doc["testsuite"][0]["testcase"] if t["@name"].startswith("TOP006"))


# --- GitHub --------------------------------------------------------------------------------------------
def parse_command(line: str) -> tuple[str, dict[str, str], str] | None:
    """actions/runner ActionCommand.TryParseV2, ported: '::name k=v,k=v::data' with its unescaping."""
    if not line.startswith("::"):
        return None
    end = line.find("::", 2)
    if end < 0:
        return None
    info = line[2:end]
    name, _, props_s = info.partition(" ")
    props = {}
    for prop in [p for p in props_s.strip().split(",") if p]:
        k, sep, v = prop.partition("=")
        if sep:
            props[k] = (v.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",")
                        .replace("%25", "%"))
    data = line[end + 2:].replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
    return name, props, data


def test_github_commands_round_trip_through_the_runner_parser():
    report = hostile()
    out = render(report, "github", "error")
    cmds = [parse_command(line) for line in out.splitlines()]
    cmds = [c for c in cmds if c]
    errors = [c for c in cmds if c[0] == "error"]
    assert len(errors) == 1  # only GPU002 is an error; the TOP006 warnings stay warnings
    name, props, data = errors[0]
    assert props["title"] == f"gpudoctor GPU002 GPU temperature: high, 90% — {NASTY}".replace(TOKEN, "<redacted>")
    assert data.splitlines()[0] == NASTY.split("\r\n")[0] and "second line\x07" in data
    assert data.endswith("fix: Cool it: check fans, 100% duty")
    assert TOKEN not in out
    assert sum(c[0] == "warning" for c in cmds) == 3  # 2 TOP006 + the probe error
    assert ("group", {}, "not assessed (facts missing)") in cmds
    for line in out.splitlines():  # one command per line: nothing of a message leaked onto its own line
        assert line.startswith("::") or line.startswith("gpudoctor ") or "ZZZ001" in line


def test_github_fail_on_never_is_never_an_error():
    out = github.render(hostile(), "never")
    assert not [c for c in map(parse_command, out.splitlines()) if c and c[0] == "error"]


def test_github_step_summary(tmp_path, monkeypatch):
    path = tmp_path / "summary.md"
    path.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    render(hostile(), "github", "error")
    md = path.read_text()
    assert md.startswith("earlier step\n## :x: ")  # appended, as the runner expects
    row = next(line for line in md.splitlines() if "`GPU002`" in line)
    assert row.count(" | ") == 4  # the pipes and newlines of the finding did not break the table
    assert "&lt;script&gt;" in row and TOKEN not in md
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert github.write_step_summary(hostile(), "error") is None


# --- Prometheus ----------------------------------------------------------------------------------------
def families(text: str) -> dict[str, object]:
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_prometheus_parses_and_follows_the_naming_rules(name):
    report = REPORTS[name]
    text = render(report, "prometheus", "error")
    fams = families(text)
    assert fams and all(n.startswith("gpudoctor_") for n in fams)
    for n, fam in fams.items():
        assert fam.type == "gauge" and fam.documentation
        assert not n.endswith("_total")  # only counters end in _total; nothing here counts up
        assert not any(u in n for u in ("_gbs", "_ms", "_gib", "_mib", "_percent"))  # base units only
        labelsets = [tuple(sorted(s.labels.items())) for s in fam.samples]
        assert len(labelsets) == len(set(labelsets)), f"duplicate series in {n}"
    cases = C.cases(report)
    outcome = fams["gpudoctor_rule_outcome"]
    ones = [s for s in outcome.samples if s.value == 1]
    assert len(ones) == len(cases)  # exactly one status per rule outcome
    found = fams.get("gpudoctor_finding")
    assert len(found.samples if found else []) == len(C.all_findings(report))
    assert fams["gpudoctor_healthy"].samples[0].value == float(not C.failing(report, "error"))


def test_prometheus_measured_figures_of_the_h200_host():
    fams = families(render(load(H200_2GPU), "prometheus"))
    bus = {(s.labels["dtype"], int(s.labels["size_bytes"])): s.value
           for s in fams["gpudoctor_allreduce_bus_bandwidth_bytes_per_second"].samples}
    assert bus[("bfloat16", 2**30)] == pytest.approx(328.47e9, rel=1e-3)  # the saved report's 1 GiB busbw
    copies = fams["gpudoctor_copy_bandwidth_bytes_per_second"].samples
    assert {(s.labels["gpu_index"], s.labels["direction"]) for s in copies} == {
        ("0", "h2d"), ("0", "d2h"), ("1", "h2d"), ("1", "d2h")}
    assert all(s.labels["gpu_uuid"] and 40e9 < s.value < 64e9 for s in copies)
    assert 0 < fams["gpudoctor_ddp_step_seconds"].samples[0].value < 1
    assert fams["gpudoctor_ddp_scaling_efficiency_ratio"].samples[0].value > 0.5
    assert fams["gpudoctor_scan_timestamp_seconds"].samples[0].value > 1.7e9
    assert fams["gpudoctor_probe_errors"].samples[0].value == 0
    assert len(fams["gpudoctor_gpu_info"].samples) == 2


def test_prometheus_label_escaping_and_redaction():
    text = render(hostile(), "prometheus")
    fams = families(text)
    f = next(s for s in fams["gpudoctor_finding"].samples if s.labels["rule_id"] == "GPU002")
    assert f.labels["subject"] == NASTY[:64]  # backslash, quote and newline survive the round trip
    assert any(s.labels == {"probe": "storage", "kind": "timeout"} for s in fams["gpudoctor_probe_error"].samples)
    assert TOKEN not in text


def test_prometheus_findings_are_capped():
    r = hostile()
    r.findings = r.findings * 150
    fams = families(prometheus.render(r))
    assert len(fams["gpudoctor_finding"].samples) <= prometheus.MAX_FINDINGS


def test_prometheus_cluster_series():
    fams = families(render(load(CLUSTER), "prometheus"))
    nodes = {s.labels["node"] for s in fams["gpudoctor_cluster_node_status"].samples}
    assert len(nodes) == 2
    assert fams["gpudoctor_cluster_pair_bus_bandwidth_bytes_per_second"].samples[0].value > 0
    assert {s.labels.get("node") for s in fams["gpudoctor_rule_outcome"].samples} >= nodes


@needs_promtool
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_promtool_check_metrics(name):
    text = render(REPORTS[name], "prometheus")
    res = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "" and res.stderr.strip() == ""  # no lint warning either


def test_every_format_renders_every_report():
    for name, report in REPORTS.items():
        for fmt in FORMATS:
            out = render(report, fmt, "warning")
            assert out.strip(), (name, fmt)
            assert TOKEN not in out, (name, fmt)


@needs_promtool
def test_promtool_can_fail():
    """The negative control: promtool's lint rejects a gauge named like a counter."""
    bad = "# HELP x_total a\n# TYPE x_total gauge\nx_total 1\n"
    res = subprocess.run(["promtool", "check", "metrics"], input=bad, capture_output=True, text=True, timeout=60)
    assert res.returncode != 0
