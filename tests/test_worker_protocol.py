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
