"""GPUDOCTOR_RULES_DIR (a site's rule data override) never fails silently: a path that is not a folder and a file
that is not valid TOML are one-line errors with exit 2; a .toml file named like no rule data file is warned about."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _check(tmp_path: Path, rules_dir: str) -> subprocess.CompletedProcess:
    log = tmp_path / "job.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPUDOCTOR_RULES_DIR=rules_dir, NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "gpudoctor", "check", str(log)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(tmp_path))


def test_a_rules_dir_that_is_not_a_folder_is_an_error(tmp_path):
    r = _check(tmp_path, str(tmp_path / "no-such-dir"))
    assert r.returncode == 2 and "not a folder" in r.stderr and "Traceback" not in r.stderr


def test_invalid_toml_in_the_override_names_the_file(tmp_path):
    d = tmp_path / "site"
    d.mkdir()
    (d / "signatures.toml").write_text("garbage = [\n")
    r = _check(tmp_path, str(d))
    assert r.returncode == 2 and f"{d / 'signatures.toml'}: not valid TOML" in r.stderr.strip().splitlines()[-1]


def test_a_misspelt_file_name_is_warned_about_and_the_shipped_data_is_used(tmp_path):
    d = tmp_path / "site"
    d.mkdir()
    (d / "threshold.toml").write_text("[host]\n")
    r = _check(tmp_path, str(d))
    assert r.returncode == 1 and "SIG023" in r.stdout
    assert "threshold.toml is not the name of a rule data file" in r.stderr and "thresholds.toml" in r.stderr
