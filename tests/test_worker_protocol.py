"""The NVML worker's wire protocol (gpudoctor/facts/protocol.py): one list of GPU fields, extra keys refused."""
from __future__ import annotations

import json

import pytest

from gpudoctor.facts.model import GpuFacts
from gpudoctor.facts.protocol import GPU_KEYS, ProtocolError
from gpudoctor.probes import nvml_worker
from gpudoctor.probes.nvml import assemble


def test_protocol_keys_are_the_models_fields():
    assert set(GPU_KEYS) == set(GpuFacts.model_fields) - {"unsupported", "errors"}


def _lines(*msgs):
    return [json.dumps(m) for m in ({"t": "sys", "k": "driver_version", "v": "580.1"}, *msgs, {"t": "done"})]


def test_parent_reads_a_known_field():
    facts, _, done = assemble(_lines({"t": "gpu", "i": 0, "k": "temperature_c", "v": 41}))
    assert done and facts.gpus[0].temperature_c == 41


def test_parent_refuses_a_misspelled_field():
    with pytest.raises(ProtocolError, match="temprature_c"):
        assemble(_lines({"t": "gpu", "i": 0, "k": "temprature_c", "v": 41}))


def test_worker_refuses_a_misspelled_field_before_sending_it():
    # the worker loads the same stdlib-only module by path (it runs outside the package)
    assert nvml_worker._PROTOCOL.check_gpu_key("temperature_c") == "temperature_c"
    with pytest.raises(ValueError, match="temprature_c"):
        nvml_worker._PROTOCOL.check_gpu_key("temprature_c")


def _run_worker(monkeypatch, **fake):
    import io
    from contextlib import redirect_stdout

    from nvml_fake import make

    monkeypatch.setitem(__import__("sys").modules, "pynvml", make(**fake))
    monkeypatch.setattr("sys.argv", ["nvml_worker"])
    buf = io.StringIO()
    with redirect_stdout(buf):
        nvml_worker.main()
    return buf.getvalue().splitlines()


def test_worker_table_fills_every_field_of_a_healthy_gpu(monkeypatch):
    facts, _, done = assemble(_run_worker(monkeypatch))
    assert done and facts.driver_version == "580.159.04" and facts.cuda_driver_version == "13.0"
    g = facts.gpus[1]
    assert not g.errors and not g.unsupported
    assert {k for k in GPU_KEYS if getattr(g, k) is None} == set()  # every row of the table reached its field
    assert (g.name, g.pci_bus_id, g.compute_capability) == ("NVIDIA H200", "00000000:19:00.0", "9.0")
    assert g.temperature_c == 37 and g.temperature_slowdown_c == 90 and g.temperature_shutdown_c == 95
    assert (g.power_draw_w, g.compute_mode, g.mig_mode_pending, g.remapped_rows_failure) == (75.1, "Exclusive_Process",
                                                                                            True, True)
    assert g.clock_event_reasons_mask == 5 and g.ecc_uncorrected_aggregate == 5 and g.numa_node == 0
    assert [(n.link, n.active, n.version) for n in g.nvlinks] == [(0, True, 4), (1, True, None), (2, True, 4),
                                                                  (3, False, 4)]
    assert facts.gpus[0].numa_node is None  # NVML's -1: no NUMA node


def test_worker_table_failures_and_fallbacks(monkeypatch):
    lines = _run_worker(monkeypatch, not_supported=("nvmlDeviceGetEccMode", "nvmlDeviceGetTemperature"),
                        broken=("nvmlDeviceGetMemoryInfo",),
                        missing=("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetPcieReplayCounter",
                                 "nvmlSystemGetCudaDriverVersion_v2"))
    facts, _, _ = assemble(lines)
    g = facts.gpus[0]
    assert {"ecc_mode", "temperature_c"} <= set(g.unsupported) and "memory" in g.errors
    # no ECC mode: its counters are not asked for; the older clock-reasons call and CUDA version call stand in
    assert not any("TotalEccErrors" in ln for ln in lines) and g.clock_event_reasons_mask == 8
    assert facts.cuda_driver_version == "12.8" and g.pcie_replay_counter is None and g.pcie_gen_max == 5
