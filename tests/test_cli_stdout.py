"""Issue 15 item 6: the reader of stdout went away (EPIPE) -> quiet exit 141 (128 + SIGPIPE), never 1 ("findings");
stdout closed or unwritable -> one line on stderr and exit 2, never an AttributeError (exit 3); for every command."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPORT = str(ROOT / "docs" / "examples" / "h200-2gpu-2026-11-29" / "scan.json")
COMMANDS = [
    ["rules"], ["schema"], ["schema", "--cluster"], ["explain", "DRV001"], ["--help"], ["--version"],
    ["check", "--help"],
    ["check", REPORT], ["check", "-v", REPORT], ["check", "--json", REPORT], ["check", "--fail-on", "never", REPORT],
    ["cuda-version-check", "--torch", "2.11.0", "--driver", "R535"],
    ["cuda-version-check", "--torch", "2.11.0", "--fleet", str(ROOT / "examples" / "fleet.toml"), "--format", "junit"],
]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a)[:40])
def test_broken_pipe_is_a_quiet_exit(args: list[str]) -> None:
    r, w = os.pipe()
    os.close(r)  # nobody will ever read: the first write gets EPIPE
    try:
        p = subprocess.run([sys.executable, "-m", "gpudoctor", *args], stdout=w, stderr=subprocess.PIPE,
                           env=_env(), cwd=ROOT, timeout=120, text=True)
    finally:
        os.close(w)
    assert p.returncode == 141 and p.stderr == "", (p.returncode, p.stderr)


LONG = [["scan"], ["smoke", "--cpu"], ["bench", "allreduce", "--cpu"], ["cluster"]]


@pytest.mark.parametrize("args", COMMANDS + LONG, ids=lambda a: " ".join(a)[:40])
def test_closed_stdout_is_one_line_and_exit_2(args: list[str]) -> None:
    p = subprocess.run([sys.executable, "-m", "gpudoctor", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=_env(), cwd=ROOT, timeout=120, text=True, preexec_fn=lambda: os.close(1))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "standard output is closed" in p.stderr, p.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["rules"], ["check", "-v", REPORT], ["check", "--json", REPORT]])
def test_unwritable_stdout_is_one_line_and_exit_2(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "gpudoctor", *args], stdout=full, stderr=subprocess.PIPE,
                           env=_env(), cwd=ROOT, timeout=120, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "cannot write the output" in p.stderr, p.stderr
