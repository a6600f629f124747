"""Planted secrets never reach what gpudoctor prints or writes (issue 6; docs/reliability.md).

The scan's own case (terminal, --json, --save) is tests/test_faults.py; here: `gpudoctor check` on
pasted files that quote the secrets, the confirmation runs (`smoke --json` and every file of the
per-rank log folders, NCCL_DEBUG=INFO asked for), the scrubber itself, and reports built from a rank
log that printed a token. The cluster case is tests/cluster/test_e2e.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_torch  # noqa: E402

from gpudoctor.confirm.plan import FAULT_ENV, RUN_ENV
from gpudoctor.facts.findings import Report
from gpudoctor.reports.redact import scrub_model, scrub_text, secret_values

ROOT = Path(__file__).resolve().parents[1]
HF = "hf_" + "S3CRETs3cret" * 3
SECRETS = {"HF_TOKEN": HF, "NCCL_IB_HCA_TOKEN": "tok-PLANTED-1", "TORCH_API_KEY": "PLANTED-KEY-2",
           "CUDA_PASSWORD": "PLANTED-PW-3", "WANDB_API_KEY": "PLANTED-WANDB-6",
           "AWS_SECRET_ACCESS_KEY": "PLANTED-AWS-5-abcdefgh"}
MARKERS = ("PLANTED", "S3CRET")


def assert_clean(*blobs: str) -> None:
    for blob in blobs:
        for value in SECRETS.values():
            assert value not in blob
        for m in MARKERS:
            assert m not in blob, blob[max(0, blob.find(m) - 200): blob.find(m) + 100]


def gd(*args, env=None, timeout=120):
    e = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    e.pop(FAULT_ENV, None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], capture_output=True, text=True, env=e,
                          timeout=timeout, cwd=str(ROOT))


# ------------------------------------------------------------------------------ the scrubber

@pytest.mark.parametrize("text,kept", [
    (f'snapshot_download(repo, token="{HF}")', 'token="<redacted>"'),
    ("401 Client Error for url: https://bob:PLANTED-PW-4@proxy.example/api", "https://bob:<redacted>@proxy.example"),
    ("ERROR: password=PLANTED-PW-3 rejected", "password=<redacted> rejected"),
    ("export WANDB_API_KEY=PLANTED-WANDB-6", "WANDB_API_KEY=<redacted>"),
    ('{"aws_secret_access_key": "PLANTED-AWS-5-abcdefgh"}', '"aws_secret_access_key": "<redacted>"'),
    ("python train.py --hf-token PLANTED-T0K --bs 8", "--hf-token <redacted> --bs 8"),
    ("key AKIAABCDEFGHIJKLMNOP used", "key <redacted> used"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEPLANTED\n-----END RSA PRIVATE KEY-----", "<redacted>"),
    ("push failed with header Authorization: Bearer PLANTED-sk_live_51Habcdef", "Authorization: Bearer <redacted>"),
    ('headers={"Authorization": "Basic PLANTEDdXNlcjpwYXNz"}', '"Authorization": "Basic <redacted>"'),
    ("charge with sk_live_PLANTEDabcdefghijklmnop failed", "charge with <redacted> failed"),
])
def test_scrub_text_removes_credentials(text, kept):
    out = scrub_text(text)
    assert kept in out and "PLANTED" not in out and "S3CRET" not in out


@pytest.mark.parametrize("text", [
    "NCCL_SOCKET_IFNAME=eth0", "throughput 4096 tokens/s; tokens: 512", "Permission denied (publickey,password).",
    "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_2TB_S6B0NL0W123456", "NCCL WARN NET/IB : No device found.",
    "CUDA error: out of memory", "HF_TOKEN=<redacted>",
])
def test_scrub_text_keeps_ordinary_text(text):
    assert scrub_text(text) == text


def test_environment_secret_values_are_removed_anywhere():
    env = dict(SECRETS, PATH="/usr/bin", NCCL_DEBUG="INFO", SHORT_TOKEN="1")
    values = secret_values(env)
    assert set(values) == set(SECRETS.values()) - set()  # short values are not hunted through text
    assert (
        scrub_text("rank1: tok-PLANTED-1 rejected; PLANTED-KEY-2", values) == "rank1: <redacted> rejected; <redacted>"
    )


def test_report_from_a_rank_log_that_printed_a_token(tmp_path, monkeypatch):
    """A REAL failed run's folder (gloo, rank 1 exits during DDP) whose rank log also printed the user's token:
    the report quotes the log tail, the scrubbed report does not quote the token."""
    from confirm_helpers import CONF, copy_capture, h200_snap

    from gpudoctor.confirm.runner import collect, facts_from
    from gpudoctor.rules import evaluate

    monkeypatch.setenv("HF_TOKEN", HF)
    d = copy_capture("gloo-2rank-exit-ddp", tmp_path)
    with open(d / "rank1.log", "a") as fh:
        fh.write(f"loading tokenizer with token {HF}\nhttps://bob:PLANTED-PW-4@proxy.example refused\n")
    spec = json.loads((d / "spec.json").read_text())
    launched = collect(d, spec)
    snap = h200_snap()
    snap.confirmation = facts_from(launched, spec, sys.executable)
    raw = evaluate(snap)
    assert HF in raw.model_dump_json()                    # the raw facts do quote it: the scrub below matters
    clean = scrub_model(raw)
    assert_clean(clean.model_dump_json())
    assert clean.snapshot.confirmation.runs[0].ranks[1].log_tail[-2] == "loading tokenizer with token <redacted>"
    assert (CONF / "gloo-2rank-exit-ddp" / "rank1.log").read_text().count(HF) == 0     # the capture is untouched


# ------------------------------------------------------------------------------ gpudoctor check

def test_check_output_never_shows_planted_secrets(tmp_path):
    env_dump = tmp_path / "env.txt"
    env_dump.write_text("".join(f"{k}={v}\n" for k, v in SECRETS.items()) +
                        "NCCL_DEBUG=INFO\nNCCL_SOCKET_IFNAME=eth0\nCUDA_VISIBLE_DEVICES=0,1\n")
    log = tmp_path / "train.log"
    log.write_text(
        f"$ docker run --gpus all -e HF_TOKEN={HF} -e WANDB_API_KEY=PLANTED-WANDB-6 nvcr.io/nvidia/pytorch:24.01-py3\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        f'    snapshot_download(repo, token="{HF}")\n'
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://bob:PLANTED-PW-4@proxy.example/x\n"
        f"RuntimeError: CUDA error: out of memory (while loading with {SECRETS['TORCH_API_KEY']})\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, "
        "NCCL version 2.19.3\n")
    out = tmp_path / "saved.json"
    r1 = gd("check", "-v", str(env_dump), str(log), "--save", str(out), "--fail-on", "never", env=SECRETS)
    r2 = gd("check", "--json", str(env_dump), str(log), "--fail-on", "never", env=SECRETS)
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    assert_clean(r1.stdout, r1.stderr, r2.stdout, r2.stderr, out.read_text())
    rep = Report.model_validate_json(r2.stdout)
    assert rep.snapshot.env.variables["TORCH_API_KEY"] == "<redacted>"
    assert rep.snapshot.env.variables["NCCL_SOCKET_IFNAME"] == "eth0"        # ordinary values are kept
    assert "<redacted>" in r1.stdout and "unhandled system error" in r1.stdout  # the error lines are still quoted


# ------------------------------------------------------------------------------ confirmation runs

@pytest.mark.slow
@pytest.mark.timeout(90)
@needs_torch
def test_smoke_json_and_rank_logs_never_show_planted_secrets(tmp_path):
    """smoke --cpu, rank 1 raising during DDP (so the logs hold a traceback), NCCL_DEBUG=INFO and
    TORCH_CPP_LOG_LEVEL=INFO asked for, --keep-logs: the JSON, stderr and every file the worker wrote."""
    env = dict(SECRETS, NCCL_DEBUG="INFO", TORCH_CPP_LOG_LEVEL="INFO", TMPDIR=str(tmp_path))
    env[FAULT_ENV] = "1:raise:ddp"
    r = gd("smoke", "--cpu", "--nproc", "2", "--json", "--keep-logs", "--no-baseline", "--steps", "2",
           "--warmup", "1", "--timeout", "60", env=env)
    assert r.returncode == 1, r.stderr                                   # the failed run is an error finding
    rep = Report.model_validate_json(r.stdout)
    c = rep.snapshot.confirmation
    assert c.status == "failed" and c.runs[0].culprit_rank == 1
    files = [p for d in {run.log_dir for run in c.runs if run.log_dir} for p in Path(d).rglob("*")
             if p.is_file() and "pkg" not in p.relative_to(d).parts]
    names = {p.name for p in files}
    assert {"rank0.log", "rank1.log", "spec.json", "result.json", "state-rank1.json"} <= names
    assert any("injected fault" in p.read_text(errors="replace") for p in files)     # a real traceback was written
    assert "[c10d]" in (Path(c.runs[0].log_dir) / "rank1.log").read_text()             # and torch's INFO log
    assert_clean(r.stdout, r.stderr, *(p.read_text(errors="replace") for p in files))
    for run in c.runs:
        shutil.rmtree(run.log_dir, ignore_errors=True)
    assert RUN_ENV not in r.stdout
