"""TopologyFacts from pasted `nvidia-smi topo -m`, `lspci -vvv` and `ibstat` / `ibv_devinfo` text (for `check`)."""
from __future__ import annotations

from typing import Literal

from gpudoctor.facts.model import PcieDevice, TopologyFacts
from gpudoctor.facts.topo_model import IbPort
from gpudoctor.facts.topology import finish
from gpudoctor.parsers.lspci import parse_lspci
from gpudoctor.parsers.topo import parse_topo_matrix


def topology_from_text(topo_text: str | None = None, lspci_text: str | None = None,
                       ib_ports: list[IbPort] | None = None) -> TopologyFacts:
    """TopologyFacts from pasted text (for `gpudoctor check` on text dumps); ``ib_ports``: the RDMA ports of pasted
    ibstat / ibv_devinfo output (parsers/ibstat.py), which also make ``ib_present`` known.

    Raises gpudoctor.parsers.topo.ParseError when a given text cannot be parsed.
    """
    facts = TopologyFacts(source="pasted text: " + ", ".join(
        x for x, t in (("nvidia-smi topo -m", topo_text), ("lspci -vvv", lspci_text),
                       ("ibstat / ibv_devinfo", ib_ports)) if t))
    if ib_ports:
        facts.ib_ports = list(ib_ports)
        facts.ib_present = True
    if topo_text is not None:
        facts.matrix = parse_topo_matrix(topo_text)
    if lspci_text is not None:
        facts.lspci_available = True
        for n, p in enumerate(parse_lspci(lspci_text)):
            state: Literal["enabled", "disabled", "absent", "needs_root", "unknown"] = "unknown"
            if p.acs_ctl is not None:
                state = "enabled" if p.acs_redirect else "disabled"
            elif p.caps_access_denied:
                state = "needs_root"
            facts.pcie.append(PcieDevice(
                bdf=p.bdf or f"unnamed-{n + 1}", kind=p.kind if p.bdf else ("bridge" if p.is_bridge else "other"),
                name=p.name, link_speed_gts=p.lnksta_speed_gts, link_speed_max_gts=p.lnkcap_speed_gts,
                link_width=p.lnksta_width, link_width_max=p.lnkcap_width, downgraded=p.downgraded,
                acs_ctl=p.acs_ctl, acs_cap=p.acs_cap, acs_state=state, driver=p.driver, source="lspci -vvv"))
    return finish(facts)
