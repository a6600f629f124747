"""PCIe link rules (family PCI)."""
from __future__ import annotations

from gpudoctor.rules.engine import NotAssessed, rule


def _busy(g) -> bool:
    return bool(g.utilization_gpu_pct) and "GpuIdle" not in g.clock_event_reasons


@rule("PCI001")
def link_width(ctx):
    """Compares the current PCIe link width with the maximum (NVML)."""
    for g in ctx.gpus_known("pcie_width_current", "pcie_width_max"):
        if g.pcie_width_current < g.pcie_width_max:
            yield ctx.finding(
                [
                    f"GPU {g.index}{f' ({g.pci_bus_id})' if g.pci_bus_id else ''}: "
                    f"PCIe x{g.pcie_width_current}, max x{g.pcie_width_max}"
                ],
                subject=f"GPU {g.index}",
                data={"width": g.pcie_width_current, "width_max": g.pcie_width_max},
            )


@rule("PCI002")
def link_generation(ctx):
    """Flags current PCIe generation < max only while the GPU is busy; idle readings are not judged."""
    idle_low = []
    for g in ctx.gpus_known("pcie_gen_current", "pcie_gen_max"):
        if g.pcie_gen_current >= g.pcie_gen_max:
            continue
        if _busy(g):
            yield ctx.finding([f"GPU {g.index}: PCIe Gen{g.pcie_gen_current} while busy "
                               f"({g.utilization_gpu_pct}% utilisation), max Gen{g.pcie_gen_max}"],
                              subject=f"GPU {g.index}", data={"gen": g.pcie_gen_current, "gen_max": g.pcie_gen_max})
        else:
            idle_low.append(f"GPU {g.index} Gen{g.pcie_gen_current}/{g.pcie_gen_max}")
    if idle_low:
        raise NotAssessed(
            "idle GPUs below max generation (normal power saving; judged under load): " + ", ".join(idle_low)
        )
