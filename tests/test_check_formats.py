"""`gpudoctor check` on the forms one kind of text takes: kernel logs with every timestamp style (dmesg, dmesg -T,
dmesg -x, dmesg -r, journalctl -k / -o short-iso, syslog), a bare `echo $LD_LIBRARY_PATH`, env dumps whole and
excerpted, a lone PyTorch UserWarning, torchrun tracebacks with [rankN]: / [default0]: / [role3]: prefixes."""
import pytest

from gpudoctor.parsers import detect as D
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate

# the driver's Xid line (open-gpu-kernel-modules, nvErrorLog: "Xid (PCI:%04x:%02x:%02x): %d, ...")
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."


def _check(tmp_path, text, name="in.txt"):
    p = tmp_path / name
    p.write_text(text)
    snap, errors = build_snapshot([str(p)])
    return snap, errors, (evaluate(snap) if snap is not None else None)


@pytest.mark.parametrize("prefix", [
    "",                                              # a bare line (grep NVRM)
    "[ 8123.456789] ",                               # dmesg
    "[Tue Dec  1 12:00:00 2026] ",                   # dmesg -T
    "<4>[ 8123.456789] ",                            # dmesg -r
    "kern  :warn  : [ 8123.456789] ",                # dmesg -x
    "Dec 01 12:00:00 gpu01 kernel: ",                # journalctl -k
    "2026-12-01T12:00:00+0000 gpu01 kernel: ",       # journalctl -o short-iso
    "2026-12-01T12:00:00.123456+00:00 gpu01 kernel: ",  # journalctl -o short-iso-precise
    "Dec  1 12:00:00 gpu01 kernel: [ 8123.456789] ",  # /var/log/kern.log, syslog
    "[ 8123.456789] gpu01 kernel: ",                 # journalctl -o short-monotonic
    "2026-12-01T12:00:00,123456+00:00 ",             # dmesg --time-format iso
    "<4>1 2026-12-01T12:00:00.123456+00:00 gpu01 kernel - - - ",  # RFC 5424 syslog (rsyslog forwarding)
])
def test_kernel_log_every_timestamp_style(tmp_path, prefix):
    text = f"{prefix}{XID}\n{prefix}NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
    assert D.DMESG in D.detect(text)
    snap, errors, rep = _check(tmp_path, text)
    assert errors == []
    assert [(x.xid, x.pci_bus_id) for x in snap.logs.xids] == [(79, "0000:3b:00")]
    lost = [f for f in rep.findings if f.rule_id == "LOG001"]
    assert lost and lost[0].severity == "error"


def test_kernel_log_without_an_nvidia_line_is_not_a_kernel_log():
    assert D.DMESG not in D.detect("[    0.000000] Linux version 6.8.0-63-generic\n[    1.2] ACPI: bus type PCI\n")


def test_bare_ld_library_path(tmp_path):
    value = "/usr/local/cuda/lib64:/usr/local/nvidia/lib:/usr/local/nvidia/lib64"
    snap, errors, rep = _check(tmp_path, value + "\n")
    assert errors == [] and snap.inputs[0].kinds == [D.PATH_VALUE]
    assert snap.env.variables == {"LD_LIBRARY_PATH": value}
    assert snap.known_fields["env"] == ["LD_LIBRARY_PATH"]  # one variable: the rest of the environment is unknown
    st = {o.rule_id: o.status for o in rep.outcomes}
    assert st["NCL005"] == "not_assessed" and st["NCL006"] == "not_assessed"


def test_echo_line_names_the_variable(tmp_path):
    snap, errors, _ = _check(tmp_path, "$ echo $LD_LIBRARY_PATH\n/opt/nccl/build/lib:/usr/local/cuda-12.1/compat\n")
    assert errors == [] and snap.env.variables["LD_LIBRARY_PATH"] == "/opt/nccl/build/lib:/usr/local/cuda-12.1/compat"


def test_a_path_list_of_unknown_variable_is_one_clear_error(tmp_path):
    snap, errors, _ = _check(tmp_path, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin\n")
    assert snap is None and len(errors) == 1 and "\n" not in errors[0] and "which variable" in errors[0]


def test_env_whole_and_excerpt(tmp_path):
    whole = "HOME=/root\nPATH=/usr/bin:/bin\nHOSTNAME=gpu01\nNCCL_DEBUG=INFO\n"
    snap, _, rep = _check(tmp_path, whole)
    assert "env" not in snap.known_fields  # the whole environment: an unset variable is known unset
    assert {o.rule_id: o.status for o in rep.outcomes}["NCL006"] == "pass"
    snap, _, rep = _check(tmp_path, "NCCL_DEBUG=INFO\nNCCL_P2P_DISABLE=1\n")
    assert snap.known_fields["env"] == ["NCCL_DEBUG", "NCCL_P2P_DISABLE"]
    st = {o.rule_id: o.status for o in rep.outcomes}
    assert st["NCL005"] == "fail" and st["NCL006"] == "not_assessed"  # CUDA_LAUNCH_BLOCKING: not in the excerpt


def test_lone_torch_user_warning(tmp_path):
    text = ("/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:128: UserWarning: CUDA initialization: "
            "The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by "
            "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
            "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
            "version of the CUDA driver. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n")
    assert D.detect(text) == [D.ERRORS]
    snap, errors, rep = _check(tmp_path, text)
    assert errors == [] and "SIG002" in {f.rule_id for f in rep.findings}
    # a Python warning no signature knows is still a readable input, not "unknown format"
    snap, errors, _ = _check(tmp_path, "train.py:12: UserWarning: this overload is deprecated\n  x.add_(1, y)\n")
    assert errors == [] and snap.inputs[0].kinds == [D.ERRORS]


TRACE = ('Traceback (most recent call last):\n  File "/workspace/train.py", line 30, in <module>\n    main()\n'
         '  File "/workspace/train.py", line 22, in main\n    return step(x)\n')


@pytest.mark.parametrize("prefix", ["[rank1]:", "[default0]:", "[trainer3]:"])
def test_torchrun_prefixed_traceback(tmp_path, prefix):
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 GiB. GPU 0 has a total capacity of "
           "79.10 GiB of which 78.52 GiB is free. Including non-PyTorch memory, this process has 592.00 MiB memory "
           "in use.")
    text = "".join(f"{prefix}{line}\n" for line in (TRACE + oom).split("\n"))
    snap, errors, rep = _check(tmp_path, text)
    assert errors == [] and "SIG012" in {h.id for h in snap.logs.signatures}
    # an unknown exception: only its own line is an unexplained error, never the traceback's frame lines
    err = "ValueError: shapes (3,4) and (5,6) not aligned"
    text = "".join(f"{prefix}{line}\n" for line in (TRACE + err).split("\n"))
    snap, _, _ = _check(tmp_path, text)
    assert snap.logs.error_lines == [f"{prefix}ValueError: shapes (3,4) and (5,6) not aligned"]


def test_prometheus_is_not_healthy_when_an_input_was_rejected(tmp_path):
    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    ok = tmp_path / "ok.log"
    ok.write_text("step 10 loss 2.31\nNCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
    bad = tmp_path / "core.bin"
    bad.write_bytes(b"\x00\x01\x02" * 20)
    res = CliRunner().invoke(app, ["check", str(ok), str(bad), "--format", "prometheus"])
    assert res.exit_code == 2 and "gpudoctor_healthy 0" in res.output and "gpudoctor_inputs_rejected 1" in res.output
