"""The one registry of rule families: adding a family (or a module to one) is one row here.

Each row: the id prefix, the report area its rules belong to, the title of its docs page (docs/rules/<ID>.md), and
the modules of ``gpudoctor.rules`` that define its rules. :mod:`gpudoctor.rules` imports the modules in this
order and orders the registry by (family row, rule id): the order of the JSON report's outcomes and of the docs.
"""
from __future__ import annotations

from typing import NamedTuple


class Family(NamedTuple):
    prefix: str
    area: str
    title: str
    modules: tuple[str, ...]


#: the terminal report's sections, in display order (flutter-doctor style: one section per area)
AREAS = ["Driver & NVML", "PyTorch", "Compatibility", "GPU health", "PCIe", "Topology", "Host", "NCCL & environment",
         "Confirmation runs", "Logs & errors", "Cluster", "Training script"]
# "Training script": `scan --script` (gpudoctor.lint keeps its LNT rules in a registry of its own)

FAMILIES: tuple[Family, ...] = (
    Family("CLU", "Cluster", "Cluster", ("cluster",)),  # scope="cluster": run by `gpudoctor cluster` only
    Family("CMP", "Compatibility", "Compatibility", ("compat",)),
    Family("CNF", "Confirmation runs", "Confirmation runs", ("confirmation",)),
    Family("DRV", "Driver & NVML", "Driver & NVML", ("driver",)),
    Family("GPU", "GPU health", "GPU health", ("gpu_health",)),
    Family("HST", "Host", "Host", ("host",)),
    Family("SIG", "Logs & errors", "Logs & errors: known error signatures", ("logs",)),
    Family("LOG", "Logs & errors", "Logs & errors: log facts", ("logs", "launch")),
    Family("NCL", "NCCL & environment", "NCCL & environment", ("nccl_env", "env_values")),
    Family("PCI", "PCIe", "PCIe", ("pcie",)),
    Family("PRF", "Confirmation runs", "Performance (self-test, SKU table, baseline, siblings)", ("performance",)),
    Family("TOP", "Topology", "Topology", ("topology_nvlink", "topology_pcie", "topology_rdma")),
    Family("TRC", "PyTorch", "PyTorch", ("torch_rules",)),
)

BY_PREFIX = {f.prefix: f for f in FAMILIES}


def modules() -> list[str]:
    """Every rule module, once, in family order."""
    out: list[str] = []
    for f in FAMILIES:
        out += [m for m in f.modules if m not in out]
    return out
