"""Verdicts on real combinations (torch build x driver x GPU) from the corpus, captures and vendor tables."""
import pytest

from gpudoctor.compat import check as C

RUNTIME = [
    # cuda, driver, driver_cuda, expected, where it comes from
    ("12.1", None, "11.4", C.FAIL, "corpus 008: 2.1.0+cu121 on GKE driver 470 (found version 11040)"),
    ("12.1", "470.182.03", None, C.FAIL, "corpus 008 with the driver from its title"),
    ("11.8", "470.182.03", None, C.CAVEAT, "corpus 008's fix: the cu118 wheel runs under 11.x MVC"),
    ("12.8", "535.274.02", None, C.CAVEAT, "raw collect_env 005: 2.8.0+cu128 on 535 (4x A30)"),
    ("12.1", "535.216.01", None, C.PASS, "corpus 006: 2.3.1+cu121 on 535.216.01"),
    ("11.7", "520.61.05", None, C.PASS, "raw collect_env 003: 1.13.0+cu117 on 520.61.05"),
    ("13.0", "580.159.04", "13.0", C.PASS, "the H200 capture"),
    ("13.0", "535.183.01", None, C.FAIL, "PyPI torch 2.11 on an R535 node"),
    ("13.2", "580.159.04", None, C.CAVEAT, "cu132 on R580 under 13.x MVC"),
    ("12.6", "525.60.13", None, C.CAVEAT, "exactly the 12.x MVC floor"),
    ("12.6", "525.60.12", None, C.FAIL, "just below the floor"),
    ("10.2", "440.33", None, C.PASS, "1.12 PyPI (cu102) on its toolkit driver"),
    ("10.2", "418.87.01", None, C.FAIL, "no MVC before CUDA 11"),
    ("9.2.88", "410.78", None, C.UNKNOWN, "raw collect_env 001: CUDA 9.2 predates the tables"),
    ("12.8", None, "12.0", C.CAVEAT, "driver reports 12.0 (>= R525): MVC without a driver version"),
    ("11.8", None, "11.0", C.UNKNOWN, "11.0 drivers start below the 11.x MVC floor: needs the version"),
]


@pytest.mark.parametrize("cuda,driver,driver_cuda,expected,why", RUNTIME, ids=[r[4] for r in RUNTIME])
def test_runtime_vs_driver(cuda, driver, driver_cuda, expected, why):
    v = C.runtime_vs_driver(cuda, driver, driver_cuda)
    assert v.status == expected, v.reason
    if expected == C.CAVEAT:
        assert "minor-version compatibility" in v.reason and "PTX" in v.reason
    if expected != C.UNKNOWN:
        assert v.sources


ARCH = [
    (["sm_50", "sm_70", "sm_80", "sm_86"], "6.1", C.FAIL, "corpus 020: cu111 nightly without sm_60/61"),
    (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "9.0", C.PASS, "H200 capture"),
    (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "8.9", C.PASS, "sm_89 via the sm_86 cubin"),
    (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "7.0", C.FAIL, "2.11 cu13x dropped Volta"),
    (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "12.1", C.PASS, "GB10 via the sm_120 cubin"),
    (["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "11.0", C.FAIL, "Thor: no sm_110, no PTX"),
    (["sm_80", "compute_80"], "9.0", C.CAVEAT, "TORCH_CUDA_ARCH_LIST=8.0+PTX source build on Hopper"),
    (["sm_90a"], "9.0", C.PASS, "arch-specific cubin on its own arch"),
    (["sm_90a"], "10.0", C.FAIL, "'a' cubins do not run on later archs"),
]


@pytest.mark.parametrize("arch,cc,expected,why", ARCH, ids=[a[3] for a in ARCH])
def test_arch_vs_cc(arch, cc, expected, why):
    assert C.arch_vs_cc(arch, cc, "12.8").status == expected


def test_arch_unknown_falls_back_to_toolkit_range():
    assert C.arch_vs_cc([], "9.0", "11.7").status == C.FAIL        # CUDA 11.7 predates sm_90 (first 11.8)
    assert C.arch_vs_cc([], "7.0", "13.0").status == C.FAIL        # CUDA 13.0 dropped Volta
    assert C.arch_vs_cc([], "9.0", "12.4").status == C.UNKNOWN


@pytest.mark.parametrize(
    "driver,cc,expected",
    [
        ("470.182.03", "9.0", C.FAIL),
        ("520.61.05", "9.0", C.PASS),
        ("535.274.02", "8.0", C.PASS),
        ("560.35.03", "12.0", C.FAIL),
        ("570.26", "12.0", C.PASS),
        ("580.159.04", "9.0", C.PASS),
        ("410.78", "6.1", C.UNKNOWN),
    ],
)
def test_driver_vs_gpu(driver, cc, expected):
    assert C.driver_vs_gpu(driver, cc).status == expected


@pytest.mark.parametrize("torch,tv,ta,expected", [
    ("2.8.0+cu128", "0.23.0+cu128", "2.8.0+cu128", [C.PASS, C.PASS]),       # raw collect_env 005
    ("2.11.0+cu130", "0.26.0+cu130", "2.11.0+cu130", [C.PASS, C.PASS]),     # H200 capture
    ("2.13.0+cu130", None, "2.11.0", [C.PASS]),                             # stable-ABI torchaudio on a later torch
    ("2.10.0+cu128", None, "2.11.0", [C.FAIL]),                             # ... but not on an older one
    ("2.6.0+cu124", "0.20.1+cu124", None, [C.FAIL]),
    ("2.11.0+cu126", "0.26.0+cu130", None, [C.FAIL]),                       # CUDA major differs
    ("9.9.0", "1.0.0", None, [C.UNKNOWN]),
])
def test_companions(torch, tv, ta, expected):
    assert [v.status for v in C.companions(torch, tv, ta)] == expected
