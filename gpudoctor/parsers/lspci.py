"""``lspci -vvv`` text -> PciFacts (link capability/status and ACS flags per PCI function).

Pure API for every user of lspci facts (``gpudoctor check`` here; topology rules and live probes
can call the same function): :func:`parse_lspci` (text -> PciFacts), :func:`acs_redirecting`
(is P2P redirected by this function's ACS control?), :func:`gen_of` (GT/s -> PCIe generation).

Accepts whole ``lspci -vvv`` output, excerpts, and ``grep ACSCtl`` / ``grep LnkSta`` style output
without device headers: each header-less ACSCtl line is then one function of unknown address (a
grep of N ports gives N entries). Indentation (tabs, spaces, markdown's four spaces) is ignored.
Sources: pciutils lspci(8) output format; PCIe Base Spec ACS capability (SrcValid, TransBlk,
ReqRedir, CmpltRedir, UpstreamFwd, EgressCtrl, DirectTrans); NCCL troubleshooting guide
("sudo lspci -vvv | grep ACSCtl"), https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html
"""
from __future__ import annotations

import re
from typing import Optional

from gpudoctor.facts.model import PciDevice, PciFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean

_DEV = re.compile(r"^((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.+?)\s*$")
_FLAGS = re.compile(r"([A-Za-z][A-Za-z0-9]*)([+-])")
_LNK = re.compile(r"^(LnkCap|LnkSta):\s*(.*)$")
_SPEED = re.compile(r"Speed\s+([0-9.]+)\s*GT/s(\s*\((ok|downgraded)\))?", re.IGNORECASE)
_WIDTH = re.compile(r"Width\s+x(\d+)(\s*\((ok|downgraded)\))?", re.IGNORECASE)
# GT/s per lane -> PCIe generation (PCI-SIG: 2.5, 5, 8, 16, 32, 64 GT/s = Gen1..Gen6)
GEN_BY_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
ACS_REDIRECT_FLAGS = ("ReqRedir", "CmpltRedir")


def gen_of(speed_gts: Optional[float]) -> Optional[int]:
    """PCIe generation of a link speed in GT/s (2.5 -> 1 ... 64 -> 6); None when unknown."""
    return GEN_BY_SPEED.get(speed_gts) if speed_gts is not None else None


def acs_redirecting(dev: PciDevice) -> bool:
    """True when ACSCtl redirects peer-to-peer requests or completions upstream (ReqRedir+ or CmpltRedir+).

    SrcValid+ alone does not redirect P2P (it only validates requester IDs).
    """
    return any(dev.acs_ctl.get(f) for f in ACS_REDIRECT_FLAGS)


def _flags(text: str) -> dict[str, bool]:
    return {name: sign == "+" for name, sign in _FLAGS.findall(text)}


def parse_lspci(text: str) -> PciFacts:
    """Parse ``lspci -vvv`` (or a grep of it). Raises ParseError when no device header, LnkCap/LnkSta
    or ACSCap/ACSCtl line is present."""
    devices: list[PciDevice] = []
    cur: Optional[PciDevice] = None
    seen_any = False
    for raw in clean(text).split("\n"):
        line = raw.strip()
        if not line:
            continue
        m = _DEV.match(line)
        if m and not raw[:1].isspace():
            cur = PciDevice(bdf=m.group(1) if m.group(1).count(":") == 2 else "0000:" + m.group(1),
                            description=m.group(2))
            devices.append(cur)
            seen_any = True
            continue
        key, _, rest = line.partition(":")
        key = key.strip()
        if key in ("ACSCap", "ACSCtl"):
            seen_any = True
            if cur is None or (key in ("ACSCtl",) and cur.acs_ctl) or (key == "ACSCap" and cur.acs_cap):
                cur = PciDevice()  # grep output: a new function of unknown address
                devices.append(cur)
            if key == "ACSCap":
                cur.acs_cap = _flags(rest)
            else:
                cur.acs_ctl = _flags(rest)
            continue
        lm = _LNK.match(line)
        if lm:
            seen_any = True
            if cur is None or (lm.group(1) == "LnkCap" and cur.link_cap_speed_gts is not None) or \
                    (lm.group(1) == "LnkSta" and cur.link_sta_speed_gts is not None):
                cur = PciDevice()
                devices.append(cur)
            sp, wd = _SPEED.search(lm.group(2)), _WIDTH.search(lm.group(2))
            if lm.group(1) == "LnkCap":
                if sp:
                    cur.link_cap_speed_gts = float(sp.group(1))
                if wd:
                    cur.link_cap_width = int(wd.group(1))
            else:
                if sp:
                    cur.link_sta_speed_gts = float(sp.group(1))
                    if sp.group(3):
                        cur.speed_downgraded = sp.group(3).lower() == "downgraded"
                if wd:
                    cur.link_sta_width = int(wd.group(1))
                    if wd.group(3):
                        cur.width_downgraded = wd.group(3).lower() == "downgraded"
    if not seen_any:
        raise ParseError("no lspci device header, LnkCap/LnkSta or ACSCtl line")
    return PciFacts(devices=devices)
