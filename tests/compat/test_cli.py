"""`gpudoctor cuda-version-check`: exit codes, formats, the sample fleet (this is also what .ci/run runs)."""
import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
FLEET = str(ROOT / "examples" / "fleet.toml")
REQS = str(ROOT / "examples" / "requirements-train.txt")


def cvc(*args):
    return CliRunner().invoke(app, ["cuda-version-check", *args])


def test_sample_fleet_passes_with_the_sample_requirements():
    r = cvc("--requirements", REQS, "--fleet", FLEET)
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith(("PASS", "FAIL"))]
    assert len(lines) == 5 and all(ln.startswith("PASS") for ln in lines)      # 4 node types + torchvision pair
    assert "minor-version compatibility" in r.output                            # the R535 / R550 nodes


def test_pypi_default_cu130_fails_on_the_older_nodes():
    r = cvc("--torch", "2.11.0", "--fleet", FLEET)
    assert r.exit_code == 1
    fails = [ln for ln in r.output.splitlines() if ln.startswith("FAIL")]
    assert [ln.split(" on ")[1].split(" ")[0] for ln in fails] == ["h100-train", "a100-legacy", "l4-inference"]


def test_one_line_per_target_for_gpu_and_cc():
    r = cvc("--torch", "2.5.1+cu124", "--driver", "535.104.05", "--gpu", "H100 SXM", "--gpu", "A10", "--cc", "12.0")
    lines = [ln for ln in r.output.splitlines() if ln.startswith(("PASS", "FAIL"))]
    assert [ln[:4] for ln in lines] == ["PASS", "PASS", "FAIL"] and r.exit_code == 1   # no sm_120 in cu124


def test_case_020_arch_missing_and_case_008_driver():
    assert cvc("--torch", "2.11.0", "--gpu", "GeForce GTX 1070 Ti").exit_code == 1
    r = cvc("--torch", "2.1.0+cu121", "--driver", "470.182.03", "--format", "json")
    doc = json.loads(r.output)
    assert r.exit_code == 1 and doc["summary"] == {"passed": 0, "failed": 1}
    assert doc["results"][0]["checks"][0]["status"] == "fail"
    assert cvc("--torch", "2.1.0+cu118", "--driver", "470.182.03").exit_code == 0


def test_blackwell_on_r535_fails_on_the_driver_not_the_runtime():
    # 2.8 cu129 runs on R535 under 12.x MVC, but an RTX 50 / cc 12.0 GPU needs the CUDA 12.8 driver (570.26)
    r = cvc("--torch", "2.8.0+cu129", "--driver", "535.274.02", "--gpu", "RTX 5090", "--format", "json")
    doc = json.loads(r.output)
    checks = {c["check"]: c["status"] for c in doc["results"][0]["checks"]}
    assert r.exit_code == 1 and checks == {"runtime-vs-driver": "caveat", "arch": "pass", "driver-vs-gpu": "fail"}
    assert cvc("--torch", "2.8.0+cu129", "--driver", "570.26", "--cc", "12.0").exit_code == 0


@pytest.mark.parametrize("args,msg", [
    (["--torch", "2.5.1", "--gpu", "Voodoo 5"], "unknown GPU model"),
    (["--torch", "next", "--driver", "550"], "cannot read a torch version"),
    (["--torch", "9.1.0", "--driver", "550"], "not in gpudoctor's release table"),
    (["--torch", "2.5.1", "--driver", "five"], "not an NVIDIA driver version"),
    (["--torch", "2.5.1", "--cc", "ninety"], "not a compute capability"),
    (["--requirements", "/nonexistent/requirements.txt", "--driver", "550"], "no such file"),
    (["--torch", "2.5.1", "--fleet", "/nonexistent/fleet.toml"], "no such file"),
    (["--torch", "2.5.1", "--fleet", FLEET, "--driver", "550"], "cannot be combined"),
])
def test_bad_input_exits_2_with_one_line(args, msg):
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "cuda-version-check", *args], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and msg in r.stderr


def test_bad_fleet_files(tmp_path):
    for text, _msg in [("[[node]]\nname='x'\ngpu='H100'\ncolor='red'\n", "unknown key"), ("x = 1\n", "no [[node]]"),
                      ("[[node]]\nname='x'\n", "needs a driver"), ("[[node]]\ngpu='Riva TNT'\n", "unknown GPU model"),
                      ("[[node\n", "not valid TOML")]:
        p = tmp_path / "fleet.toml"
        p.write_text(text)
        r = cvc("--torch", "2.5.1", "--fleet", str(p))
        assert r.exit_code == 2, text


def test_junit_and_github_formats():
    r = cvc("--torch", "2.11.0", "--fleet", FLEET, "--format", "junit")
    root = ET.fromstring(r.output.split("\n", 1)[1])
    suite = root.find("testsuite")
    assert suite.get("tests") == "4" and suite.get("failures") == "3" and len(suite.findall("testcase/failure")) == 3
    r = cvc("--requirements", REQS, "--fleet", FLEET, "--format", "github")
    warn = [ln for ln in r.output.splitlines() if ln.startswith("::warning ")]
    assert len(warn) == 2 and "file=" in warn[0] and ",line=4," in warn[0] and "\n" not in warn[0]
    r = cvc("--torch", "2.11.0", "--fleet", FLEET, "--format", "github")
    assert len([ln for ln in r.output.splitlines() if ln.startswith("::error ")]) == 3


def test_companion_pins_mismatch(tmp_path):
    p = tmp_path / "requirements.txt"
    p.write_text("torch==2.6.0+cu124\ntorchvision==0.20.1+cu124\n")
    r = cvc("--requirements", str(p), "--driver", "550.54.15")
    assert r.exit_code == 1 and "expects torchvision 0.21.x" in r.output


@pytest.mark.slow
def test_installed_torch_default_mode():
    # this machine's venv has a CPU-only torch: against any GPU target it must fail, naming the build
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpudoctor",
            "cuda-version-check",
            "--python",
            sys.executable,
            "--driver",
            "580.159.04",
            "--gpu",
            "H200",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    try:
        import torch  # noqa: F401
    except ImportError:
        assert r.returncode == 2 and "no importable torch" in r.stderr
        return
    import torch
    if torch.version.cuda is None:
        assert r.returncode == 1 and "CPU-only build" in r.stdout
    else:
        assert r.returncode in (0, 1) and torch.__version__ in r.stdout


def test_pin_with_a_cuda_major_that_does_not_exist_is_bad_input():
    import pytest

    from gpudoctor.compat.pins import PinError, parse_pin

    with pytest.raises(PinError, match="no CUDA 99.x exists"):
        parse_pin("2.5.1+cu999")
    assert parse_pin("2.5.1+cu124").variant == "cu124" and parse_pin("2.5.1+cpu").variant == "cpu"


def test_json_flag_is_the_json_format_and_clashes_with_another_format():
    a = cvc("--torch", "2.1.0+cu121", "--driver", "470.182.03", "--json")
    b = cvc("--torch", "2.1.0+cu121", "--driver", "470.182.03", "--format", "json")
    assert a.exit_code == b.exit_code == 1 and json.loads(a.output) == json.loads(b.output)
    clash = cvc("--torch", "2.1.0+cu121", "--driver", "470.182.03", "--json", "--format", "junit")
    assert clash.exit_code == 2 and "two formats" in clash.output
