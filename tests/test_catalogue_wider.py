"""Signatures for the messages a break-it pass of 2026-12-03 found uncovered (issue 14): other launchers' signal
exits, NCCL CUDA failures with their own cause, driver probe failures, container hook privileges, CDI, DCGM,
nvidia-smi failure outputs, NCCL RAS. Each line fills the format string named beside it (the entry's ``origin``
gives the source and releases); the benign lines are look-alikes that must stay quiet.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.parsers.signatures import match_signatures, unexplained_error_lines
from gpudoctor.rules import evaluate

K = "[ 7.204411] "
W = "node7:40112:40190 [2] "

LINES = [
    # a rank's signal as other launchers report it
    ("SIG047", "[2025-02-11 09:14:02,551] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
               "'train.py', '--local_rank=3'] exits with return code = -9"),                 # DeepSpeed launcher
    ("SIG006", "[ERROR] [launch.py:321:sigkill_handler] ['python', 'pretrain.py'] exits with return code = -7"),
    ("SIG049", "subprocess.CalledProcessError: Command '['/opt/venv/bin/python', 'train.py']' died with "
               "<Signals.SIGSEGV: 11>."),                                                    # accelerate launch
    ("SIG047", "mpirun noticed that process rank 6 with PID 0 on node gpu-12 exited on signal 9 (Killed)."),
    ("SIG048", "srun: error: gpu-node-04: task 5: Aborted (core dumped)"),
    # NCCL's CUDA failures that name their own cause
    ("SIG347", W + "transport/shm.cc:604 NCCL WARN Cuda failure 1 'invalid argument'"),
    ("SIG348", W + "enqueue.cc:1391 NCCL WARN Cuda failure 98 'invalid device function'"),
    ("SIG348", W + "enqueue.cc:1391 NCCL WARN Cuda failure 209 'no kernel image is available for execution on the "
                   "device'"),
    # older or other wordings of covered causes
    ("SIG033", W + "NCCL WARN Net : Socket creation failed : Address family not supported by protocol"),   # v2.4-2.8
    ("SIG031", W + "misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.4.0.12<45321> returned "
                   "113(No route to host) errno 115(Operation now in progress)"),                      # v2.20-2.23
    ("SIG427", W + "misc/socket.cc:815 NCCL WARN ncclSocketInit: connecting to address  with family 47104 is "
                   "neither AF_INET(2) nor AF_INET6(10)"),
    ("SIG079", "[rank0]: Failed to open libnvidia-ml.so.1"),
    ("SIG007", W + "misc/shmutils.cc:73 NCCL WARN Error: failed to create shared memory file /dev/shm/nccl-Qm21aB, "
                   "error No such file or directory (2)"),
    ("SIG316", "AssertionError: Expects tensor to be on the compute device cuda:3, was on cuda:0"),
    ("SIG316", "RuntimeError: Expects tensor to be on the compute device cuda:1"),
    ("SIG379", "AssertionError: Expects tensor to be on the compute device cuda:0, was on cpu"),  # left on the CPU
    ("SIG084", "RuntimeError: unable to open shared memory object </torch_3121_2889261840_997> in read-write mode: "
               "Too many open files (24)"),
    ("SIG075", "AssertionError: CUDA_HOME does not exist, unable to compile CUDA op(s)"),
    ("SIG040", "ConnectionError: Tried to launch distributed communication on port `29500`, but another process is "
               "utilizing it. Please specify a different port (such as using the `--main_process_port` flag or "
               "specifying a different `main_process_port` in your config file) and rerun your script."),
    ("SIG042", "[rank12]: RuntimeError: Connection reset by peer"),
    ("SIG102", "pynvml.NVMLError_ResetRequired: GPU requires restart"),
    ("SIG079", "pynvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found"),
    # driver, kernel
    ("SIG350", "ERROR: modpost: GPL-incompatible module nvidia-uvm.ko uses GPL-only symbol 'rcu_read_unlock_strict'"),
    ("SIG351", K + "NVRM: Can't find an IRQ for your NVIDIA card!"),
    ("SIG351", K + "NVRM: pci_enable_device failed, aborting"),
    ("SIG351", K + "NVRM: No address space to allocate resized BAR1."),
    ("SIG353", K + "NVRM: GPU 0000:c1:00.0: GPU does not have the necessary power cables connected."),
    ("SIG354", K + "nvidia-nvlink: nvlink_core_train_intranode_conns_from_swcfg_to_active: Unable to set link state "
                   "to ACTIVE for link NVIDIA GPU 0000:45:00.0:link2"),
    ("SIG355", K + "nvidia-peermem nv_get_p2p_free_callback:124 ERROR detected invalid context, skipping further "
                   "processing"),
    ("SIG356", K + "watchdog: BUG: soft lockup - CPU#12 stuck for 23s! [python3:88123]"),
    # container stack
    ("SIG357", "nvidia-container-cli: initialization error: privilege change failed: invalid argument"),
    ("SIG357", "nvidia-container-cli: mount error: failed to add device rules: unable to generate new device filter "
               "program from existing programs: unable to create new device filters program: load program: "
               "bpf_prog_query(BPF_CGROUP_DEVICE) failed: operation not permitted"),
    ("SIG358", 'level=error msg="failed to generate CDI spec: failed to create device CDI specs: failed to initialize '
               'NVML: ERROR_LIBRARY_NOT_FOUND"'),
    ("SIG359", 'msg="failed to create link [libcuda.so.1 /usr/lib64/libcuda.so]: failed to create symlink: file '
               'exists"'),
    # nvidia-smi, DCGM
    ("SIG360", "| N/A   ERR!    P0           ERR! /  400W |  40536MiB /  40960MiB |     ERR!      Default |"),
    ("SIG361", "WARNING: infoROM is corrupted at gpu 0000:3B:00.0"),
    ("SIG362", "The following GPUs could not be reset:\n  GPU 00000000:B7:00.0: In use by another client"),
    ("SIG363", "| Warning                   | GPU 2 had memory errors and row remappings are |\n"
               "|                           |  pending                                       |"),
    ("SIG363", "Detected 2 volatile double-bit ECC error(s) in GPU 5."),
    ("SIG364", "Error: Unable to connect to host engine. Host engine connection invalid/disconnected."),
    ("SIG365", "Detected 57 Replay NvLink errors on GPU 1's NVLink which exceeds threshold of 50"),
    # NCCL INFO that matters
    ("SIG366", W + "NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 801 "
                   "'operation not supported'. Proceeding without NVLS support."),
    ("SIG367", W + "NCCL INFO NET/Socket : Using [0]virbr0:192.168.122.1<0>"),
    ("SIG368", W + "NCCL INFO RAS declaring peer 10.0.3.44<41123> as DEAD; rasDeadPeersHash 0x9a1f"),
    ("SIG368", "DEAD\n  2 job processes are considered dead (unreachable via the RAS network)"),
    # second pass of 2026-12-03: older or other wordings of covered causes
    ("SIG414", "due to `NVIDIA GPU driver interface version 550.90.07 don't match with driver version 550.54.15`"),
    ("SIG405", "2018/01/19 06:12:44 Failed to start nvml with error:  could not load NVML library"),  # plugin 1.0-beta
    ("SIG405", "2019/03/04 10:12:55 Failed to initialize NVML: could not load NVML library."),
    ("SIG303", "ValueError: host not found: Name or service not known"),                      # TCPStore, torch <= 1.7
    ("SIG373", "RuntimeError: write(): fd 29 failed with Input/output error"),               # torch.save, 1.x-2.x
    ("SIG068", "RuntimeError: Lightning can't create new processes if CUDA is already initialized. Did you manually "
               "call `torch.cuda.*` functions, have moved the model to the device, or allocated memory on the GPU any "
               "other way?"),
    ("SIG012", "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCStorage.cu line=58 error=2 : out of memory"),
    ("SIG012", "[rank2]: RuntimeError: Triton Error [CUDA]: out of memory"),
    ("SIG015", "ValueError: Cuda is not available."),                                       # torchrun nproc=gpu
    ("SIG200", W + "init.cc:1722 NCCL WARN Cuda failure 'out of memory'"),
    # a GID table change (v2.4-v2.21 wording): SIG514, a note unless the collectives fail after it
    ("SIG514", W + "net_ib.cc:95 NCCL WARN NET/IB : Got async event : GID table change"),
]

QUIET = [
    W + "net_ib.cc:179 NCCL WARN NET/IB : mlx5_1:1 Got async error event: client reregistration",
    W + "NCCL INFO Bootstrap : Using ens5:10.0.1.17<0>",
    "  31 ranks have launched up to operation 51231",
    "=> => # WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.",
    "| N/A   34C    P0             69W /  700W |      1MiB /  81559MiB |      0%      Default |",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 3312851) of "
    "binary: /usr/bin/python3",
    "NCCL_DEBUG=WARN",
    "WARNING:torch.distributed.run:",
]


@pytest.mark.parametrize("sid,line", LINES, ids=[f"{s}-{i}" for i, (s, _) in enumerate(LINES)])
def test_format_string_instantiations_match(sid, line):
    assert sid in {h.id for h in match_signatures(line)}


@pytest.mark.parametrize("line", QUIET)
def test_lookalikes_stay_quiet(line):
    spans: list = []
    assert match_signatures(line, spans=spans) == []
    if "GID table" in line or "reregistration" in line or "docker build" in line or "=> =>" in line:
        assert unexplained_error_lines(line, spans) == []


def _findings(tmp_path, text: str) -> dict:
    p = tmp_path / "paste.txt"
    p.write_text(text)
    snap, errors = build_snapshot([str(p)])
    assert not errors
    return {f.rule_id: f for f in evaluate(snap).findings}


@pytest.mark.parametrize("cause,generic,text", [
    ("SIG347", {"SIG018", "SIG028"}, W + "transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not "
                                         "supported between these two devices'"),
    ("SIG348", {"SIG028"}, W + "enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'"),
    ("SIG351", {"SIG017"}, K + "NVRM: request_mem_region failed for 32M @ 0xfb000000. This can\n" + K +
     "NVRM: occur when a driver such as rivatv is loaded and claims\n" + K + "NVRM: ownership of the device's "
     "registers.\n" + K + "nvidia: probe of 0000:41:00.0 failed with error -1\n" + K +
     "NVRM: The NVIDIA probe routine failed for 1 device(s).\n" + K + "NVRM: None of the NVIDIA devices were "
     "initialized."),
    ("SIG353", {"SIG095"}, K + "NVRM: GPU 0000:17:00.0: GPU does not have the necessary power cables connected.\n"
     + K + "NVRM: GPU 0000:17:00.0: RmInitAdapter failed! (0x24:0x1c:1457)"),
    ("SIG357", {"SIG088"}, "docker: Error response from daemon: failed to create task for container: OCI runtime "
     "create failed: runc create failed: error running hook #0: exit status 1, stdout: , stderr: Auto-detected mode "
     "as 'legacy'\nnvidia-container-cli: initialization error: privilege change failed: operation not permitted: "
     "unknown."),
])
def test_the_specific_cause_leads_and_the_generic_finding_folds_under_it(tmp_path, cause, generic, text):
    got = _findings(tmp_path, text)
    assert cause in got, sorted(got)
    assert not generic & got.keys(), sorted(got)
    assert "SIG000" not in got, got.get("SIG000") and got["SIG000"].evidence


def test_an_informational_nvls_fallback_is_a_warning_not_the_fatal_error(tmp_path):
    got = _findings(tmp_path, W + "NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1073741824 "
                              ": CUDA error 401 'operation not permitted when stream is capturing'. Proceeding "
                              "without NVLS support.\n" + W + "NCCL INFO Init COMPLETE\n")
    assert got["SIG366"].severity == "warning" and not {"SIG214", "SIG057"} & got.keys()
    assert "fell back" in got["SIG366"].data["conclusion"]


def test_ras_names_the_rank_the_job_waits_for(tmp_path):
    got = _findings(tmp_path, "Communicator 0 (c0ffee) MISMATCH\n  Communicator ranks have different AllReduce "
                              "operation counts\n  15 ranks have launched up to operation 812\n  Rank 4 has launched "
                              "up to operation 811 -- GPU 4 managed by process 7711 on node gpu-b\n")
    c = got["SIG368"].data["conclusion"]
    assert "Rank 4" in c and "gpu-b" in c and "7711" in c


def test_a_launcher_signal_line_alone_is_a_paste_not_an_unknown_format(tmp_path):
    got = _findings(tmp_path, "[ERROR] [launch.py:321:sigkill_handler] ['python', 'train.py'] exits with return code "
                              "= -9\n")
    assert "SIG047" in got


@pytest.mark.parametrize("action,severity,fix", [
    ("Node Reboot Required", "error", "reboot"),
    ("Drain P2P", "error", "peer-to-peer"),
    ("None", "info", "no recovery"),
])
def test_xid_154_takes_the_severity_and_fix_of_the_action_it_names(tmp_path, action, severity, fix):
    got = _findings(tmp_path, f"[81234.5] NVRM: Xid (PCI:0000:9a:00): 154, GPU recovery action changed from 0x0 "
                              f"(None) to 0x2 ({action})\n")
    f = got["LOG001"]
    assert f.severity == severity and fix in f.remedy and action in f.remedy
    assert "`nvidia-smi -r -i <gpu>`) or reboot" not in f.remedy  # the driver's action, no generic ladder


def test_one_gpu_faulting_for_many_programs_is_pointed_at(tmp_path):
    lines = "".join(f"[{t}.1] NVRM: Xid (PCI:0000:db:00): 31, pid={p}, Ch 00000008, intr 00000000. MMU Fault: "
                    f"ENGINE GRAPHICS faulted @ 0x7fd7_90743000\n" for t, p in ((100, 4411), (200, 5120), (300, 7001)))
    assert any("3 different processes" in e for e in _findings(tmp_path, lines)["LOG001"].evidence)
    one = "".join(f"[{t}.1] NVRM: Xid (PCI:0000:db:00): 31, pid=4411, Ch 00000008\n" for t in (100, 200, 300))
    assert not any("different processes" in e for e in _findings(tmp_path, one)["LOG001"].evidence)


def test_a_quoted_paste_is_read_as_what_it_quotes(tmp_path):
    """A reply on GitHub or in an e-mail quotes the output with '> ' on every line: the quote markers go, the format
    is recognised (here nvidia-smi's table), and an unquoted text is left as it is."""
    from gpudoctor.parsers._text import unquote

    smi = (Path(__file__).parent / "fixtures" / "h200-text" / "nvidia-smi.txt").read_text()
    p = tmp_path / "reply.txt"
    p.write_text("".join(f"> {x}\n" if x.strip() else ">\n" for x in smi.splitlines()))
    snap, errors = build_snapshot([str(p)])
    assert not errors and snap.nvml is not None and snap.nvml.gpus
    assert unquote("a > b\nRuntimeError: x\n") == "a > b\nRuntimeError: x\n"


def test_a_full_dev_shm_is_the_shared_memory_finding_not_a_full_disk(tmp_path):
    got = _findings(tmp_path, "RuntimeError: unable to write to file </torch_4410_1862_0>: No space left on device (28)"
                              "\nOSError: [Errno 28] No space left on device\n")
    assert "SIG006" in got and "SIG374" not in got
    assert "SIG374" not in {h.id for h in match_signatures("ENOSPC while writing /dev/shm/nccl-AbC")}
