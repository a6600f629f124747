"""Every public case of the corpus (tests/fixtures/corpus, copied from /work/shared/corpus) as a test of the
whole chain: raw files -> formats recognised -> facts -> rules -> the case's known diagnosis.

Each case lists the rule(s) that carry its diagnosis (any one of them must fire) and the error-level
findings consistent with the case; any other error-level finding contradicts the case and fails.
The expected.md of a case is never an input.
"""
import pathlib

import pytest

from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate

CORPUS = pathlib.Path(__file__).parent / "fixtures" / "corpus"
TOPO = "the texts hold no topology (no topo -m, no lspci): the PCIe-only + ACS/IOMMU reasoning has no facts"

# case -> (rules of which one must fire, further error-level rules consistent with the case, xfail reason)
CASES = {
    # ACS redirect on the root ports of a PCIe-only pair: diagnosis needs topo -m + ACS rules (issue 3)
    "001-nccl-acs-amd-rootport-2gpu-node": ({"TOP", "PCI", "ACS"}, set(), None),
    # a single ACSCtl line with ReqRedir+/CmpltRedir+: lspci facts are parsed here, the ACS rule is issue 3's
    "003-nccl-gdr-crash-acs-plx": ({"TOP", "PCI", "ACS"}, set(), None),
    "004-nccl-devshm-64mb-docker": ({"SIG006"}, set(), None),
    "005-nccl-devshm-permission-denied": ({"SIG007"}, set(), None),
    # PCIe-only pair stalling after NCCL init: needs "no NVLink + IOMMU/ACS" topology reasoning (issue 3);
    # the versions are compatible and must not be blamed (checked below, not xfail)
    "006-vllm-tp2-stall-rtx6000ada-acs-iommu": ({"TOP", "PCI", "ACS"}, set(), TOPO),
    "007-nccl-gdr-disabled-nvidia-peermem-old-nccl": ({"SIG021"}, set(), None),
    "008-torch21-cu121-on-driver-470": ({"SIG002", "TRC003"}, {"SIG002", "TRC003"}, None),
    "010-nccl-ibv-reg-mr-memlock-8192": ({"SIG009"}, set(), None),
    # NIC PIX to GPU2/3 -> GDR possible: needs the topo -m parser and NIC rules of issue 3
    "011-nccltests-8xv100-nvlink-mlx5-gdr-off": ({"TOP", "NET"}, set(), None),
    "012-h100-node-7-of-8-gpus-probe-failed": ({"SIG017"}, set(), None),
    "013-gpu-operator-cuda-validator-system-not-initialized-fm": ({"SIG003"}, set(), None),
    "015-cpp-extension-nvcc-10.1-vs-torch-cu113": ({"SIG019"}, set(), None),
    "016-ddp-duplicate-gpu-hardcoded-device": ({"SIG010"}, set(), None),
    "017-a100-nvswitch-0-nvls-and-p2p-level-loc": ({"NCL007"}, set(), None),
    "020-torch-arch-list-missing-sm61": ({"SIG001"}, set(), None),
    "021-dmesg-gpu-fallen-off-bus-no-xid": ({"SIG011"}, {"SIG017"}, None),
    "023-container-started-without-gpus": ({"SIG016"}, {"LOG003"}, None),
    "024-vllm-docker-error-804-forward-compat-geforce": ({"SIG004"}, set(), None),
    "027-trtllm-2xa10-phb-no-peer-access-custom-allreduce": ({"SIG018", "LOG004"}, {"SIG018"}, None),
    "028-nccl-gdr-asymmetric-nv-peer-mem-missing-one-node": ({"LOG002"}, set(), None),
}


def case_dirs():
    return sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and p.name[:3].isdigit())


def run_case(name):
    files = sorted(str(p) for p in (CORPUS / name).iterdir() if p.name != "expected.md")
    snap, errors = build_snapshot(files)
    assert snap is not None, errors
    return evaluate(snap), errors


def test_every_case_has_an_expectation():
    assert case_dirs() == sorted(CASES)


def _fired(report, wanted):
    ids = {f.rule_id for f in report.findings}
    return {i for i in ids if i in wanted or any(i.startswith(w) and not w[-1].isdigit() for w in wanted)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_diagnosis(name, request):
    wanted, _, xfail = CASES[name]
    if xfail:
        request.applymarker(pytest.mark.xfail(reason=xfail, strict=False))
    report, errors = run_case(name)
    assert not errors, errors  # every raw file of a case is a recognised format
    assert _fired(report, wanted), f"none of {sorted(wanted)} fired; findings: {[f.rule_id for f in report.findings]}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_no_contradicting_error(name):
    wanted, consistent, _ = CASES[name]
    report, _ = run_case(name)
    bad = [f"{f.rule_id}: {f.title}" for f in report.findings
           if f.severity == "error" and f.rule_id not in wanted | consistent]
    assert not bad, bad


def test_006_does_not_blame_versions():
    report, _ = run_case("006-vllm-tp2-stall-rtx6000ada-acs-iommu")
    assert not [f for f in report.findings if f.rule_id.startswith(("TRC", "DRV", "SIG002"))]
    out = {o.rule_id: o.status for o in report.outcomes}
    assert out["TRC002"] == "pass"  # a CUDA build of torch, known from the text


def test_015_does_not_claim_runtime_broken():
    report, _ = run_case("015-cpp-extension-nvcc-10.1-vs-torch-cu113")
    assert not [f for f in report.findings if f.rule_id.startswith(("TRC", "DRV"))]


def test_017_nvls_zero_is_not_an_error():
    report, _ = run_case("017-a100-nvswitch-0-nvls-and-p2p-level-loc")
    assert not [f for f in report.findings if f.severity == "error"]
    assert {"NCL005", "NCL007"} <= {f.rule_id for f in report.findings}


def test_023_no_version_mismatch_reported():
    report, _ = run_case("023-container-started-without-gpus")
    assert not [f for f in report.findings if f.rule_id in ("TRC003", "SIG002", "SIG004")]


def test_008_facts_from_embedded_warning():
    report, _ = run_case("008-torch21-cu121-on-driver-470")
    snap = report.snapshot
    assert snap.torch.cuda == "12.1" and snap.nvml.cuda_driver_version == "11.4"
    trc3 = next(f for f in report.findings if f.rule_id == "TRC003")
    assert trc3.severity == "error"
