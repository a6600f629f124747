"""examples/slurm: the HealthCheckProgram drains a failing node with the right reason and leaves a healthy one
alone, through a fake `scontrol` on PATH that records its calls (and answers `show node`)."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HC = ROOT / "examples/slurm/gpudoctor-healthcheck.sh"
PROLOG = ROOT / "examples/slurm/gpudoctor-prolog.sh"
HEALTHY = ROOT / "tests/fixtures/h200x2/scan.json"  # the 2-GPU H200 host: no error finding
FAILING = ROOT / "tests/fixtures/h200-errors/duplicate-gpu.txt"  # SIG010, an error finding

FAKE_SCONTROL = """#!/bin/bash
printf '%s\\n' "$*" >> "$SCONTROL_LOG"
if [ "$1" = show ]; then
    echo "NodeName=$3 Arch=x86_64 CoresPerSocket=16"
    echo "   State=${FAKE_STATE:-IDLE} ThreadsPerCore=1"
    [ -n "${FAKE_REASON:-}" ] && echo "   Reason=${FAKE_REASON} [admin@2026-11-30T10:00:00]"
fi
exit 0
"""

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                                reason="needs bash and timeout(1)")


def gpudoctor(*args: str) -> str:
    return " ".join([shlex.quote(sys.executable), "-m", "gpudoctor", *map(shlex.quote, args)])


def run_hc(tmp_path: Path, cmd: str, script: Path = HC, **env: str) -> tuple[int, list[str], str]:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / "scontrol"
    fake.write_text(FAKE_SCONTROL)
    fake.chmod(0o755)
    log = tmp_path / "scontrol.log"
    full = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", SCONTROL_LOG=str(log), GPUDOCTOR_CMD=cmd,
                SLURMD_NODENAME="gpu-node-07", GPUDOCTOR_PYTHON=sys.executable, TMPDIR=str(tmp_path),
                PYTHONPATH=str(ROOT), **env)
    res = subprocess.run(["bash", str(script)], env=full, capture_output=True, text=True, timeout=300)
    calls = log.read_text().splitlines() if log.exists() else []
    return res.returncode, calls, res.stderr


def drains(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("update ")]


def test_healthy_node_is_left_alone(tmp_path):
    code, calls, err = run_hc(tmp_path, gpudoctor("check", str(HEALTHY)))
    assert code == 0, err
    assert calls == []  # not even a `show node`: nothing to do, nothing resumed


def test_failing_node_is_drained_with_rule_id_and_title(tmp_path):
    code, calls, err = run_hc(tmp_path, gpudoctor("check", str(FAILING)))
    assert code == 1, err
    assert calls[0] == "show node gpu-node-07"
    assert drains(calls) == ["update nodename=gpu-node-07 state=drain reason=gpudoctor: SIG010 "
                             + _title("SIG010")]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("gpudoctor-hc.")] == []  # temp dir removed


def _title(rule_id: str) -> str:
    out = subprocess.run([sys.executable, "-m", "gpudoctor", "check", str(FAILING), "--json"], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120).stdout
    return next(f["title"] for f in json.loads(out)["findings"] if f["rule_id"] == rule_id)


def test_real_static_scan_on_this_gpu_less_host_drains_it(tmp_path):
    """The default command, for real: no NVIDIA driver here is an error finding, so the node is drained."""
    code, calls, err = run_hc(tmp_path, gpudoctor("scan", "--no-confirm", "--torch-timeout", "60"),
                              GPUDOCTOR_TIMEOUT="240")
    assert code == 1, err
    (drain,) = drains(calls)
    assert drain.startswith("update nodename=gpu-node-07 state=drain reason=gpudoctor: DRV")


def test_warning_bar_is_configurable(tmp_path):
    code, calls, _ = run_hc(tmp_path, gpudoctor("check", str(HEALTHY)), GPUDOCTOR_FAIL_ON="info")
    assert code == 1 and drains(calls)[0].startswith("update nodename=gpu-node-07 state=drain reason=gpudoctor: ")


def test_hung_scan_is_killed_and_drains(tmp_path):
    hang = tmp_path / "hang.sh"  # a scan stuck in the driver: ignores its arguments, never answers
    hang.write_text("#!/bin/sh\nexec sleep 30\n")
    hang.chmod(0o755)
    code, calls, _ = run_hc(tmp_path, str(hang), GPUDOCTOR_TIMEOUT="1")
    assert code == 1
    assert drains(calls) == ["update nodename=gpu-node-07 state=drain reason=gpudoctor: scan hung (killed after 1 s)"]


def test_gpudoctor_failure_does_not_drain(tmp_path):
    code, calls, err = run_hc(tmp_path, gpudoctor("check", str(tmp_path / "missing.txt")))
    assert code == 2 and calls == [] and "could not run (exit 2)" in err


def test_an_operators_drain_is_kept(tmp_path):
    code, calls, err = run_hc(tmp_path, gpudoctor("check", str(FAILING)), FAKE_STATE="IDLE+DRAIN",
                              FAKE_REASON="bad DIMM, ticket 123")
    assert code == 1 and drains(calls) == [] and "already drained by someone else" in err


def test_our_own_earlier_drain_is_refreshed(tmp_path):
    code, calls, _ = run_hc(tmp_path, gpudoctor("check", str(FAILING)), FAKE_STATE="IDLE+DRAIN",
                            FAKE_REASON="gpudoctor: GPU002 GPU temperature high")
    assert code == 1 and len(drains(calls)) == 1


def test_textfile_written_in_the_same_run(tmp_path):
    prom = tmp_path / "gpudoctor.prom"
    code, calls, err = run_hc(tmp_path, gpudoctor("check", str(FAILING)), GPUDOCTOR_TEXTFILE=str(prom))
    assert code == 1 and "reason=gpudoctor: SIG010" in drains(calls)[0], err
    assert "gpudoctor_healthy 0" in prom.read_text()


def test_prolog_exit_codes(tmp_path):
    assert run_hc(tmp_path, gpudoctor("check", str(HEALTHY)), script=PROLOG)[0] == 0
    code, calls, _ = run_hc(tmp_path, gpudoctor("check", str(FAILING)), script=PROLOG)
    assert code == 1 and drains(calls)  # Slurm requeues the job and keeps the node drained
    assert run_hc(tmp_path, gpudoctor("check", str(tmp_path / "nope")), script=PROLOG)[0] == 0  # tool broken


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_shellcheck():
    res = subprocess.run(["shellcheck", str(HC), str(PROLOG)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout
