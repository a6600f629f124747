"""GPU health rules (family GPU): thermals, clocks, power, memory errors, modes, other processes."""
from __future__ import annotations

from gpudoctor.compat import data
from gpudoctor.facts.clock_reasons import CLOCK_EVENT_REASONS
from gpudoctor.rules.engine import rule

NVML_API = "https://docs.nvidia.com/deploy/nvml-api/"
MIB = 1024 * 1024

FAULT_REASONS = {r.nvml: r.meaning for r in CLOCK_EVENT_REASONS if r.severity == "error"}
WARN_REASONS = {r.nvml: r.meaning for r in CLOCK_EVENT_REASONS if r.severity == "warning"}


@rule(
    "GPU001",
    "GPU health",
    "warning",
    "GPU temperature near its slowdown threshold",
    ok="temperatures below slowdown thresholds",
    why="Past its own slowdown threshold a GPU lowers its clocks; one hot GPU slows every DDP step, because "
    "all ranks wait for the slowest. The threshold differs per model (NVML), so a fixed '85 °C' is wrong.",
    fix="Check airflow, fan/chassis cooling and inlet temperature; reseat or service the GPU if it stays hot at idle.",
    sources=[NVML_API + "group__nvmlDeviceQueries.html", "checklist H18"],
)
def temperature(ctx):
    """Compares each GPU's temperature with its NVML slowdown threshold (minus a margin)."""
    margin = data.threshold("gpu.temperature", "margin_c")
    for g in ctx.gpus_known("temperature_c", "temperature_slowdown_c"):
        if g.temperature_c >= g.temperature_slowdown_c - margin:
            sev = "error" if g.temperature_c >= g.temperature_slowdown_c else "warning"
            yield ctx.finding([f"GPU {g.index}: {g.temperature_c} °C; slowdown at {g.temperature_slowdown_c} °C, "
                               f"shutdown at {g.temperature_shutdown_c} °C"],
                              severity=sev, subject=f"GPU {g.index}",
                              data={"temperature_c": g.temperature_c, "slowdown_c": g.temperature_slowdown_c})


@rule("GPU002", "GPU health", "error", "Clocks held down by a hardware or thermal event",
      ok='no hardware or thermal clock slowdown',
      why="NVML's clock event reasons say why clocks are below maximum. HW Slowdown, HW Thermal Slowdown and HW "
          "Power Brake are faults (cooling, power delivery); SW Thermal Slowdown means the GPU runs at its thermal "
          "limit. SW Power Cap at full load and GPU Idle are normal and not reported.",
      fix="Check cooling and power delivery (PSU, cables, BMC power-brake events); run `dcgmi diag -r 3` and contact "
          "the vendor if a HW reason persists at low load.",
      sources=[NVML_API + "group__nvmlClocksEventReasons.html",
               "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html", "checklist H18"])
def clock_events(ctx):
    """Decodes each GPU's active clock event reasons; HW ones are errors, SW thermal a warning."""
    for g in ctx.gpus_known("clock_event_reasons_mask"):
        active = set(g.clock_event_reasons)
        hw = [FAULT_REASONS[r] for r in FAULT_REASONS if r in active]
        sw = [WARN_REASONS[r] for r in WARN_REASONS if r in active]
        ev = [
            f"GPU {g.index}: clock event reasons 0x{g.clock_event_reasons_mask:x} = "
            f"{', '.join(sorted(active)) or 'none'}"
        ]
        if hw:
            yield ctx.finding(ev + hw, subject=f"GPU {g.index}", data={"mask": g.clock_event_reasons_mask})
        elif sw:
            yield ctx.finding(ev + sw, severity="warning", subject=f"GPU {g.index}",
                              title="GPU at its software thermal limit", data={"mask": g.clock_event_reasons_mask})


@rule(
    "GPU003",
    "GPU health",
    "warning",
    "Power limit set below the default",
    ok="power limits at default",
    why="A power limit below the board default caps clocks under load (SW Power Cap) and makes this GPU the "
    "slowest rank.",
    fix="Restore the default limit: `sudo nvidia-smi -i <gpu> -pl <default W>` "
    "(or remove the site policy that lowers it).",
    sources=[NVML_API + "group__nvmlDeviceQueries.html", "checklist H19"],
)
def power_limit(ctx):
    """Compares the enforced power limit with the default power-management limit (W)."""
    frac = data.threshold("gpu.power_limit", "min_fraction_of_default")
    for g in ctx.gpus_known("power_limit_w", "power_default_limit_w"):
        if g.power_limit_w < g.power_default_limit_w * frac:
            yield ctx.finding([f"GPU {g.index}: enforced power limit {g.power_limit_w:.0f} W < default "
                               f"{g.power_default_limit_w:.0f} W"], subject=f"GPU {g.index}",
                              remedy=f"sudo nvidia-smi -i {g.index} -pl {g.power_default_limit_w:.0f}",
                              data={"limit_w": g.power_limit_w, "default_w": g.power_default_limit_w})


@rule("GPU004", "GPU health", "error", "Uncorrected ECC memory errors",
      ok='no uncorrected ECC errors',
      why="Uncorrectable (double-bit) ECC errors corrupt data and usually kill the job (XID 48/94/95). Volatile "
          "counts are since the last driver load; aggregate counts are lifetime.",
      fix="Drain the node, reset the GPU (`nvidia-smi -r`) or reboot; if errors recur, follow NVIDIA's XID/RMA "
          "workflow (row remapping failures and recurring uncorrectable errors mean service).",
      sources=["https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html",
               "https://docs.nvidia.com/deploy/xid-errors/index.html", "checklist H20"])
def ecc(ctx):
    """Reads volatile and aggregate uncorrected ECC counts per GPU (volatile > 0: error; aggregate only: warning)."""
    for g in ctx.gpus_known(
        "ecc_uncorrected_volatile", skip=lambda g: "ECC disabled" if g.ecc_mode_current is False else None
    ):
        vol, agg = g.ecc_uncorrected_volatile, g.ecc_uncorrected_aggregate or 0  # aggregate: history, when known
        if vol > 0:
            yield ctx.finding(
                [f"GPU {g.index}: {vol} uncorrected ECC errors since the driver loaded (aggregate {agg})"],
                subject=f"GPU {g.index}",
                data={"volatile": vol, "aggregate": agg},
            )
        elif agg > 0:
            yield ctx.finding(
                [f"GPU {g.index}: {agg} uncorrected ECC errors over the GPU's life, none since the driver loaded"],
                severity="warning",
                subject=f"GPU {g.index}",
                title="Uncorrected ECC errors in the GPU's history",
                data={"volatile": 0, "aggregate": agg},
                remedy="Watch the volatile counter; check the remapped rows (GPU005) "
                "and the kernel log for XID 48/63/64.",
            )


@rule(
    "GPU005",
    "GPU health",
    "error",
    "Row remapping failed or is pending",
    ok="no row-remapping failure or pending remap",
    why="On A100/H100-class GPUs, memory rows with errors are remapped at the next GPU reset. 'Pending' means a "
    "reset is needed to apply it; 'failure' means no spare rows were left and the GPU needs service.",
    fix="Pending: drain the node and reset the GPU (`nvidia-smi -r -i <gpu>`) or reboot. Failure: replace/RMA the GPU.",
    sources=[
        "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html",
        "https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html",
        "checklist H20",
    ],
)
def remapped_rows(ctx):
    """Reads NVML remapped rows: failure is an error, pending a warning."""
    for g in ctx.gpus_known("remapped_rows_pending"):
        if g.remapped_rows_failure:
            yield ctx.finding([f"GPU {g.index}: row remapping failure; {g.remapped_rows_uncorrectable} rows remapped "
                               f"for uncorrectable errors"], subject=f"GPU {g.index}", data={"failure": True})
        elif g.remapped_rows_pending:
            yield ctx.finding([f"GPU {g.index}: row remapping pending ({g.remapped_rows_uncorrectable} uncorrectable, "
                               f"{g.remapped_rows_correctable} correctable rows)"], severity="warning",
                              subject=f"GPU {g.index}", title="Row remapping pending: GPU reset needed",
                              data={"pending": True})


@rule(
    "GPU006",
    "GPU health",
    "error",
    "GPU compute mode blocks multi-process use",
    ok="compute mode allows multi-process use",
    why="'Prohibited' allows no CUDA context at all. 'Exclusive_Process' allows one process per GPU: DDP itself "
    "runs, but any second process touching the GPU (a stray torch.load, a profiler, a DataLoader worker "
    "that initialises CUDA, torch.compile workers) fails with 'all CUDA-capable devices are busy or unavailable'.",
    fix="sudo nvidia-smi -i <gpu> -c DEFAULT",
    sources=[
        "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#compute-modes",
        "checklist H20",
    ],
)
def compute_mode(ctx):
    """Flags compute mode Prohibited (error) and Exclusive_Process / Exclusive_Thread (warning)."""
    for g in ctx.gpus_known("compute_mode"):
        if g.compute_mode == "Prohibited":
            yield ctx.finding([f"GPU {g.index}: compute mode Prohibited"], subject=f"GPU {g.index}",
                              remedy=f"sudo nvidia-smi -i {g.index} -c DEFAULT")
        elif g.compute_mode in ("Exclusive_Process", "Exclusive_Thread"):
            yield ctx.finding([f"GPU {g.index}: compute mode {g.compute_mode}"], severity="warning",
                              subject=f"GPU {g.index}", title="GPU in exclusive compute mode",
                              remedy=f"sudo nvidia-smi -i {g.index} -c DEFAULT")


@rule("GPU007", "GPU health", "warning", "MIG mode enabled",
      ok='MIG disabled',
      why="With MIG enabled a process sees GPU instances, not whole GPUs; MIG instances support no GPU-to-GPU P2P "
          "(PCIe or NVLink) and a CUDA process can use only one MIG instance, so multi-GPU DDP over MIG slices is "
          "not what a training host should run. A pending mode differing from the current one needs a GPU reset.",
      fix="Disable MIG for training: `sudo nvidia-smi -i <gpu> -mig 0` then reset the GPU (or reboot).",
      sources=["https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html", "checklist H20"])
def mig(ctx):
    """Flags GPUs whose current (or pending) MIG mode is enabled."""
    for g in ctx.gpus_known("mig_mode_current"):
        if g.mig_mode_current:
            yield ctx.finding(
                [f"GPU {g.index}: MIG mode current=Enabled, pending={'Enabled' if g.mig_mode_pending else 'Disabled'}"],
                subject=f"GPU {g.index}",
                remedy=f"sudo nvidia-smi -i {g.index} -mig 0 && sudo nvidia-smi -i {g.index} -r",
            )
        elif g.mig_mode_pending:
            yield ctx.finding(
                [f"GPU {g.index}: MIG mode pending=Enabled (takes effect at the next GPU reset)"],
                severity="info",
                subject=f"GPU {g.index}",
                title="MIG mode will be enabled at the next reset",
            )


@rule("GPU008", "GPU health", "warning", "Other processes hold GPU memory",
      ok='no other process on the GPUs',
      why="A process already on the GPU takes memory and compute from the training job; a stray context on GPU 0 "
          "(e.g. torch.load without map_location, a notebook) is a classic cause of OOM on rank 0.",
      fix="Stop the listed processes (or move them to other GPUs) before training.",
      sources=[NVML_API + "group__nvmlDeviceQueries.html", "checklist H14"])
def other_processes(ctx):
    """Lists compute and graphics processes NVML reports on each GPU, with their memory (MiB)."""
    for g in ctx.gpus_with("processes"):
        if not g.processes:
            continue
        lines = []
        for p in g.processes:
            mem = f"{p.used_memory_bytes / MIB:.0f} MiB" if p.used_memory_bytes is not None else "memory n/a"
            lines.append(
                f"GPU {g.index}: pid {p.pid} ({p.name or 'name unknown: other PID namespace?'}), {p.kind}, {mem}"
            )
        yield ctx.finding(lines, subject=f"GPU {g.index}",
                          data={"processes": [p.model_dump() for p in g.processes]})


@rule("GPU009", "GPU health", "info", "Persistence mode off",
      ok='persistence mode on',
      why="Without persistence (nvidia-persistenced or persistence mode) the driver tears the GPU state down when "
          "the last client exits, so every job start pays the initialisation again and NVML readings may be stale.",
      fix="Run the nvidia-persistenced daemon (preferred over `nvidia-smi -pm 1`).",
      sources=["https://docs.nvidia.com/deploy/driver-persistence/index.html", "checklist H20"])
def persistence(ctx):
    """Flags GPUs with persistence mode off."""
    off = [g.index for g in ctx.gpus_known("persistence_mode") if g.persistence_mode is False]
    if off:
        yield ctx.finding([f"persistence mode off on GPU(s) {', '.join(map(str, off))}"], data={"gpus": off})
