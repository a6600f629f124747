"""Logs saved through a collector carry its prefix on every line (kubectl --timestamps, the Kubernetes CRI log file,
journald, srun --label, docker compose): `check` reads them as the program printed them (parsers/_text.py
strip_line_prefixes), so tracebacks fold and multi-line messages match as they do without the prefix."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app
from gpudoctor.parsers._text import strip_line_prefixes

runner = CliRunner()
FIX = Path(__file__).parent / "fixtures" / "h200-fault-logs"

PREFIXES = {
    "kubectl --timestamps": "2026-12-04T12:00:00.123456789Z ",
    "CRI log file": "2026-12-04T12:00:00.123456789Z stderr F ",
    "journald": "Dec 04 12:00:00 gpu-node-3 python[4242]: ",
    "journald short-iso": "2026-12-04T12:00:00+0000 gpu-node-3 train.sh[4242]: ",
    "srun --label": " 12: ",
    "mpirun --tag-output": "[1,12]<stderr>:",
    "ray": "(RayTrainWorker pid=4321, ip=10.0.0.12) ",
    "kubectl --prefix": "[pod/trainer-worker-3/pytorch] ",
    "kubectl --prefix --timestamps": "[pod/trainer-worker-3/pytorch] 2026-12-04T12:00:00.123456789Z ",
    "docker compose": "trainer-1  | ",
}
UNKNOWN = '''Traceback (most recent call last):
  File "/workspace/train.py", line 88, in <module>
    main()
  File "/workspace/lib.py", line 12, in frobnicate
    raise WidgetError("the widget exploded")
lib.WidgetError: the widget exploded
'''


def _doc(tmp_path: Path, text: str) -> dict:
    p = tmp_path / "job.log"
    p.write_text(text)
    res = runner.invoke(app, ["check", str(p), "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)


def _prefixed(text: str, prefix: str) -> str:
    return "".join(prefix + line + "\n" for line in text.splitlines())


@pytest.mark.parametrize("name", PREFIXES)
def test_a_prefixed_traceback_folds_to_its_exception_line(tmp_path, name):
    doc = _doc(tmp_path, _prefixed(UNKNOWN, PREFIXES[name]))
    unexplained = next(f for f in doc["findings"] if f["rule_id"] == "SIG000")
    # srun's task id and Open MPI's rank are kept as torch's rank prefix
    assert [e.removeprefix("[rank12]: ") for e in unexplained["evidence"]] == ["lib.WidgetError: the widget exploded"]


@pytest.mark.parametrize("name", PREFIXES)
@pytest.mark.parametrize("log,sid", [("compile-no-c-compiler.log", "SIG327"), ("nccl-watchdog-timeout.log", "SIG022")])
def test_real_h200_fault_logs_behind_a_prefix_name_the_same_cause(tmp_path, name, log, sid):
    doc = _doc(tmp_path, _prefixed((FIX / log).read_text(), PREFIXES[name]))
    ids = {f["rule_id"] for f in doc["findings"] if f["severity"] == "error"}
    assert sid in ids and "SIG000" not in {f["rule_id"] for f in doc["findings"]}


def test_cri_partial_lines_are_joined():
    text = ("2026-12-04T12:00:00.1Z stderr P RuntimeError: CUDA error: an illegal memory \n"
            "2026-12-04T12:00:00.1Z stderr F access was encountered\n"
            "2026-12-04T12:00:00.2Z stdout F step 10\n")
    assert strip_line_prefixes(text).splitlines() == [
        "RuntimeError: CUDA error: an illegal memory access was encountered", "", "step 10"]  # line numbers kept


def test_a_match_after_joined_cri_lines_has_the_files_line_number(tmp_path):
    head = "".join(f"2026-12-04T12:00:00.1Z stderr P {'x' * 100}\n" for _ in range(5))
    text = head + "2026-12-04T12:00:00.1Z stderr F end\n" + \
        "2026-12-04T12:00:00.2Z stderr F RuntimeError: CUDA error: an illegal memory access was encountered\n"
    f = next(f for f in _doc(tmp_path, text)["findings"] if f["rule_id"] == "SIG023")
    assert f["data"]["first_line"] == 7


def test_srun_task_ids_name_the_ranks_of_a_finding(tmp_path):
    text = "".join(f"{r:>3}: step 10 loss 2.3\n" for r in range(8)) + \
        "  5: RuntimeError: CUDA error: an illegal memory access was encountered\n" + \
        "  6: [rank6]: RuntimeError: CUDA error: an illegal memory access was encountered\n"  # torchrun under srun
    f = next(f for f in _doc(tmp_path, text)["findings"] if f["rule_id"] == "SIG023")
    assert f["data"]["ranks"] == [5, 6]


def test_journald_of_a_unit_mixed_with_kernel_lines_is_read_both_ways(tmp_path):
    unit = "Dec 04 12:00:0{} gpu-node-3 python[4242]: "
    kern = "Dec 04 12:00:0{} gpu-node-3 kernel: "
    text = "".join(unit.format(i) + line + "\n" for i, line in enumerate(UNKNOWN.splitlines()[:3]))
    text += kern.format(4) + "NVRM: Xid (PCI:0000:19:00): 79, pid=4242, name=python, GPU has fallen off the bus.\n"
    text += kern.format(5) + "NVRM: GPU 0000:19:00.0: GPU has fallen off the bus.\n"
    text += "".join(unit.format(6) + line + "\n" for line in UNKNOWN.splitlines()[3:])
    assert "\n    raise WidgetError" in strip_line_prefixes(text)  # the unit's lines lose their prefix
    doc = _doc(tmp_path, text)
    assert any(f["rule_id"] == "LOG001" and f["data"].get("xid") == 79 for f in doc["findings"])


def test_kernel_lines_of_journalctl_keep_their_prefix_and_their_xid_is_read(tmp_path):
    text = ("Dec 04 12:00:00 gpu-node-3 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has "
            "fallen off the bus.\n"
            "Dec 04 12:00:01 gpu-node-3 kernel: NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n")
    assert strip_line_prefixes(text) == text
    assert "LOG001" in {f["rule_id"] for f in _doc(tmp_path, text)["findings"]}


def test_a_log_with_only_some_prefixed_lines_is_left_as_it_is():
    text = "0: first\nplain line\nanother plain line\nand one more\nlast\n"
    assert strip_line_prefixes(text) == text


def test_open_mpi_tagged_output_with_mpiruns_own_footer_names_the_rank(tmp_path):
    text = ("[1,0]<stdout>:step 10 loss 1.0\n[1,1]<stderr>:Traceback (most recent call last):\n"
            "[1,1]<stderr>:  File \"train.py\", line 20, in <module>\n[1,1]<stderr>:    hvd.allreduce(x)\n"
            "[1,1]<stderr>:RuntimeError: CUDA error: out of memory\n" + "-" * 74 + "\n"
            "Primary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the "
            "job has been aborted.\n" + "-" * 74 + "\n")
    doc = _doc(tmp_path, text)
    oom = next(f for f in doc["findings"] if f["rule_id"] == "SIG012")
    assert oom["data"]["ranks"] == [1] and "SIG000" not in {f["rule_id"] for f in doc["findings"]}


def test_a_healthy_service_log_from_journalctl_is_a_clean_report(tmp_path):
    """journalctl -u nvidia-fabricmanager of a healthy start: read (its prefix stripped), nothing wrong, exit 0."""
    import json

    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    p = tmp_path / "fm.log"
    p.write_text("Dec 04 06:05:40 hgx-node17 systemd[1]: Starting NVIDIA fabric manager service...\n"
                 "Dec 04 06:05:43 hgx-node17 nv-fabricmanager[5532]: Connected to 1 node.\n"
                 "Dec 04 06:05:48 hgx-node17 nv-fabricmanager[5532]: Successfully configured all the available GPUs "
                 "and NVSwitches to route NVLink traffic.\n"
                 "Dec 04 06:05:48 hgx-node17 systemd[1]: Started NVIDIA fabric manager service.\n")
    res = CliRunner().invoke(app, ["check", str(p), "--format", "json"])
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and doc["findings"] == [] and doc["snapshot"]["inputs"][0]["status"] == "read"
