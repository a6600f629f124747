"""PCIe link rules (family PCI)."""
from __future__ import annotations

from gpudoctor.rules.engine import NotAssessed, rule

NVSMI_HELP = "nvidia-smi --help-query-gpu (pcie.link.gen.current: 'may be reduced when the GPU is not in use')"


def _busy(g) -> bool:
    return bool(g.utilization_gpu_pct) and "GpuIdle" not in g.clock_event_reasons


@rule("PCI001", "PCIe", "warning", "PCIe link narrower than its maximum width",
      ok='PCIe links at full width',
      why="A GPU negotiated at x8 instead of x16 has half the host<->GPU bandwidth (data loading, PCIe P2P, NCCL "
          "over PCIe). Causes: slot wired x8, a riser, a dirty or badly seated card, BIOS bifurcation.",
      fix="Reseat the card, move it to a x16 slot, check risers and the BIOS bifurcation setting; confirm with "
          "`nvidia-smi -q -d PCIE` and the pinned copy bandwidth of the confirmation run.",
      sources=["https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html", "checklist H8"])
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


@rule(
    "PCI002",
    "PCIe",
    "warning",
    "PCIe link generation below its maximum under load",
    ok="PCIe links at full generation",
    why="GPUs lower their PCIe generation when idle to save power, so an idle reading proves nothing. Below the "
    "maximum while the GPU is busy, the link really trained lower (Gen3 instead of Gen5 = a quarter of the "
    "bandwidth): BIOS forcing a generation, a riser or retimer, signal integrity.",
    fix="Set the slot's PCIe speed to Auto/maximum in the BIOS, remove risers, reseat; re-check under load.",
    sources=["https://forums.developer.nvidia.com/t/prevent-pcie-from-reducing-gen/72537", NVSMI_HELP, "checklist H8"],
)
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
