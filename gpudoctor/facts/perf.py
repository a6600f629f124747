"""Facts of the GPU self-test and the fleet baseline (issue 16), and how clock-event reasons are read.

Units: TFLOP/s = 1e12 FLOP/s, GB/s = 1e9 B/s, MHz, W, °C, ms.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field

from gpudoctor.facts._base import _Model

#: NVML clock-event reasons that mean a fault when a GPU runs below its clocks (DCGM fails a run on them)
FAULT_REASONS = ("HwSlowdown", "SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown")
#: reasons that mean a setting (application clocks or display clocks), not a fault
SETTING_REASONS = ("ApplicationsClocksSetting", "DisplayClockSetting")
#: a reason counts as present during a run when at least this fraction of the samples shows it
REASON_MIN_FRACTION = 0.1
#: a GPU closer than this (°C) to NVML's slowdown threshold is called hot
HOT_MARGIN_C = 5.0


class OtherProcess(_Model):
    pid: int
    name: str | None = None
    used_mib: int | None = None


class GpuSamples(_Model):
    """NVML samples taken while a GPU ran the self-test's timed part."""

    n: int = 0
    sm_mhz_median: float | None = None
    sm_mhz_min: float | None = None
    max_sm_mhz: float | None = Field(None, description="the GPU's maximum SM clock (NVML), MHz")
    power_w_median: float | None = None
    power_limit_w: float | None = Field(None, description="enforced power limit, W")
    temp_c_max: float | None = None
    slowdown_temp_c: float | None = Field(None, description="NVML's slowdown temperature threshold, °C")
    util_median: float | None = Field(None, description="GPU utilization, %")
    reasons: dict[str, float] = Field(default_factory=dict,
                                      description="clock-event reason -> fraction of samples that showed it")
    others: list[OtherProcess] = Field(default_factory=list,
                                       description="other processes computing on this GPU during the run")


class SelfTestGpu(_Model):
    """One GPU's self-test figures (medians over timed groups)."""

    index: int = Field(description="torch device index")
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    capability: str | None = None
    gemm_dtype: str | None = Field(None, description="bfloat16, or float16 on GPUs without a bf16 tensor path")
    gemm_n: int | None = None
    gemm_tflops: float | None = Field(None, description="dense GEMM, median over timed groups, TFLOP/s")
    gemm_tflops_min: float | None = None
    gemm_groups: int = 0
    d2d_gbs: float | None = Field(None, description="device-to-device copy, bytes read + written, median, GB/s")
    d2d_groups: int = 0
    samples: GpuSamples | None = None
    error: str | None = None


class SelfTestFacts(_Model):
    source: str = "gpudoctor self-test: python -m gpudoctor.confirm.gpuload selftest in the target interpreter"
    status: Literal["ok", "failed", "error"]
    reason: str | None = None
    seconds: float | None = None
    gpus: list[SelfTestGpu] = Field(default_factory=list)


class BaselineModel(_Model):
    """Figures of one GPU model on a trusted node (medians over its GPUs)."""

    gemm_tflops: float | None = None
    d2d_gbs: float | None = None
    h2d_gbs: float | None = None
    d2h_gbs: float | None = None
    busbw_gbs: dict[str, float] = Field(default_factory=dict,
                                        description="world size -> best all-reduce busbw at >= 256 MiB, GB/s")
    ddp_step_ms: dict[str, float] = Field(default_factory=dict,
                                          description="'world x batch x seq precision' -> median step, ms")


class PerfBaseline(_Model):
    """A fleet baseline (`gpudoctor baseline save`): judges figures instead of the SKU table."""

    gpudoctor_baseline: int = 1
    host: str | None = None
    date: str | None = None
    path: str | None = Field(None, description="the file it was read from")
    models: dict[str, BaselineModel] = Field(default_factory=dict, description="GPU model name -> figures")


def ddp_key(world: int, batch: int, seq: int, precision: str) -> str:
    """Baseline key of a DDP step setting, e.g. '1x128x128 bf16'."""
    return f"{world}x{batch}x{seq} {precision}"


def present_reasons(s: GpuSamples | None) -> list[str]:
    """Reasons seen in at least REASON_MIN_FRACTION of the samples."""
    if s is None:
        return []
    return [r for r, f in s.reasons.items() if f >= REASON_MIN_FRACTION]


def explain(g: SelfTestGpu) -> tuple[str, str]:
    """Why a GPU's figure may be low, read from its samples: (kind, text).

    kind: 'contention' (another process on the GPU), 'fault' (HW slowdown, thermal, power brake), 'hot',
    'setting' (application clocks), 'clocks' (below max with no reason), 'power-cap' (normal at full load),
    'none' (nothing seen), 'unknown' (no samples).
    """
    s = g.samples
    if s is None or s.n == 0:
        return "unknown", "no NVML samples (pynvml missing in the target interpreter?): reason unknown"
    if s.others:
        procs = ", ".join(f"pid {p.pid}{f' {p.name}' if p.name else ''}"
                          f"{f' ({p.used_mib} MiB)' if p.used_mib is not None else ''}" for p in s.others[:4])
        return "contention", f"contention: another process had a compute context on this GPU during the test ({procs})"
    present = present_reasons(s)
    faults = [r for r in present if r in FAULT_REASONS]
    if faults:
        return "fault", "fault: " + ", ".join(f"{r} in {s.reasons[r]:.0%} of samples" for r in faults) + \
            (f", SM clock {s.sm_mhz_median:.0f} of {s.max_sm_mhz:.0f} MHz" if s.sm_mhz_median and s.max_sm_mhz else "")
    if s.temp_c_max is not None and s.slowdown_temp_c and s.temp_c_max >= s.slowdown_temp_c - HOT_MARGIN_C:
        return "hot", f"hot: {s.temp_c_max:.0f} °C, slowdown at {s.slowdown_temp_c:.0f} °C"
    settings = [r for r in present if r in SETTING_REASONS]
    if settings:
        return "setting", "clocks held by a setting: " + ", ".join(settings)
    if "SwPowerCap" in present:
        pw = (f" ({s.power_w_median:.0f} of {s.power_limit_w:.0f} W)"
              if s.power_w_median is not None and s.power_limit_w else "")
        return "power-cap", f"software power cap at full load{pw}: normal"
    if s.sm_mhz_median and s.max_sm_mhz and s.sm_mhz_median < 0.9 * s.max_sm_mhz:
        return "clocks", (f"SM clock {s.sm_mhz_median:.0f} of {s.max_sm_mhz:.0f} MHz with no clock-event reason "
                          "(locked clocks or a lowered limit?)")
    return "none", "no throttle reason and no other process seen"


def median2(vals: list[float]) -> float | None:
    return round(statistics.median(vals), 2) if vals else None


def summarize_samples(samples: Iterable[dict[str, Any]], static: dict[str, Any]) -> GpuSamples:
    """Median SM clock (MHz) and power (W), max temperature (°C), reason fractions, other processes."""
    ss = list(samples)
    reasons: dict[str, int] = {}
    others: dict[int, OtherProcess] = {}
    n_reasons = 0
    for s in ss:
        if s.get("reasons") is not None:
            n_reasons += 1
            for r in s["reasons"]:
                reasons[r] = reasons.get(r, 0) + 1
        for o in s.get("others") or []:
            if isinstance(o.get("pid"), int):
                others[o["pid"]] = OtherProcess(pid=o["pid"], name=o.get("name"), used_mib=o.get("used_mib"))

    def vals(key: str) -> list[float]:
        return [float(s[key]) for s in ss if isinstance(s.get(key), (int, float))]

    temps = vals("temp_c")
    sms = vals("sm_mhz")
    return GpuSamples(n=len(ss), sm_mhz_median=median2(sms), sm_mhz_min=min(sms) if sms else None,
                      max_sm_mhz=static.get("max_sm_mhz"), power_w_median=median2(vals("power_w")),
                      power_limit_w=static.get("power_limit_w"), temp_c_max=max(temps) if temps else None,
                      slowdown_temp_c=static.get("slowdown_temp_c"), util_median=median2(vals("util")),
                      reasons={r: round(c / n_reasons, 3) for r, c in sorted(reasons.items())} if n_reasons else {},
                      others=list(others.values()))
