"""Reports to render in the format tests: the H200 hosts' saved reports, a cluster report, and a hostile one."""
from __future__ import annotations

import json
from pathlib import Path

from gpudoctor.facts.cluster import ClusterReport
from gpudoctor.facts.findings import Finding, Report, RuleOutcome
from gpudoctor.facts.model import ProbeError

ROOT = Path(__file__).resolve().parent.parent
H200_2GPU = ROOT / "docs/examples/h200-2gpu-2026-11-29/scan.json"
H200_1GPU = ROOT / "docs/examples/h200-1gpu-2026-11-29/scan.json"
H200_BENCH = ROOT / "docs/examples/h200-1gpu-2026-11-29/confirm-bench.json"
CLUSTER = ROOT / "docs/examples/h200-1gpu-2026-11-29/cluster-cpu.json"
JUNIT_XSD = ROOT / "tests/fixtures/formats/junit.xsd"

#: a GitHub token shape the redaction must remove from every format
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
#: text that breaks naive writers: workflow-command, Prometheus, XML and HTML metacharacters
NASTY = 'GPU 0: 50% busy, a\\b "quoted" <script>alert(1)</script> & x: y,\r\nsecond line\x07'


def load(path: Path):
    d = json.loads(path.read_text())
    return ClusterReport.model_validate(d) if d.get("kind") == "gpudoctor-cluster-report" else Report.model_validate(d)


def hostile() -> Report:
    """The 2-GPU H200 report plus an error finding full of metacharacters (and a token), a not-assessed
    outcome and a probe error."""
    r = load(H200_2GPU)
    f = Finding(rule_id="GPU002", severity="error", area="GPU health", title="GPU temperature: high, 90%",
                subject=NASTY, evidence=[NASTY, f"HF_TOKEN={TOKEN}", f"url https://user:{TOKEN}@example.com/x"],
                remedy="Cool it: check fans, 100% duty", sources=["https://docs.nvidia.com/x?a=1&b=2"])
    r.findings.append(f)
    r.outcomes = [o for o in r.outcomes if o.rule_id != "GPU002"]
    r.outcomes.append(RuleOutcome(rule_id="GPU002", area="GPU health", title=f.title, status="fail"))
    r.outcomes.append(RuleOutcome(rule_id="ZZZ001", area="Host", title="made-up rule", status="not_assessed",
                                  reason=f"facts missing: {NASTY}"))
    r.snapshot.probe_errors.append(ProbeError(probe="storage", kind="timeout", message=f"df hung: {NASTY}",
                                              seconds=10.0))
    r.summary.errors += 1
    return r


def all_reports() -> dict[str, object]:
    return {"h200-2gpu": load(H200_2GPU), "h200-1gpu": load(H200_1GPU), "h200-bench": load(H200_BENCH),
            "cluster": load(CLUSTER), "hostile": hostile()}
