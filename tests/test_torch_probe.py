"""Torch probe: runs in the target interpreter; missing, crashing, hanging or silent interpreters are handled."""
from __future__ import annotations

import stat
import sys

import pytest
from conftest import H200

from gpudoctor.facts.model import TorchFacts
from gpudoctor.probes.runner import ProbeFailed, ProbeOptions
from gpudoctor.probes.torch_probe import choose_interpreter, parse_output, probe_torch


def fake_python(tmp_path, body: str) -> str:
    path = tmp_path / "fakepython"
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_parse_real_h200_output():
    data = parse_output((H200 / "torch-probe.txt").read_text())
    t = TorchFacts.model_validate(data)
    assert t.version == "2.11.0+cu130" and t.cuda == "13.0" and t.nccl_version == "2.28.9"
    assert "sm_90" in t.arch_list and t.devices[0].capability == "9.0"


def test_interpreter_without_torch(tmp_path):
    # -S: no site-packages, so torch cannot be imported
    py = tmp_path / "nosite"
    py.write_text(
        f"#!{sys.executable} -S\nimport runpy, sys\nsys.argv = sys.argv[1:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    py.chmod(0o755)
    t = probe_torch(ProbeOptions(python=str(py), torch_timeout_s=30))
    assert t.installed is False and t.version is None


def test_missing_interpreter():
    with pytest.raises(ProbeFailed) as exc:
        choose_interpreter("/nonexistent/python9")
    assert exc.value.kind == "missing"


@pytest.mark.parametrize("body,kind", [
    ("import os; os.kill(os.getpid(), 11)", "crash"),
    ("import time; time.sleep(60)", "timeout"),
    ("print('hello, not json')", "error"),
])
def test_broken_interpreters_become_probe_errors(tmp_path, body, kind):
    py = fake_python(tmp_path, body)
    with pytest.raises(ProbeFailed) as exc:
        probe_torch(ProbeOptions(python=py, torch_timeout_s=2))
    assert exc.value.kind == kind
    assert exc.value.partial is None   # unknown: never reported as "torch not installed"


def test_torchvision_ops_are_loaded_only_for_pairs_the_table_cannot_vouch_for():
    from gpudoctor.probes.torch_probe import _pair_unknown

    assert _pair_unknown({"version": "2.11.0+cu130", "torchvision_version": "0.26.0+cu130"}) is False
    assert _pair_unknown({"version": "2.11.0+cu130", "torchvision_version": "0.20.0+cu130"}) is False  # known bad
    assert _pair_unknown({"version": "2.99.0.dev20270101+cu140", "torchvision_version": "0.99.0"}) is True
