"""nvidia-bug-report.log(.gz): split into nvidia-bug-report.sh's sections, each diagnosed by its own parser; sections
that are not logs never give error findings. Fixture: tests/fixtures/bug-report/make_bug_report.py (real H200
captures inside the script's section layout)."""
import gzip

import pytest

from gpudoctor.parsers import bug_report as B
from gpudoctor.parsers import detect as D
from gpudoctor.parsers import stream
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate

SEP = "_" * 44


@pytest.fixture
def report(fix):
    return fix / "bug-report/nvidia-bug-report.log.gz"


def _findings(snap):
    return [f for f in evaluate(snap).findings if f.severity in ("error", "warning")]


def test_fixture_is_current(fix, report):
    import importlib.util

    spec = importlib.util.spec_from_file_location("mk", fix / "bug-report/make_bug_report.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    assert gzip.decompress(mk.build()) == gzip.decompress(report.read_bytes())


def test_sections_found(report):
    text = gzip.decompress(report.read_bytes()).decode()
    assert D.detect(text) == [D.BUG_REPORT]
    secs = {s.title: s for s in B.split_sections(text)}
    assert secs["/proc/driver/nvidia/version"].kinds == [D.DRIVER_VERSION]
    assert secs["/proc/meminfo"].kinds == [D.MEMINFO]
    assert secs["/usr/bin/nvidia-smi --query"].kinds == [D.SMI_Q]
    assert secs["/usr/bin/nvidia-smi --query"].body.lstrip().startswith("==============NVSMI LOG")
    assert secs["/usr/bin/nvidia-smi --query --unit"].kinds == []  # its own sub-command, not merged into -q
    assert secs["/usr/bin/lspci -nnDvvvxxxx"].kinds == [D.LSPCI]
    assert secs["/usr/bin/lspci -nntv"].kinds == []  # the tree has no link states
    assert secs["dmesg:"].kinds == [D.DMESG]
    # each log the kernel scan grepped is its own source
    assert secs["/var/log/kern.log"].kinds[0] == D.DMESG and secs["journalctl -b -1"].kinds[0] == D.DMESG
    assert "*** ls:" not in secs["/proc/meminfo"].body
    # configuration and the script's own tables: never read
    assert secs["/etc/nvidia/nvidia-application-profiles-rc.d/50-training.json"].kinds == []
    assert secs["/proc/driver/nvidia/params"].kinds == []


def test_facts_extracted(report):
    snap, errors = build_snapshot([str(report)])
    assert errors == []
    [inp] = snap.inputs
    assert inp.kinds[0] == D.BUG_REPORT and inp.note is None
    assert {D.SMI_Q, D.LSPCI, D.DMESG, D.MEMINFO, D.DRIVER_VERSION} <= set(inp.kinds)
    nv = snap.nvml
    assert nv.driver_version == "580.159.04" and nv.cuda_driver_version == "13.0"
    assert nv.kernel_module.startswith("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04")
    assert [g.name for g in nv.gpus] == ["NVIDIA H200"] and nv.gpus[0].persistence_mode is True
    assert snap.memory.total_bytes > 100 * 2**30
    assert snap.host.kernel == "6.12.41" and snap.host.arch == "x86_64"
    assert snap.topology is not None and "lspci" in snap.topology.source


def test_xids_diagnosed_once_each(report):
    snap, _ = build_snapshot([str(report)])
    # Xid 79 is in kern.log and the previous boot's journal, Xid 13 in kern.log, journal -b 0 and dmesg: one each
    assert sorted((x.xid, x.pci_bus_id) for x in snap.logs.xids) == [(13, "0000:00:06"), (79, "0000:00:06")]
    found = {(f.rule_id, f.data.get("xid")) for f in _findings(snap)}
    assert ("LOG001", 79) in found
    lost = next(f for f in _findings(snap) if f.rule_id == "LOG001" and f.data["xid"] == 79)
    assert lost.severity == "error" and lost.data["count"] == 1
    assert lost.data["follow_on"] == {13: 1}  # the process's Xid 13 on the GPU that fell off: listed with the 79


def test_no_false_errors_from_sections_that_are_not_logs(report):
    snap, _ = build_snapshot([str(report)])
    assert snap.logs.error_lines == []  # "CUDA error 999", "Traceback", "NCCL WARN" of the config file: quiet
    ids = {f.rule_id for f in _findings(snap)}
    assert ids <= {"LOG001", "SIG011"}, ids  # only the Xids (SIG011: fallen off the bus, in the kernel logs)
    hit = next(h for h in snap.logs.signatures if h.id == "SIG011")
    assert all("kernel:" in line or line.startswith("[") for line in hit.lines)
    # kern.log and the previous boot's journal quote the same two lines: counted from one of them
    assert hit.count == 2


def test_a_config_file_alone_in_a_bug_report_stays_quiet(tmp_path):
    text = (f"{SEP}\n\nStart of NVIDIA bug report log file.\n\nnvidia-bug-report.sh Version: 36417460\n\n"
            f"{SEP}\n\n*** /etc/modprobe.d/nvidia.conf\n*** ls: -rw-r--r-- 1 root root 90 2026-11-29 /etc/...\n"
            "# error: fatal: CUDA error: out of memory -- comment of a config file\n"
            "options nvidia NVreg_RestrictProfilingToAdminUsers=0\n\n"
            f"{SEP}\n\nSkipping: nvidia-debugdump output\nnvidia-debugdump not found\n\n"
            f"{SEP}\n\nError: mst status\nmst: command failed\nResolution: Contact NVIDIA for support\n\n"
            f"{SEP}\n\nEnd of NVIDIA bug report log file.\n")
    p = tmp_path / "nvidia-bug-report.log"
    p.write_text(text)
    snap, errors = build_snapshot([str(p)])
    assert errors == [] and snap.inputs[0].kinds == [D.BUG_REPORT]
    assert snap.logs.signatures == [] and snap.logs.error_lines == [] and snap.logs.xids == []
    assert not _findings(snap)


def test_failed_nvml_in_the_bug_report_wins_over_the_driver_version_file(tmp_path):
    text = (f"{SEP}\n\n*** /proc/driver/nvidia/version\n"
            "*** ls: -r--r--r-- 1 root root 0 x /proc/driver/nvidia/version\n"
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
            "GCC version:  gcc version 11.4.0\n\n"
            f"{SEP}\n\n/usr/bin/nvidia-smi --query\n\nFailed to initialize NVML: Driver/library version mismatch\n"
            "NVML library version: 550.54\n\n")
    p = tmp_path / "nvidia-bug-report.log"
    p.write_text(text)
    snap, _ = build_snapshot([str(p)])
    assert snap.nvml.available is False and "mismatch" in (snap.nvml.error or "").lower()
    assert "DRV001" in {f.rule_id for f in _findings(snap)}


def test_large_bug_report_in_chunks(report, monkeypatch, tmp_path):
    """A bug report larger than one piece: later pieces continue the section they start in."""
    whole, _ = build_snapshot([str(report)])
    monkeypatch.setattr(stream, "WHOLE_BYTES", 4000)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 3000)
    snap, errors = build_snapshot([str(report)])
    assert errors == [] and len(snap.inputs) == 1
    assert sorted(x.xid for x in snap.logs.xids) == sorted(x.xid for x in whole.logs.xids)
    assert snap.nvml.driver_version == "580.159.04" and snap.logs.error_lines == []
    # SIG011 (fallen off the bus) is reported inside Xid 79's finding
    assert {f.rule_id for f in _findings(snap)} == {"LOG001"} and snap.inputs[0].note is None


def test_old_layout_without_ls_lines_and_with_kernel_scan(tmp_path):
    """The 3xx/4xx script: 'nvidia-smi --query' sections, `lspci -d "10de:*" -v -xxx` (no link states: not read)."""
    text = (f"{SEP}\n\nStart of NVIDIA bug report log file.\n\nnvidia-bug-report.sh Version: 27505028\n\n"
            "uname: Linux gpu01 4.15.0-142-generic #146-Ubuntu SMP Tue Apr 13 01:11:19 UTC 2021 x86_64 x86_64 x86_64 "
            "GNU/Linux\n\n"
            f"{SEP}\n\n/usr/bin/lspci -d \"10de:*\" -v -xxx\n\n"
            "3b:00.0 3D controller: NVIDIA Corporation GV100GL [Tesla V100 SXM2 32GB] (rev a1)\n"
            "\tCapabilities: [68] Express Endpoint, MSI 00\n\n"
            f"{SEP}\n\nScanning kernel log files for NVIDIA kernel messages:\n\n  /var/log/kern.log:\n"
            "Mar  3 10:22:31 gpu01 kernel: [ 9123.4] NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=python, "
            "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, "
            "subpartition 0.\n\n"
            f"{SEP}\n\nEnd of NVIDIA bug report log file.\n")
    p = tmp_path / "nvidia-bug-report.log.gz"
    p.write_bytes(gzip.compress(text.encode()))
    snap, errors = build_snapshot([str(p)])
    assert errors == [] and [x.xid for x in snap.logs.xids] == [48]
    assert snap.host.kernel == "4.15.0-142-generic" and snap.inputs[0].note is None
    assert ("LOG001", 48) in {(f.rule_id, f.data.get("xid")) for f in _findings(snap)}


def test_proc_driver_version_alone():
    from gpudoctor.parsers.host_text import parse_proc_driver_version

    for line, ver in [("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
                       "535.104.05"),
                      ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  550.54.15  Release Build  "
                       "(dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:33:40 UTC 2024", "550.54.15"),
                      ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  390.157  Wed Oct 12 09:19:07 UTC 2022",
                       "390.157")]:
        assert D.DRIVER_VERSION in D.detect(line + "\nGCC version:  gcc version 9.4.0\n")
        assert parse_proc_driver_version(line).driver_version == ver
    # a dmesg line that quotes the module's banner is a kernel log, not the version file
    assert D.DRIVER_VERSION not in D.detect("[    0.55] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05\n")


def test_nvml_mismatch_with_library_version_line_is_nvidia_smi_output():
    """nvidia-smi R535+ follows the mismatch message with 'NVML library version: X' (the whole output)."""
    from gpudoctor.parsers.nvidia_smi import parse_table

    text = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.54\n"
    assert D.SMI in D.detect(text)
    assert parse_table(text).available is False
    assert D.SMI not in D.detect(text + "Traceback (most recent call last):\n")  # more than nvidia-smi's output


def test_old_script_version_path_and_a_missing_module(tmp_path):
    """3xx/4xx scripts append /proc/driver/nvidia/./version (one entry per module instance); when that file does not
    exist the NVIDIA kernel module was not loaded: DRV001, with nvidia-smi's own failure first when it is there."""
    ok = (f"{SEP}\n\n*** /proc/driver/nvidia/./version\n"
          "*** ls: -r--r--r-- 1 root root 0 x /proc/driver/nvidia/./version\n"
          "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Oct 27 21:21:55 UTC 2021\n\n")
    p = tmp_path / "a.log"
    p.write_text(ok)
    snap, errors = build_snapshot([str(p)])
    assert errors == [] and snap.nvml.driver_version == "470.82.01"
    missing = (f"{SEP}\n\nStart of NVIDIA bug report log file.\n\n"
               f"{SEP}\n\n*** /proc/driver/nvidia/./version does not exist\n\n"
               f"{SEP}\n\n*** /proc/driver/nvidia/params does not exist\n\n")
    p.write_text(missing)
    snap, errors = build_snapshot([str(p)])
    assert errors == [] and snap.nvml.available is False and "not loaded" in snap.nvml.error
    drv = next(f for f in _findings(snap) if f.rule_id == "DRV001")
    assert any("absent" in e for e in drv.evidence)
    smi = f"{SEP}\n\n/usr/bin/nvidia-smi --query\n\nFailed to initialize NVML: Driver/library version mismatch\n\n"
    p.write_text(missing + smi)
    snap, _ = build_snapshot([str(p)])
    assert "mismatch" in snap.nvml.error.lower()


def test_text_pasted_before_the_report_is_read_as_text(tmp_path):
    text = ("my job died with:\nRuntimeError: CUDA error: an illegal memory access was encountered\n\n"
            f"{SEP}\n\nStart of NVIDIA bug report log file.\n\nnvidia-bug-report.sh Version: 36417460\n\n"
            f"{SEP}\n\n*** /etc/modprobe.d/nvidia.conf\n*** ls: x\n# error: CUDA error: out of memory\n\n")
    p = tmp_path / "paste.txt"
    p.write_text(text)
    snap, errors = build_snapshot([str(p)])
    assert errors == [] and snap.inputs[0].kinds[0] == D.BUG_REPORT
    quoted = [line for h in snap.logs.signatures for line in h.lines] + snap.logs.error_lines
    assert any("illegal memory access" in q for q in quoted)
    assert not any("out of memory" in q for q in quoted)  # the config file's comment stays quiet
