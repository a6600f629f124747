"""Issue 15 item 12: usage errors name the command they are about, in one line; a folder that cannot be read says
so; a bad fleet node is named once; --help lists every exit code."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudoctor.parsers import offline

ROOT = Path(__file__).resolve().parents[1]


def gd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize(("args", "where", "says"), [
    (["bench", "allreduce", "--gpu"], "gpudoctor bench allreduce", "No such option: --gpu"),
    (["scan", "--fail-on"], "gpudoctor scan", "requires an argument"),
    (["cuda-version-check", "--torch"], "gpudoctor cuda-version-check", "requires an argument"),
    (["bench"], "gpudoctor bench", "missing command (allreduce)"),
    (["check"], "gpudoctor check", "Missing argument"),
])
def test_usage_errors_are_one_line_naming_the_command(args: list[str], where: str, says: str) -> None:
    p = gd(*args)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith(f"{where}: error: ") and says in p.stderr and f"`{where} --help`" in p.stderr


def test_help_lists_every_exit_code() -> None:
    out = " ".join(gd("--help").stdout.split())
    for code in ("0 ok", "1 findings", "2 usage", "3 internal", "130 interrupted", "141"):
        assert code in out, code


def test_an_unreadable_folder_is_not_an_empty_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def walk(top: str, onerror=None, **kw):  # what os.walk does when it cannot list ``top`` (EACCES as non-root)
        if onerror is not None:
            onerror(PermissionError(13, "Permission denied", top))
        return iter(())

    monkeypatch.setattr(offline.os, "walk", walk)
    files, errors = offline.expand_paths([str(tmp_path)])
    assert files == [] and errors == [f"{tmp_path}: cannot read the folder: Permission denied"]


def test_an_empty_folder_still_says_so(tmp_path: Path) -> None:
    assert offline.expand_paths([str(tmp_path)])[1] == [f"{tmp_path}: folder holds no files"]


def test_a_bad_fleet_node_is_named_once(tmp_path: Path) -> None:
    f = tmp_path / "fleet.toml"
    f.write_text('[[node]]\nname = "gpu-a"\ncount = 2\n')
    p = gd("cuda-version-check", "--torch", "2.11.0", "--fleet", str(f))
    assert p.returncode == 2 and p.stderr.count("gpu-a") == 1, p.stderr
