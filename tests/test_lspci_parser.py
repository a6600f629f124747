"""`lspci -vvv` parser on the real excerpts (corpus raw/lspci, case 003) and on garbage."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudoctor.parsers.lspci import ParseError, normalize_bdf, parse_lspci, speed_to_gen

FIX = Path(__file__).parent / "fixtures" / "topology"


def read(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


def test_acsctl_grep_excerpt_counts():
    """facts: 15 ACSCtl lines; 6 SrcValid+ (5 with redirect, 1 SrcValid only); 9 all off; 5 ReqRedir+CmpltRedir+."""
    devs = parse_lspci(read("lspci/001-acsctl-grep-mixed-srcvalid-tabs.txt"))
    assert len(devs) == 15 and all(d.bdf is None for d in devs)
    assert sum(d.src_valid for d in devs) == 6
    assert sum(d.acs_redirect for d in devs) == 5
    assert sum(not any(d.acs_ctl.values()) for d in devs) == 9
    only_src = [d for d in devs if d.src_valid and not d.acs_redirect]
    assert len(only_src) == 1 and only_src[0].acs_ctl["UpstreamFwd"] is False


def test_riser_lnksta_downgraded_speed_only():
    """facts: LnkCap 16GT/s x16; LnkSta 2.5GT/s (downgraded) x16 (ok): speed only."""
    (d,) = parse_lspci(read("lspci/003-4090-riser-lnkcap-lnksta-gen1-downgraded.txt"))
    assert (d.lnkcap_speed_gts, d.lnkcap_width, d.lnksta_speed_gts, d.lnksta_width) == (16.0, 16, 2.5, 16)
    assert speed_to_gen(d.lnkcap_speed_gts) == 4 and speed_to_gen(d.lnksta_speed_gts) == 1
    assert d.speed_downgraded is True and d.width_downgraded is False and d.downgraded is True
    assert d.acs_ctl is None and d.acs_redirect is None


def test_plx_switch_acscap_acsctl_and_next_bridge():
    devs = parse_lspci(read("lspci/005-plx-pex8725-acscap-acsctl-srcvalid.txt"))
    assert len(devs) == 2
    first, plx = devs
    assert first.bdf is None and first.is_bridge and first.driver == "pcieport"
    assert all(first.acs_cap.values())
    assert first.acs_ctl == {"SrcValid": True, "TransBlk": False, "ReqRedir": True, "CmpltRedir": True,
                             "UpstreamFwd": True, "EgressCtrl": False, "DirectTrans": False}
    assert first.acs_redirect is True
    assert plx.bdf == "0000:02:08.0" and plx.is_bridge and plx.kind == "bridge"
    assert "PEX 8725" in plx.name and plx.acs_ctl is None


def test_case_003_single_acsctl_line():
    (d,) = parse_lspci(read("cases/003-lspci.txt"))
    assert d.src_valid and d.acs_redirect and d.acs_ctl["UpstreamFwd"]


# Constructed (not a capture): the layout lspci prints without root, per pciutils' lspci(8).
NON_ROOT = """17:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
\tSubsystem: NVIDIA Corporation Device 16c1
\tCapabilities: <access denied>
\tKernel driver in use: nvidia

16:01.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])
\tBus: primary=16, secondary=17, subordinate=17, sec-latency=0
\tCapabilities: <access denied>
\tKernel driver in use: pcieport
"""


def test_non_root_output_marks_access_denied():
    gpu, br = parse_lspci(NON_ROOT)
    assert gpu.kind == "gpu" and gpu.bdf == "0000:17:00.0" and gpu.caps_access_denied
    assert br.kind == "bridge" and br.caps_access_denied and br.acs_ctl is None and br.acs_redirect is None


def test_normalize_bdf():
    assert normalize_bdf("00000000:17:00.0") == "0000:17:00.0"
    assert normalize_bdf("17:00.0") == "0000:17:00.0"
    assert normalize_bdf("0000:AB:00.1") == "0000:ab:00.1"
    with pytest.raises(ValueError):
        normalize_bdf("nonsense")


@pytest.mark.parametrize("text", ["", "hello", "GPU0\tGPU1\n", "LnkSta: nothing here\n", "ACSCtl: \n"])
def test_garbage(text):
    with pytest.raises(ParseError):
        parse_lspci(text)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=300))
def test_fuzz_only_parse_error(text):
    try:
        devs = parse_lspci(text)
    except ParseError:
        return
    assert devs
