"""The clock event (throttle) reasons: one row per reason, read by the NVML worker, the nvidia-smi parsers and GPU002.

Standard library only: the NVML worker (run by path, pynvml and the stdlib only) loads this file by path.
Sources: NVML API reference, ``nvmlClocksEventReasons`` (bits); ``nvidia-smi -q`` labels under
"Clocks Event Reasons" (before driver 535 "Clocks Throttle Reasons"); ``nvidia-smi -q -x`` tags
``clocks_event_reason_*`` (before 535 ``clocks_throttle_reason_*``); ``nvidia-smi --help-query-gpu`` fields
``clocks_event_reasons.*`` (before 535 ``clocks_throttle_reasons.*``).
"""
from __future__ import annotations

from typing import NamedTuple


class ClockReason(NamedTuple):
    """One NVML clock event reason and its name in every input."""

    bit: int                  #: nvmlClocksEventReasons bit
    nvml: str                 #: the name gpudoctor stores (NVML's, without the nvmlClocksEventReason prefix)
    q_labels: tuple[str, ...]  #: `nvidia-smi -q` labels, lower case
    xml_tag: str              #: `-q -x` tag after ``clocks_event_reason_`` / ``clocks_throttle_reason_``
    csv_key: str | None       #: --query-gpu field after ``clocks_event_reasons.``; None: no such field
    severity: str | None      #: GPU002: "error" (a fault), "warning", None (normal operation)
    meaning: str | None = None  #: GPU002's words for a reason with a severity


CLOCK_EVENT_REASONS: tuple[ClockReason, ...] = (
    ClockReason(0x1, "GpuIdle", ("idle", "gpu idle"), "gpu_idle", "gpu_idle", None),
    ClockReason(
        0x2,
        "ApplicationsClocksSetting",
        ("applications clocks setting",),
        "applications_clocks_setting",
        "applications_clocks_setting",
        None,
    ),
    ClockReason(0x4, "SwPowerCap", ("sw power cap",), "sw_power_cap", "sw_power_cap", None),
    ClockReason(
        0x8,
        "HwSlowdown",
        ("hw slowdown",),
        "hw_slowdown",
        "hw_slowdown",
        "error",
        "hardware slowdown (HW Slowdown: thermal or power-brake assertion, e.g. an external power supply signal)",
    ),
    ClockReason(0x10, "SyncBoost", ("sync boost",), "sync_boost", "sync_boost", None),
    ClockReason(
        0x20,
        "SwThermalSlowdown",
        ("sw thermal slowdown",),
        "sw_thermal_slowdown",
        "sw_thermal_slowdown",
        "warning",
        "software thermal slowdown (driver keeps the GPU below its thermal limit)",
    ),
    ClockReason(
        0x40,
        "HwThermalSlowdown",
        ("hw thermal slowdown",),
        "hw_thermal_slowdown",
        "hw_thermal_slowdown",
        "error",
        "hardware thermal slowdown (the GPU is too hot)",
    ),
    ClockReason(
        0x80,
        "HwPowerBrakeSlowdown",
        ("hw power brake slowdown",),
        "hw_power_brake_slowdown",
        "hw_power_brake_slowdown",
        "error",
        "hardware power brake (external power-brake signal, e.g. from the PSU or BMC)",
    ),
    ClockReason(0x100, "DisplayClockSetting", ("display clock setting",), "display_clocks_setting", None, None),
)


def decode(mask: int) -> list[str]:
    """The NVML names of the reasons set in ``mask``, in bit order."""
    return [r.nvml for r in CLOCK_EVENT_REASONS if mask & r.bit]


BY_NVML = {r.nvml: r for r in CLOCK_EVENT_REASONS}
BY_Q_LABEL = {label: r for r in CLOCK_EVENT_REASONS for label in r.q_labels}
BY_XML_TAG = {f"{prefix}_{r.xml_tag}": r for r in CLOCK_EVENT_REASONS
              for prefix in ("clocks_event_reason", "clocks_throttle_reason")}
BY_CSV_KEY = {r.csv_key: r for r in CLOCK_EVENT_REASONS if r.csv_key}
