"""Issue 15 item 10: --python accepts an environment folder (virtualenv, venv, conda env): its bin/python3 is used;
a folder without an interpreter is a one-line usage error naming what was looked for."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.probes.torch_start import missing_interpreter, resolve_interpreter

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.executable).parent.parent  # the test interpreter's own environment (it has torch)


def test_a_folder_resolves_to_its_interpreter(tmp_path: Path) -> None:
    assert resolve_interpreter(str(VENV)) in (str(VENV / "bin" / "python3"), str(VENV / "bin" / "python"))
    assert resolve_interpreter(str(tmp_path)) is None
    assert "a folder without bin/python3 or bin/python" in missing_interpreter(str(tmp_path))
    assert "no such interpreter" in missing_interpreter(str(tmp_path / "nope"))


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_cuda_version_check_reads_the_torch_of_a_venv_folder() -> None:
    pytest.importorskip("torch", reason="reads the torch of the test environment (README: torch tests need torch)")
    p = run("cuda-version-check", "--python", str(VENV), "--driver", "580.65.06", "--format", "json")
    assert p.returncode in (0, 1), p.stderr
    assert str(VENV) in json.loads(p.stdout)["results"][0]["subject"]


def test_a_folder_without_python_is_a_one_line_usage_error(tmp_path: Path) -> None:
    for cmd in (["scan"], ["smoke", "--cpu"], ["cuda-version-check", "--driver", "580.65.06"]):
        p = run(*cmd, "--python", str(tmp_path))
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, (cmd, p.stderr)
        assert "folder without" in p.stderr, (cmd, p.stderr)
