"""GPUDOCTOR_RULES_DIR (a site's rule data override) never fails silently: a path that is not a folder and a file
that is not valid TOML are one-line errors with exit 2 (whichever rule reads it); a .toml file named like no rule
data file is warned about. An override is laid over the shipped file: a site's catalogue adds to the shipped one."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    r = _site(tmp_path, "signatures.toml", "garbage = [\n")
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 2 and f"{tmp_path / 'site' / 'signatures.toml'}: not valid TOML" in last


def test_a_misspelt_file_name_is_warned_about_and_the_shipped_data_is_used(tmp_path):
    r = _site(tmp_path, "threshold.toml", "[host]\n")
    assert r.returncode == 1 and "SIG023" in r.stdout
    assert "threshold.toml is not the name of a rule data file" in r.stderr and "thresholds.toml" in r.stderr


_ENTRY = """[[signature]]
id = 'SIG900'
title = 'Our storage mount went away'
regex = '''Stale file handle'''
severity = 'error'
cause = 'The NFS server restarted.'
remedy = 'Remount /data.'
"""


def _site(tmp_path: Path, name: str, content: str | bytes) -> subprocess.CompletedProcess:
    """`check` of the test log with GPUDOCTOR_RULES_DIR holding ``name`` with ``content``."""
    d = tmp_path / "site"
    d.mkdir(exist_ok=True)
    if isinstance(content, bytes):
        (d / name).write_bytes(content)
    else:
        (d / name).write_text(content)
    return _check(tmp_path, str(d))


def _override(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    return _site(tmp_path, "signatures.toml", text)


def test_a_sites_own_catalogue_is_used(tmp_path):
    log = tmp_path / "job.log"
    r = _override(tmp_path, _ENTRY)
    log.write_text("OSError: [Errno 116] Stale file handle: '/data/shard-0001'\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPUDOCTOR_RULES_DIR=str(tmp_path / "site"), NO_COLOR="1")
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "check", str(log)], capture_output=True, text=True,
                       timeout=120, env=env, cwd=str(tmp_path))
    assert r.returncode == 1 and "SIG900" in r.stdout and "Remount /data." in r.stdout, r.stdout + r.stderr
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")  # the shipped SIG023 stays
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "check", str(log)], capture_output=True, text=True,
                       timeout=120, env=env, cwd=str(tmp_path))
    assert r.returncode == 1 and "SIG023" in r.stdout


def test_a_site_entry_with_a_shipped_id_changes_only_the_keys_it_gives(tmp_path):
    r = _override(tmp_path, "[[signature]]\nid = 'SIG023'\nremedy = 'Open a ticket with the platform team.'\n")
    assert r.returncode == 1 and "Open a ticket with the platform team." in r.stdout and "SIG023" in r.stdout


@pytest.mark.parametrize("name", ["xid.toml", "thresholds.toml", "rule_meta.toml"])
def test_any_broken_override_file_is_an_error_not_a_silent_skip(tmp_path, name):
    r = _site(tmp_path, name, "x\n")
    assert r.returncode == 2 and f"{name}: not valid TOML" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("edit, says", [
    (lambda t: t.replace("regex = '''Stale file handle'''\n", ""), "[[signature]] 1 (SIG900): no 'regex'"),
    (lambda t: t.replace("Stale file handle", "Stale (file handle"), "regex does not compile"),
    (lambda t: t.replace("severity = 'error'", "severty = 'error'"), "unknown key(s) severty"),
    (lambda t: t.replace("'error'", "'fatal'"), "severity 'fatal' is not one of error, warning, info"),
    (lambda t: t + "\n[[quiet]]\nregex = '(unclosed'\n", "[[quiet]] 1: regex does not compile"),
    (lambda t: t + t, "id used twice"),
    (lambda t: t.replace("severity = 'error'", "kernel_xids = ['31']\nseverity = 'error'"),
     "kernel_xids must be a list of Xid numbers"),
])
def test_a_broken_entry_of_a_sites_catalogue_is_a_one_line_error(tmp_path, edit, says):
    r = _override(tmp_path, edit(_ENTRY))
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    assert r.returncode == 2 and says in last and "signatures.toml" in last, r.stderr
    assert "Traceback" not in r.stderr and "re2" not in r.stderr


def test_the_shipped_catalogue_has_the_shape_an_override_is_held_to():
    import tomllib

    from gpudoctor.compat.schema import signature_problems

    assert signature_problems(tomllib.loads((ROOT / "rules" / "signatures.toml").read_text())) == []


@pytest.mark.parametrize("name, text, says", [
    ("thresholds.toml", "[host.dev_shm]\nmin_bytes = \"lots\"\n", "expected a number"),
    ("signatures.toml", "[[signature]]\nid = 'SIG023'\nfollows = ['SIG777']\n", "follows names no signature: SIG777"),
])
def test_an_override_value_of_the_wrong_type_or_reference_is_an_error(tmp_path, name, text, says):
    r = _site(tmp_path, name, text)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_a_rules_file_in_another_encoding_is_an_error(tmp_path):
    r = _site(tmp_path, "signatures.toml", "# café\n".encode("utf-16"))
    assert r.returncode == 2 and "not UTF-8" in r.stderr


def test_a_misspelt_key_is_warned_about(tmp_path):
    r = _site(tmp_path, "thresholds.toml", "[host.dev_shm]\nmin_bytess = 1\n")
    assert r.returncode == 1 and "host.dev_shm.min_bytess is not in the shipped file" in r.stderr


def test_the_rule_ids_a_site_may_follow_are_the_fact_rules_that_fire_as_causes():
    from gpudoctor.compat.schema import RULE_IDS
    from gpudoctor.rules.logs import RULE_CAUSES

    assert set(RULE_IDS) == set(RULE_CAUSES)


def test_a_sites_remedy_is_shown_when_a_shipped_case_of_the_signature_fires(tmp_path):
    r = _override(tmp_path, "[[signature]]\nid = 'SIG012'\nremedy = 'Ask the platform team for a bigger GPU.'\n")
    log = tmp_path / "job.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                   "of 79.15 GiB of which 1.00 GiB is free. Of the allocated memory 60.00 GiB is allocated by PyTorch, "
                   "and 15.00 GiB is reserved by PyTorch but unallocated.\n")  # the fragmentation case
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPUDOCTOR_RULES_DIR=str(tmp_path / "site"), NO_COLOR="1")
    r = subprocess.run([sys.executable, "-m", "gpudoctor", "check", str(log)], capture_output=True, text=True,
                       timeout=120, env=env, cwd=str(tmp_path))
    assert "Ask the platform team for a bigger GPU." in r.stdout and "fragment" in r.stdout.lower(), r.stdout
