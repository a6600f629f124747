"""`ibstat` and `ibv_devinfo [-v]` output -> the RDMA ports of TopologyFacts (rules TOP008, TOP009, NCL009).

Both print one block per HCA and, inside it, one block per port:

* ``ibstat`` (infiniband-diags): ``CA 'mlx5_0'``, ``CA type: MT4123``, then ``Port 1:`` with ``State: Active``,
  ``Physical state: LinkUp``, ``Rate: 200`` (Gb/s) and ``Link layer: InfiniBand``;
* ``ibv_devinfo`` (rdma-core): ``hca_id: mlx5_0``, ``vendor_part_id: 4123``, then ``port: 1`` with
  ``state: PORT_ACTIVE (4)``, ``link_layer: Ethernet``; with ``-v`` also ``phys_state: LINK_UP (5)``,
  ``active_width: 4X (2)`` and ``active_speed: 50.0 Gbps (64)`` (the rate is width x speed).

The states are written as the sysfs probe writes them (``ACTIVE``, ``DOWN``, ``INIT``, ``ARMED``; ``LinkUp``,
``Polling``, ``Disabled``), so the rules read either source the same way.
"""
from __future__ import annotations

import re

from gpudoctor.facts.topo_model import IbPort

_IBSTAT_CA = re.compile(r"^CA '([^'\n]+)'", re.M)
_DEVINFO_CA = re.compile(r"^hca_id:\s*(\S+)", re.M)
_KEY = re.compile(r"^[ \t]*([A-Za-z_][A-Za-z_ ]*?)[ \t]*:[ \t]*(.*?)[ \t]*$")
_PORT_IBSTAT = re.compile(r"^[ \t]*Port (\d+):[ \t]*$")
_STATE = {"active": "ACTIVE", "port_active": "ACTIVE", "down": "DOWN", "port_down": "DOWN", "initializing": "INIT",
          "init": "INIT", "port_init": "INIT", "armed": "ARMED", "port_armed": "ARMED",
          "port_active_defer": "ACTIVE_DEFER"}
_PHYS = {"linkup": "LinkUp", "link_up": "LinkUp", "polling": "Polling", "disabled": "Disabled", "sleep": "Sleep",
         "portconfigurationtraining": "PortConfigurationTraining", "port_configuration_training":
         "PortConfigurationTraining", "linkerrorrecovery": "LinkErrorRecovery", "link_error_recovery":
         "LinkErrorRecovery", "phytest": "PhyTest"}
_WIDTH = re.compile(r"(\d+)X")
_SPEED = re.compile(r"([\d.]+)\s*Gbps")


def _word(value: str) -> str:
    """'PORT_ACTIVE (4)' -> 'port_active'; 'Active' -> 'active'."""
    return value.split("(")[0].strip().lower()


def parse_ib_ports(text: str) -> list[IbPort]:
    """The ports of every HCA in ``text`` (ibstat or ibv_devinfo, several blocks or both tools concatenated), in
    order; [] when none is complete enough to name a device and a port."""
    ports: list[IbPort] = []
    device: str | None = None
    hca_type: str | None = None
    cur: IbPort | None = None
    width: int | None = None
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        ca = _IBSTAT_CA.match(line) or _DEVINFO_CA.match(line)
        if ca:
            device, hca_type, cur = ca.group(1), None, None
            continue
        if device is None:
            continue
        p = _PORT_IBSTAT.match(line)
        kv = _KEY.match(line) if p is None else None
        key = kv.group(1).strip().lower() if kv else ""
        value = kv.group(2) if kv else ""
        if p or key == "port":
            num = p.group(1) if p else value.split()[0] if value.split() else ""
            if num.isdigit():
                cur = IbPort(device=device, port=int(num), hca_type=hca_type)
                ports.append(cur)
                width = None
            continue
        if key == "ca type" and value:
            hca_type = value
        elif key == "vendor_part_id" and value.isdigit():
            hca_type = f"MT{value}"
        if cur is None:
            continue
        if key == "state":
            cur.state = _STATE.get(_word(value), _word(value).upper() or None)
        elif key in ("physical state", "phys_state"):
            cur.phys_state = _PHYS.get(_word(value).replace(" ", ""), value.split("(")[0].strip() or None)
        elif key == "rate":
            num_m = re.match(r"[\d.]+", value)
            if num_m:
                cur.rate_gbps, cur.rate_text = float(num_m.group(0)), f"{value} Gb/sec"
        elif key in ("link layer", "link_layer"):
            cur.link_layer = value or None
        elif key == "active_width":
            w = _WIDTH.search(value)
            width = int(w.group(1)) if w else None
        elif key == "active_speed":
            s = _SPEED.search(value)
            if s and width and cur.rate_gbps is None:
                cur.rate_gbps = float(s.group(1)) * width
                cur.rate_text = f"{cur.rate_gbps:g} Gb/sec ({width}X {s.group(1)} Gbps)"
    return ports
