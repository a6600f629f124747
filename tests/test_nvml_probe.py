"""NVML probe: assembling the worker's stream (real H200 captures), crash isolation, no-driver hosts."""
from __future__ import annotations

import os

import pytest
from conftest import H200

from gpudoctor.probes import nvml as nvml_probe
from gpudoctor.probes.nvml import assemble, sysfs_pci_path
from gpudoctor.probes.runner import ProbeFailed, ProbeOptions


def lines(name):
    return (H200 / name).read_text().splitlines()


def test_assemble_real_idle_stream():
    facts, last, done = assemble(lines("nvml-worker-idle.jsonl"))
    assert done and facts.available
    assert facts.driver_version == "580.159.04" and facts.cuda_driver_version == "13.0"
    g = facts.gpus[0]
    assert g.name == "NVIDIA H200" and g.compute_capability == "9.0"
    assert g.temperature_slowdown_c == 89 and g.temperature_shutdown_c == 95
    assert g.power_limit_w == 700.0 and g.power_default_limit_w == 700.0
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max) == (5, 5, 16, 16)
    assert g.clock_event_reasons == ["GpuIdle"] and g.clock_event_reasons_mask == 1
    assert "numa_node" in g.unsupported and g.numa_node is None
    assert g.nvlinks == [] and g.processes == []


def test_assemble_real_busy_stream_has_sw_power_cap():
    facts, _, _ = assemble(lines("nvml-worker-busy.jsonl"))
    g = facts.gpus[0]
    assert g.clock_event_reasons == ["SwPowerCap"] and g.utilization_gpu_pct > 90
    assert g.power_draw_w > 600


def test_truncated_stream_keeps_partial_facts_and_names_last_call():
    ls = lines("nvml-worker-idle.jsonl")
    cut = next(i for i, line in enumerate(ls) if "RemappedRows" in line)
    facts, last, done = assemble(ls[: cut + 1] + ["garbage {", ""])
    assert not done and last.endswith("nvmlDeviceGetRemappedRows")
    assert facts.gpus[0].temperature_c is not None and facts.gpus[0].remapped_rows_pending is None


def test_worker_segfault_is_a_probe_error_with_partial_facts(monkeypatch):
    monkeypatch.setenv("GPUDOCTOR_NVML_WORKER_CRASH", "1")
    with pytest.raises(ProbeFailed) as exc:
        nvml_probe.probe_nvml(ProbeOptions(nvml_timeout_s=20))
    assert exc.value.kind == "crash" and "SIGSEGV" in str(exc.value) and "injected" in str(exc.value)
    assert exc.value.partial is not None and not exc.value.partial.available


def test_fake_pynvml_init_failure_is_a_fact_not_an_error(tmp_path, monkeypatch):
    (tmp_path / "pynvml.py").write_text(
        "class NVMLError(Exception):\n    value = 9\n"
        "def nvmlInit():\n    raise NVMLError('Driver Not Loaded')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    facts = nvml_probe.probe_nvml(ProbeOptions(nvml_timeout_s=20))
    assert not facts.available and "Driver Not Loaded" in facts.error


def test_sysfs_path_from_nvml_bus_id():
    assert sysfs_pci_path("00000000:00:06.0") == "/sys/bus/pci/devices/0000:00:06.0"
    assert sysfs_pci_path("00000000:1B:00.0") == "/sys/bus/pci/devices/0000:1b:00.0"
