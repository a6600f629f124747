"""Parser for `lspci -vvv` (whole outputs, one device, or grep excerpts such as `lspci -vvv | grep ACSCtl`).

What it reads per PCI function: the BDF and description line, whether it is a bridge
(class "PCI bridge", a ``Bus: primary=`` line or an Express Root/Upstream/Downstream
Port), ``LnkCap`` / ``LnkSta`` speed (GT/s per lane) and width (lanes) with lspci's
``(downgraded)`` / ``(ok)`` markers, ``ACSCap`` / ``ACSCtl`` flags, ``Capabilities:
<access denied>`` (lspci without root cannot read extended capabilities, so ACS is
unknown, never "off"), and the kernel driver.

Lines that come before any device header (a grep excerpt) belong to anonymous devices
(``bdf=None``); a second ``ACSCtl`` / ``LnkSta`` in such a block starts the next one,
because a grep keeps one line per device.

Field meanings: pciutils lspci(8) and the PCIe base spec's ACS capability (7.7.8):
ReqRedir/CmpltRedir set = peer-to-peer requests/completions are redirected up to the root
complex (NCCL troubleshooting guide: "SrcValid+ ... ACS might be enabled"; redirect is
what breaks or slows GPU P2P).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from gpudoctor.facts.topology import GEN_SPEED_GTS, speed_to_gen
from gpudoctor.parsers.topo import ParseError, strip_ansi

__all__ = ["ParseError", "PciDevice", "parse_lspci", "normalize_bdf", "GEN_SPEED_GTS", "speed_to_gen"]


_HEADER = re.compile(r"^(?:(?P<dom>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\."
                     r"(?P<fn>[0-7])\s+(?P<cls>[^:]+?):\s*(?P<desc>.*)$")
_FIELD = re.compile(r"^\s*(LnkCap|LnkSta|ACSCap|ACSCtl|Kernel driver in use|Bus|Capabilities)\s*:\s*(.*)$")
_SPEED = re.compile(r"Speed\s+(?P<v>[\d.]+)\s*GT/s(?:\s*\((?P<m>[^)]*)\))?", re.IGNORECASE)
_WIDTH = re.compile(r"Width\s+x(?P<v>\d+)(?:\s*\((?P<m>[^)]*)\))?", re.IGNORECASE)
_FLAG = re.compile(r"([A-Za-z][A-Za-z0-9]*)([+-])")
_EXPRESS = re.compile(
    r"Express\s*\(v\d\)\s+(Root Port|Upstream Port|Downstream Port|Endpoint|Legacy Endpoint|"
    r"Root Complex Integrated Endpoint|PCI-Express to PCI/PCI-X Bridge|PCI/PCI-X to PCI-Express Bridge)"
)


def normalize_bdf(text: str) -> str:
    """'17:00.0' -> '0000:17:00.0'; NVML's '00000000:17:00.0' -> '0000:17:00.0'; lower case."""
    t = text.strip().lower()
    parts = t.split(":")
    if len(parts) == 2:
        return "0000:" + t
    if len(parts) == 3:
        return parts[0][-4:].zfill(4) + ":" + parts[1] + ":" + parts[2]
    raise ValueError(f"not a PCI address: {text!r}")


@dataclass
class PciDevice:
    """One PCI function from `lspci -vvv` (speeds in GT/s per lane, widths in lanes)."""

    bdf: str | None
    class_name: str | None = None
    name: str | None = None
    is_bridge: bool = False
    port_type: str | None = None
    lnkcap_speed_gts: float | None = None
    lnkcap_width: int | None = None
    lnksta_speed_gts: float | None = None
    lnksta_width: int | None = None
    speed_downgraded: bool | None = None
    width_downgraded: bool | None = None
    acs_cap: dict[str, bool] | None = None
    acs_ctl: dict[str, bool] | None = None
    caps_access_denied: bool = False
    driver: str | None = None
    line: int = 0
    _keys: set = field(default_factory=set, repr=False)
    _sta_marks: tuple = field(default=(None, None), repr=False)

    @property
    def downgraded(self) -> bool | None:
        """True when speed or width is below the capability (lspci's marker, else the numbers)."""
        flags = [f for f in (self.speed_downgraded, self.width_downgraded) if f is not None]
        return any(flags) if flags else None

    @property
    def acs_redirect(self) -> bool | None:
        """ACS redirects P2P (ReqRedir+ or CmpltRedir+); None when ACSCtl was not seen."""
        if self.acs_ctl is None:
            return None
        return bool(self.acs_ctl.get("ReqRedir") or self.acs_ctl.get("CmpltRedir"))

    @property
    def src_valid(self) -> bool | None:
        return None if self.acs_ctl is None else bool(self.acs_ctl.get("SrcValid"))

    @property
    def kind(self) -> Literal["gpu", "nic", "bridge", "other"]:
        c = (self.class_name or "").lower()
        if self.is_bridge:
            return "bridge"
        if c in ("vga compatible controller", "3d controller") and "nvidia" in (self.name or "").lower():
            return "gpu"
        if c in ("infiniband controller", "ethernet controller", "network controller"):
            return "nic"
        return "other"


def _flags(text: str) -> dict[str, bool]:
    return {name: sign == "+" for name, sign in _FLAG.findall(text)}


def _link(text: str, lineno: int) -> tuple[float | None, str | None, int | None, str | None]:
    sp, wd = _SPEED.search(text), _WIDTH.search(text)
    if sp is None and wd is None and "unknown" not in text.lower():
        raise ParseError(f"line {lineno}: link line without Speed or Width: {text.strip()[:80]!r}")
    return (float(sp.group("v")) if sp else None, sp.group("m") if sp else None,
            int(wd.group("v")) if wd else None, wd.group("m") if wd else None)


def _marker(mark: str | None, cur, cap) -> bool | None:
    if mark:
        m = mark.strip().lower()
        if m == "downgraded":
            return True
        if m == "ok":
            return False
    if cur is not None and cap is not None:
        return cur < cap
    return None


def parse_lspci(text: str) -> list[PciDevice]:
    """Parse `lspci -vvv` text (or an excerpt) into one PciDevice per PCI function, in order.

    Raises ParseError when the text holds no device header and none of the fields this
    parser reads (garbage, or output of another command), or when a LnkCap/LnkSta line has
    neither speed nor width.
    """
    if not isinstance(text, str):
        raise ParseError("input is not text")
    devices: list[PciDevice] = []
    cur: PciDevice | None = None
    for n, raw in enumerate(strip_ansi(text).replace("\r", "").split("\n"), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        h = _HEADER.match(line)
        if h and not line[0].isspace():
            dom = (h.group("dom") or "0000")[-4:].zfill(4)
            cls = re.sub(r"\s*\[[0-9a-fA-F]{4}\]$", "", h.group("cls").strip())
            cur = PciDevice(bdf=f"{dom}:{h.group('bus')}:{h.group('dev')}.{h.group('fn')}".lower(),
                            class_name=cls, name=h.group("desc").strip(), line=n,
                            is_bridge="bridge" in cls.lower() and "host bridge" not in cls.lower())
            devices.append(cur)
            continue
        f = _FIELD.match(line)
        if not f:
            continue
        key, val = f.group(1), f.group(2)
        if key in ("Bus", "Capabilities", "Kernel driver in use") and cur is None:
            cur = PciDevice(bdf=None, line=n)
            devices.append(cur)
        if cur is None or (cur.bdf is None and key in cur._keys and key not in ("Capabilities",)):
            cur = PciDevice(bdf=None, line=n)  # grep excerpt: one line per device
            devices.append(cur)
        cur._keys.add(key)
        if key == "Bus":
            if "primary=" in val:
                cur.is_bridge = True
        elif key == "Capabilities":
            if "access denied" in val.lower():
                cur.caps_access_denied = True
            e = _EXPRESS.search(val)
            if e:
                cur.port_type = e.group(1)
                if e.group(1) in ("Root Port", "Upstream Port", "Downstream Port") or "Bridge" in e.group(1):
                    cur.is_bridge = True
        elif key == "Kernel driver in use":
            cur.driver = val.strip() or None
            if cur.driver == "pcieport":  # the kernel's PCIe port driver binds only to bridges' ports
                cur.is_bridge = True
        elif key == "LnkCap":
            s, _, w, _ = _link(val, n)
            cur.lnkcap_speed_gts, cur.lnkcap_width = s, w
        elif key == "LnkSta":
            s, sm, w, wm = _link(val, n)
            cur.lnksta_speed_gts, cur.lnksta_width = s, w
            cur._sta_marks = (sm, wm)
        elif key in ("ACSCap", "ACSCtl"):
            flags = _flags(val)
            if not flags:
                raise ParseError(f"line {n}: {key} without flags: {val.strip()[:80]!r}")
            setattr(cur, "acs_cap" if key == "ACSCap" else "acs_ctl", flags)
    if not devices:
        raise ParseError("no PCI device header (e.g. '17:00.0 3D controller: ...') and no LnkCap/LnkSta/ACSCtl "
                         "line: not `lspci -vvv` output")
    for d in devices:
        sm, wm = d._sta_marks
        if d.lnksta_speed_gts is not None or d.lnksta_width is not None:
            d.speed_downgraded = _marker(sm, d.lnksta_speed_gts, d.lnkcap_speed_gts)
            d.width_downgraded = _marker(wm, d.lnksta_width, d.lnkcap_width)
    return devices
