"""Issue 15 item 11: nvidia-smi's whole output "No devices were found" / "NVIDIA-SMI has failed ..." / "Failed to
initialize NVML: ..." is a diagnosis (DRV001 with a cause-specific fix), not "unknown format"."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app

runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()


@pytest.mark.parametrize(("text", "title", "fix"), [
    ("No devices were found\n", "no GPU visible", "--gpus all"),
    ("$ nvidia-smi\nNo devices were found\n", "no GPU visible", "--gpus all"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.\n\n", "cannot talk to the NVIDIA driver", "driver for the running kernel"),
    ("Failed to initialize NVML: Driver/library version mismatch\n", "No usable NVIDIA driver", "reboot"),
    ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display "
     "Driver is properly installed and present in your system.\n", "library cannot be found", "install the driver"),
])
def test_whole_output_messages_are_diagnosed(tmp_path: Path, text: str, title: str, fix: str) -> None:
    f = tmp_path / "smi.txt"
    f.write_text(text)
    res = runner.invoke(app, ["check", "--json", str(f)])
    assert res.exit_code == 1, (res.stdout, getattr(res, "stderr", ""))
    rep = json.loads(res.stdout)
    drv = [x for x in rep["findings"] if x["rule_id"] == "DRV001"]
    assert drv and title in drv[0]["title"] and fix in drv[0]["remedy"]
    # one fact, one finding: the nvidia-smi signature that read the same line is listed in DRV001 (rules/restated.py)
    assert [x["rule_id"] for x in rep["findings"]] == ["DRV001"]
    assert not any("kernel module loaded" in e for e in drv[0]["evidence"])  # the input does not say
    assert rep["snapshot"]["inputs"][0]["kinds"][0] == "nvidia-smi"


@pytest.mark.parametrize("text, found", [
    ("Hi team,\n\nafter the kernel update nvidia-smi on gpu-node-12 prints:\n\nNo devices were found\n\nCan someone "
     "take a look?\n\nThanks,\nAlice\n", True),
    ("Running nvidia-smi inside the pod gives:\nFailed to initialize NVML: Unknown Error\nany idea?\n", True),
    ("I ran nvidia-smi: the table looks fine, all 8 GPUs are there.\n", False),
    ("nvidia-smi says: No devices were found on node 3 only\n", False),  # a sentence, not the output line
])
def test_nvidia_smis_message_quoted_under_a_sentence(tmp_path: Path, text: str, found: bool) -> None:
    f = tmp_path / "mail.txt"
    f.write_text(text)
    res = runner.invoke(app, ["check", "--json", str(f)])
    if found:
        rep = json.loads(res.stdout)
        assert res.exit_code == 1 and [x["rule_id"] for x in rep["findings"]][:1] == ["DRV001"]
    else:
        assert res.exit_code != 1 or "DRV001" not in res.stdout
