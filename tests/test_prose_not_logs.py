"""What a person wrote is not what happened (parsers/prose.py): messages quoted in the prose, lists and inline code
of a Markdown issue or notes, in Python source, in a config file's comments or typed at a shell prompt are not
findings; the output pasted among them (fenced or not) still is."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers.prose import is_config, is_markdown, is_python_source, log_view

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
TRACE = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 77, in <module>\n"
         "[rank1]:     out = model(x)\n[rank1]: RuntimeError: CUDA error: device-side assert triggered\n")
ISSUE = ("### 🐛 Describe the bug\n\nI'm training with DDP on 2x A100 and it crashes after ~5 minutes. I tried\n"
         "`NCCL_P2P_DISABLE=1` (people got `NCCL error: unhandled cuda error`) and `expandable_segments:True`\n"
         "because I thought it was `CUDA out of memory`, but neither helped.\n"
         "Someone said \"RuntimeError: CUDA error: an illegal memory access was encountered\" is a driver bug?\n\n"
         "Here is the log:\n\n```\n" + TRACE + "```\n\n### Versions\n\nPyTorch version: 2.4.0+cu121\n")


def _run(*paths: Path) -> tuple[int, dict, str]:
    res = runner.invoke(app, ["check", *map(str, paths), "--format", "json"])
    doc = json.loads(res.stdout) if res.stdout.strip().startswith("{") else {}
    return res.exit_code, doc, res.output


def _ids(doc: dict, severity: str = "error") -> list[str]:
    return [f["rule_id"] for f in doc.get("findings", []) if f["severity"] == severity]


def _read(doc: dict) -> list[str]:
    """Every rule that read the input, with those folded into a finding stating the same fact (rules/restated.py)."""
    return [i for f in doc.get("findings", []) for i in [f["rule_id"], *f["data"].get("restated_by", [])]]


def test_in_an_issue_the_pasted_traceback_is_the_finding_not_the_users_guesses(tmp_path):
    p = tmp_path / "issue.md"
    p.write_text(ISSUE)
    rc, doc, out = _run(p)
    assert rc == 1 and _ids(doc) == ["SIG013"], out
    assert doc["snapshot"]["torch"]["version"] == "2.4.0+cu121"  # the unfenced collect_env line is still read


def test_a_traceback_pasted_without_a_fence_is_still_read(tmp_path):
    p = tmp_path / "issue.md"
    p.write_text("# Crash on node 3\n\n- driver 550\n- torch 2.4\n\nThe job died with this:\n" + TRACE)
    assert _ids(_run(p)[1]) == ["SIG013"]


def test_an_issue_quoting_a_gpudoctor_report_is_read_for_its_new_traceback(tmp_path):
    log = tmp_path / "old.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    report = runner.invoke(app, ["check", str(log)]).stdout
    p = tmp_path / "issue.md"
    p.write_text("Hi, my job failed. gpudoctor said:\n\n```\n" + report + "```\n\nNow I get:\n\n```\n" + TRACE
                 + "```\n")
    rc, doc, out = _run(p)
    assert _ids(doc) == ["SIG013"], out


@pytest.mark.parametrize("text", [
    "# Our NCCL notes\n\nCommon messages we've seen:\n\n- `CUDA error: out of memory` -- lower the batch size\n"
    "- `NCCL WARN Call to shm_open failed : Permission denied` -- chmod /dev/shm\n"
    "- `RuntimeError: CUDA error: an illegal memory access was encountered` -- a custom kernel\n",
    "# FAQ\n\n**Q: My job dies with `RuntimeError: CUDA error: out of memory`. What do I do?**\nA: Lower the batch "
    "size.\n\n**Q: I get `NCCL WARN Call to shm_open failed : Permission denied`.**\nA: Run `chmod 1777 /dev/shm`.\n",
])
def test_notes_that_only_quote_messages_are_refused_with_the_reason(tmp_path, text):
    p = tmp_path / "notes.md"
    p.write_text(text)
    rc, _, out = _run(p)
    assert rc == 2 and "Markdown notes or documentation with no log" in out


def test_gpudoctors_own_documentation_gives_no_error(tmp_path):
    rc, doc, out = _run(ROOT / "docs" / "triage.md", ROOT / "README.md")
    assert not _ids(doc) and not _ids(doc, "warning"), out


SOURCE = '''"""Helpers that translate failures into user-facing messages."""
import logging
import torch

KNOWN = {
    "CUDA error: out of memory": "lower the batch size",
    "NCCL error: unhandled system error": "check /dev/shm",
}


def check_env():
    if torch.cuda.device_count() < 2:
        raise SystemExit(
            "RuntimeError: CUDA error: an illegal memory access was encountered"
        )
'''


def test_python_source_is_not_a_log(tmp_path):
    assert is_python_source(SOURCE) and not is_python_source(TRACE)
    (tmp_path / "helpers.py").write_text(SOURCE)
    (tmp_path / "train.log").write_text(TRACE)
    rc, doc, out = _run(tmp_path)
    assert _ids(doc) == ["SIG013"], out
    skipped = {Path(i["path"]).name: i.get("reason", "") for i in doc["snapshot"]["inputs"] if i["status"] == "skipped"}
    assert "Python source" in skipped.get("helpers.py", "")


def test_comments_and_typed_commands_are_not_output(tmp_path):
    p = tmp_path / "session.txt"
    p.write_text("model: llama-7b\n# if you see \"NCCL error: unhandled system error\" set NCCL_SOCKET_IFNAME\n"
                 "user@node:~$ echo \"CUDA error: an illegal memory access was encountered\" >> notes.txt\n"
                 "(base) root@a100-07:/workspace# grep -c 'unhandled cuda error' job.log\n"
                 "[root@gpu-3 ~]# echo 'CUDA error: out of memory'\n"
                 "train.log:1532:RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    assert _ids(_run(p)[1]) == ["SIG001"]  # the grep output is output: a real line of train.log


def test_nccl_tests_report_lines_starting_with_a_hash_are_read(tmp_path):
    p = tmp_path / "nccl-tests.txt"
    p.write_text("# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20\n"
                 "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 120.5\n")
    assert "SIG426" in _ids(_run(p)[1])


def test_raw_logs_are_not_markdown():
    for p in sorted((FIX / "h200-fault-logs").glob("*.log")):
        text = p.read_text()
        assert not is_markdown(text) and log_view(text) is text, p.name


def test_a_jupyter_notebook_is_read_for_its_outputs_not_its_source(tmp_path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "source": ["# try `CUDA out of memory` fixes"]},
        {"cell_type": "code", "source": ["raise RuntimeError('NCCL error: unhandled system error')"], "outputs": []},
        {"cell_type": "code", "source": ["x = torch.zeros(1).cuda()"], "outputs": [
            {"output_type": "stream", "name": "stderr", "text": ["loading model\n"]},
            {"output_type": "error", "ename": "RuntimeError", "evalue": "CUDA error: no kernel image is available "
             "for execution on the device", "traceback": ["\x1b[0;31mRuntimeError\x1b[0m  Traceback (most recent call "
                                                          "last)", "Cell In[2], line 1"]}]}]}
    p = tmp_path / "debug.ipynb"
    p.write_text(json.dumps(nb))
    assert _ids(_run(p)[1]) == ["SIG001"]


def test_a_signature_written_for_a_hash_prefixed_line_reads_it_anywhere(tmp_path):
    p = tmp_path / "tail.txt"
    p.write_text("# Out of bounds values : 3 FAILED\n")  # nccl-tests' tail pasted without its header
    assert "SIG426" in _ids(_run(p)[1])


LOG_TAIL = ("[rank2]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version "
            "2.21.5\n[rank2]: Last error:\n[rank2]: Error while creating shared memory segment /dev/shm/nccl-W3aZ9k "
            "(size 9637888), error: No space left on device (28)\n")


@pytest.mark.parametrize("text", [
    "Hi team,\n\nThe nightly job failed again on gpu-a17. It is not an OOM this time (I grepped, no \"CUDA out of "
    "memory\" anywhere).\nLast week we had the GPU has fallen off the bus incident on a different node.\n\n"
    "Log tail:\n\n"
    + LOG_TAIL + "\nThanks,\nCarol\n",
    "> On Wed, Dec 4, 2024 at 10:02 AM Bob <bob@example.com> wrote:\n> > I think it is the CUDA out of memory thing "
    "again, we saw it last week.\n>\n> Not OOM this time. Here's what the job printed:\n>\n"
    + "".join("> " + x + "\n" for x in LOG_TAIL.splitlines()) + ">\n> Alice\n",
])
def test_in_an_email_the_log_is_the_finding_not_what_the_people_said(tmp_path, text):
    p = tmp_path / "mail.txt"
    p.write_text(text)
    assert _ids(_run(p)[1]) == ["SIG006"]


def test_an_edit_note_and_a_fenced_config_in_an_issue_are_not_the_log(tmp_path):
    p = tmp_path / "issue.md"
    p.write_text("### Bug\n\nEDIT: fixed, it was the CUDA out of memory issue after all.\n\n```yaml\nretry_on:\n"
                 "  - \"GPU has fallen off the bus\"\n```\n\n```\n" + TRACE + "```\n")
    assert _ids(_run(p)[1]) == ["SIG013"]


CONFIG = ("# Training config\n# NOTE: if you get \"CUDA out of memory\", lower micro_batch_size\nmodel:\n"
          "  name: llama\n"
          "trainer:\n  ddp_timeout: 7200\n  retry_on_errors:\n    - \"NCCL error: unhandled system error\"\n"
          "    - \"RuntimeError: CUDA error: an illegal memory access was encountered\"\n"
          "alerts:\n  slack_on: [\"GPU has fallen off the bus\", \"Xid 79\"]\n")


def test_a_configuration_file_is_not_a_log(tmp_path):
    assert is_config(CONFIG)
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "train.log").write_text(TRACE)
    rc, doc, out = _run(tmp_path)
    assert _ids(doc) == ["SIG013"], out
    p = tmp_path / "config.yaml"
    assert _run(p)[0] == 2


def test_output_with_keys_and_values_is_not_a_configuration():
    describe = ("Name:         trainer-0\nNamespace:    ml\nContainers:\n  pytorch:\n    State:          Terminated\n"
                "      Reason:       OOMKilled\n      Exit Code:    137\n")
    meminfo = "MemTotal:       527765432 kB\nMemFree:        12345678 kB\nMemAvailable:   23456789 kB\nShmem: 1 kB\n"
    checklist = (FIX / "collect-env-eras" / "1.1-issue-template-checklist.txt").read_text()
    assert not is_config(describe) and not is_config(meminfo) and not is_config(log_view(checklist))


@pytest.mark.parametrize("sentence", [
    "i get CUDA out of memory on rank 0 after a few steps.",
    "NCCL reports \"unhandled system error\" on the second node.",
    "CUDA out of memory on rank 0 usually means the eval batch is too large",
    "EDIT: fixed, it was the CUDA out of memory issue after all.",
])
def test_sentence_shapes_of_a_writer_are_not_output(tmp_path, sentence):
    p = tmp_path / "issue.md"
    p.write_text("### Bug\n\n" + sentence + "\n\n```\n" + TRACE + "```\n")
    assert _ids(_run(p)[1]) == ["SIG013"]


@pytest.mark.parametrize("line, sid", [
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
     "driver is installed and running.", "SIG025"),
    ("terminate called after throwing an instance of 'c10::Error'", "SIG048"),
])
def test_a_message_pasted_without_a_fence_in_an_issue_is_still_read(tmp_path, line, sid):
    p = tmp_path / "issue.md"
    p.write_text("### Bug\n\nAfter a reboot of the node:\n\n" + line + "\n\n### Versions\n\n```\npip list\n```\n")
    assert sid in _read(_run(p)[1])


def test_a_report_that_only_quotes_what_the_writer_saw_is_read_as_a_lead(tmp_path):
    p = tmp_path / "forum.txt"
    p.write_text("Hello, I am trying to set up fastai in docker. It erred with the following message: \" RuntimeError: "
                 "DataLoader worker (pid 47) is killed by signal: Bus\nerror. It is possible that dataloader's workers "
                 "are out of shared\nmemory. Please try to raise your shared memory limit.\". Any help would be "
                 "appreciated. I am suspecting the image.\n\nThanks,\nBob\n")
    rc, doc, out = _run(p)
    f = next(f for f in doc["findings"] if f["rule_id"] == "SIG006")
    assert rc == 0 and f["severity"] == "warning" and "writer's words" in f["evidence"][0], out


def test_an_issue_titled_with_the_error_line_is_read(tmp_path):
    p = tmp_path / "issue.md"
    p.write_text("# misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n\n"
                 "I see this when running all_reduce_perf on two nodes; the log is attached as an image.\n\n"
                 "- NCCL 2.18.3\n- nccl-tests master\n")
    assert _ids(_run(p)[1]) == ["SIG009"]


SMI_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
              "NVIDIA driver is installed and running.")


@pytest.mark.parametrize("name, text, sid", [
    # output directly under the writer's sentence (no blank line)
    ("issue.md", "### Bug\n\nAfter the reboot I get this:\n" + SMI_FAILED + "\n\n### Env\n\n- OS: Ubuntu 22.04\n",
     "SIG025"),
    ("mail.txt", "Hi team,\n\nAfter the reboot I get this:\n" + SMI_FAILED + "\n\nThanks,\nBob\n", "SIG025"),
    # a reply quoting the original mail with its log
    ("reply.txt", "Hi Bob,\n\nI think it is the driver.\n\nOn Wed, Dec 4, 2024 at 10:02 AM Alice wrote:\n"
     "> Our job fails with:\n> [rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
     "SIG023"),
    # a traceback fenced as python, kubectl's YAML output fenced as yaml
    ("issue2.md", "### Bug\n\n```python\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n"
     "RuntimeError: CUDA error: an illegal memory access was encountered\n```\n", "SIG023"),
    ("issue3.md", "### Bug\n\nThe pod was killed:\n\n```yaml\nstatus:\n  containerStatuses:\n  - lastState:\n"
     "      terminated:\n        exitCode: 137\n        reason: OOMKilled\n```\n", "SIG067"),
    # an exception line that quotes names in backticks
    ("mail2.txt", "Hi all,\n\nwe got this on node 4:\n\ntriton.runtime.errors.OutOfResources: out of resource: shared "
     "memory, Required: 262144, Hardware limit: 232448. Reducing block sizes or `num_stages` may help.\n\nThanks\n",
     "SIG314"),
])
def test_real_output_among_the_writers_words_is_kept(tmp_path, name, text, sid):
    p = tmp_path / name
    p.write_text(text)
    assert sid in _read(_run(p)[1]), _run(p)[2]


def test_kubectl_yaml_output_is_not_a_configuration_file():
    assert not is_config("apiVersion: v1\nkind: Pod\nstatus:\n  containerStatuses:\n  - lastState:\n      terminated:\n"
                         "        reason: OOMKilled\n        exitCode: 137\n")


@pytest.mark.parametrize("prompt", ["anna@mbp ~ % ", "anna@node-07 ~/logs> ", "node-07:logs anna$ ", "bash-5.1$ ",
                                    "sh-5.1# ", "➜  logs git:(main) ", "❯ ", "PS C:\\Users\\anna\\logs> ",
                                    "C:\\Users\\anna\\logs>", "(venv) $ ", "[10:42:01] anna@node-07:~/logs$ "])
def test_a_command_typed_at_any_common_prompt_is_not_output(tmp_path, prompt):
    p = tmp_path / "session.txt"
    p.write_text(f"{prompt}grep -n 'CUDA out of memory' rank0.log\n" + TRACE)
    assert _ids(_run(p)[1]) == ["SIG013"]


def test_an_issue_with_a_job_script_and_a_quoted_error_reads_the_error_as_a_lead(tmp_path):
    """A Markdown issue whose only non-prose part is the job script (settings, not output): the message the writer
    quotes is read, at most a warning (ACEsuit/mace#435's shape: --gpus-per-task binds one GPU per task)."""
    p = tmp_path / "issue.md"
    p.write_text("**Describe the bug**\nAll ranks but `local_rank==0` fail with `RuntimeError: CUDA error: invalid "
                 "device ordinal`.\n\nslurm script used:\n\n```bash\n#!/bin/bash\n#SBATCH --ntasks-per-node=8\n"
                 "#SBATCH --gpus-per-task=1\n\nsrun python train.py --distributed\n```\n")
    rc, doc, out = _run(p)
    f = next(f for f in doc["findings"] if f["rule_id"] == "SIG065")
    assert f["severity"] == "warning" and "writer's words" in f["evidence"][0] and "--gpus-per-task" in f["remedy"]
