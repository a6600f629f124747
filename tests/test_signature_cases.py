"""A message that prints its errno, signal, device set or versions is diagnosed by that value (rules/signatures.toml
``[[signature.cases]]``, issue 14 item 2), lines that only quote an error are not errors, and text that is a log
without an error in it is diagnosed instead of refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudoctor.cli.app import app

runner = CliRunner()


def _findings(tmp_path: Path, text: str) -> list[dict]:
    p = tmp_path / "paste.txt"
    p.write_text(text)
    res = runner.invoke(app, ["check", str(p), "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    return json.loads(res.stdout)["findings"]


def _one(found: list[dict], rule: str) -> dict:
    return next(f for f in found if f["rule_id"] == rule)


# c10d socket.cpp: "The client socket has failed to connect to [{}]:{} (errno: {} - {})."
@pytest.mark.parametrize("errno, reason, needle", [
    (111, "Connection refused", "nothing listening"),
    (113, "No route to host", "firewall"),
    (101, "Network is unreachable", "firewall"),
    (110, "Connection timed out", "timed out"),
])
def test_the_connect_errno_names_the_cause(tmp_path, errno, reason, needle):
    f = _one(_findings(tmp_path, f"[W socket.cpp:464] [c10d] The client socket has failed to connect to "
                                 f"[gpu-node-0]:29500 (errno: {errno} - {reason}).\n"), "SIG039")
    assert needle in f["title"]


@pytest.mark.parametrize("line, needle", [
    ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 1", "SIGHUP"),
    ("[2025-01-02 10:00:00,000] torch.distributed.elastic.agent.server.api: [WARNING] Received Signals.SIGHUP death "
     "signal, shutting down workers", "SIGHUP"),
    ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 2", "SIGINT"),
    ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 15", "termination"),
])
def test_the_signal_names_who_stopped_torchrun(tmp_path, line, needle):
    assert needle in _one(_findings(tmp_path, line + "\n"), "SIG113")["title"]


DDP_DEV = ("ValueError: DistributedDataParallel device_ids and output_device arguments only work with "
           "single-device/multiple-device GPU modules or CPU modules, but got device_ids [0], output_device 0, and "
           "module parameters {{{params}}}.\n")


@pytest.mark.parametrize("params, needle", [
    ("device(type='cuda', index=0), device(type='cuda', index=1)", "split over several GPUs"),
    ("device(type='cpu')", "still on the CPU"),
])
def test_the_device_set_names_the_ddp_mistake(tmp_path, params, needle):
    assert needle in _one(_findings(tmp_path, DDP_DEV.format(params=params)), "SIG055")["title"]


WARN = ("UserWarning: \n    Found GPU0 {name} which is of cuda capability {cc}.\n    Minimum and Maximum cuda "
        "capability supported by this version of PyTorch is\n    (7.0) - (12.0)\n")


@pytest.mark.parametrize("name, cc, needle, severity", [
    ("Tesla P100-PCIE-16GB", "6.0", "too old", "warning"),
    ("NVIDIA GB10", "12.1", "same architecture family", "warning"),
    ("NVIDIA Future GPU", "13.0", "newer than", "warning"),
])
def test_the_capability_range_warning_says_which_way(tmp_path, name, cc, needle, severity):
    f = _one(_findings(tmp_path, WARN.format(name=name, cc=cc)), "SIG438")
    assert needle in f["title"] and f["severity"] == severity


def test_a_gpu_below_the_range_with_no_kernel_image_is_one_error(tmp_path):
    found = _findings(tmp_path, WARN.format(name="Tesla P100-PCIE-16GB", cc="6.0")
                      + "RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    ids = [f["rule_id"] for f in found if f["rule_id"].startswith("SIG")]
    assert "SIG001" not in ids and _one(found, "SIG438")["severity"] == "error"


def test_could_not_load_library_is_read_by_what_is_missing(tmp_path):
    found = _findings(tmp_path, "Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open "
                                "shared object file: No such file or directory\n")
    assert "/usr/lib/wsl/lib" in _one(found, "SIG431")["remedy"]
    assert "SIG072" not in [f["rule_id"] for f in found]  # no version mismatch is in the text


def test_a_quoted_error_in_an_info_line_is_not_an_error(tmp_path):
    found = _findings(tmp_path, '2025-05-21 08:00:02 | INFO | error_handling: on "CUDA error: out of memory" retry '
                                'with batch/2\n2025-05-21 08:13:52 | INFO | OOM retries so far: 0, CUDA errors: 0\n')
    assert not [f for f in found if f["severity"] in ("error", "warning")]
    assert "SIG000" not in [f["rule_id"] for f in found]


@pytest.mark.parametrize("text", [
    "fail to new train...e= NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, unhandled system error\n",
    "epoch 0 | batch 50/50 | loss 1.6493\n[train] no CUDA errors in 50 batches\n",
    "[W1203 12:00:00.123] inductor: skipping cudagraphs due to mutated inputs\n",
])
def test_log_text_without_a_known_format_is_diagnosed_not_refused(tmp_path, text):
    p = tmp_path / "paste.txt"
    p.write_text(text)
    assert runner.invoke(app, ["check", str(p)]).exit_code in (0, 1)


@pytest.mark.parametrize("error, needle", [
    ("Unknown Error", "device access was lost"),
    ("Insufficient Permissions", "device nodes"),
])
def test_nvml_failures_that_are_not_a_missing_driver(tmp_path, error, needle):
    f = _one(_findings(tmp_path, f"$ nvidia-smi\nFailed to initialize NVML: {error}\n"), "DRV001")
    assert needle in f["title"] and "Install the NVIDIA data-center driver" not in f["remedy"]


def test_a_gpu_blamed_xid_gives_the_reset_then_rma_ladder(tmp_path):
    f = _one(_findings(tmp_path, "[12345.678] NVRM: Xid (PCI:0000:3b:00): 62, pid=1234, name=python, 0000\n"),
             "LOG001")
    assert f["remedy"].startswith("Drain the node") and "RMA" in f["remedy"]


def test_an_ipv6_loopback_retry_warning_is_not_an_error(tmp_path):
    f = _one(_findings(tmp_path, "[W socket.cpp:663] [c10d] The client socket has failed to connect to "
                                 "[localhost]:29500 (errno: 99 - Cannot assign requested address).\n"), "SIG039")
    assert f["severity"] == "info" and "IPv6" in f["title"]


_V6 = ("[W1204 04:26:10.5 socket.cpp:768] [c10d] The IPv6 network addresses of (trainer-master-0.invalid, 29500) "
       "cannot be retrieved (gai error: -2 - Name or service not known).\n")


def test_a_lone_ipv6_lookup_failure_is_info_only(tmp_path):
    """Windows and IPv4-only hosts print it for a name that later connects: no error without a connect failure."""
    f = _one(_findings(tmp_path, _V6), "SIG303")
    assert f["severity"] == "info"


def test_an_ipv6_lookup_failure_then_a_connect_timeout_is_the_unresolvable_host(tmp_path):
    """torch >= 2.x looks the name up as IPv6 with IPv4 mapped in: the failed lookup is why the connect timed out."""
    found = _findings(tmp_path, _V6 + "torch.distributed.DistNetworkError: The client socket has timed out after "
                                      "30000ms while trying to connect to (trainer-master-0.invalid, 29500).\n")
    f = _one(found, "SIG303")
    assert f["severity"] == "error" and "does not resolve" in f["title"]


def test_an_invalid_ordinal_with_mig_devices_names_mig(tmp_path):
    """Two MIG UUIDs in CUDA_VISIBLE_DEVICES for torchrun --nproc_per_node=2 (pytorch/pytorch#130181 class)."""
    found = _findings(tmp_path, "$ CUDA_VISIBLE_DEVICES=MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f,MIG-cba663e8-9bed-"
                                "5b25-b243-5985ef7c9beb torchrun --nproc_per_node=2 train.py\n[rank1]: RuntimeError: "
                                "CUDA error: invalid device ordinal\n")
    assert any("MIG is in use" in line for line in _one(found, "SIG065")["evidence"])


def test_an_unhandled_system_error_in_a_container_names_the_container_causes(tmp_path):
    found = _findings(tmp_path, "$ docker run --gpus all -it img torchrun --nproc_per_node 4 train.py\n"
                                "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, "
                                "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n")
    assert any("--ipc=host" in e for e in _one(found, "SIG008")["evidence"])


@pytest.mark.parametrize("line, rule, needle", [
    # InfiniBand: the event or errno names the failure (NCCL ibvwrap.cc / net_ib)
    ("node4:77:95 [2] misc/ibvwrap.cc:291 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on "
     "dev mlx5_0:1, curr state INIT, next state RTR", "SIG035", "unreachable"),
    ("dgx-b07:55120:55301 [3] misc/ibvwrap.cc:206 NCCL WARN Call to ibv_modify_qp failed with error Connection timed "
     "out errno 110", "SIG035", "unreachable"),
    ("node4:77:95 [2] misc/ibvwrap.cc:291 NCCL WARN Call to ibv_modify_qp failed with 22 Invalid argument, on dev "
     "mlx5_1:1", "SIG035", "GID index"),
    ("gpu017:1:2 [6] transport/net_ib/common.cc:140 NCCL WARN NET/IB : mlx5_6:1 async fatal event on QP (0x7f2c) "
     "qpn=18822: local work queue catastrophic error", "SIG035", "queue pair"),
    ("gpu017:1:2 [6] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_6:1 async fatal event: local catastrophic error",
     "SIG035", "HCA itself failed"),
    # which memory or device the message names
    ("RuntimeError: Attempting to deserialize object on CUDA device 3 but torch.cuda.device_count() is 1. Please use "
     "torch.load with map_location to map your storages to an existing device.", "SIG065", "map_location"),
    ("pod-0:311:520 [3] misc/utils.cc:271 NCCL WARN misc/utils.cc:258 Unrecoverable error detected: "
     "malloc(size=268435456) returned null.", "SIG200", "host memory"),
])
def test_the_message_names_the_failing_part(tmp_path, line, rule, needle):
    assert needle in _one(_findings(tmp_path, line + "\n"), rule)["title"]


@pytest.mark.parametrize("rule", ["LOG007", "LOG008", "LOG009", "LOG010", "LOG011", "NCL011", "TRC006", "GPU010",
                                  "TOP006"])
def test_the_rules_added_for_issue_14_say_not_assessed_without_their_facts(tmp_path, rule):
    """An error text with none of the facts these rules read (no NCCL channel or 'Using network' lines, no watchdog
    SeqNum, no nccl-tests run, no package list, no GPU facts): never 'pass'."""
    p = tmp_path / "paste.txt"
    p.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    doc = json.loads(runner.invoke(app, ["check", str(p), "--format", "json"]).stdout)
    assert next(o for o in doc["outcomes"] if o["rule_id"] == rule)["status"] == "not_assessed"


# NCCL src/misc/socket.cc ncclSocketInit: "connecting to address %s with family %d is neither AF_INET(%d) nor
# AF_INET6(%d)"; the cause is read from the family and from NCCL_SOCKET_IFNAME in the same inputs
AF = "h2:1958:2011 [3] misc/socket.cc:815 NCCL WARN ncclSocketInit: connecting to address  with family {fam} is " \
     "neither AF_INET(2) nor AF_INET6(10)\n"


@pytest.mark.parametrize("before, fam, needle", [
    ("h2:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens9\n", 59936, "NCCL_SOCKET_IFNAME=ens9"),
    ("", 1, "AF_UNIX"),
    ("", 33022, "interface never found, or different NCCL builds"),
])
def test_an_unreadable_peer_address_is_read_with_the_interface_setting(tmp_path, before, fam, needle):
    assert needle in _one(_findings(tmp_path, before + AF.format(fam=fam)), "SIG427")["title"]


BARRIER = ("[rank1]:[W911 14:02:40.1 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 1]  using GPU 0 to perform "
           "barrier as devices used by this process are currently unknown. This can potentially cause a hang if this "
           "rank to GPU mapping is incorrect.\n")
HANG = ("[rank1]:[E911 14:12:40.8 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
        "milliseconds before timing out.\n")


def test_a_guessed_barrier_gpu_is_the_cause_only_when_a_collective_hung(tmp_path):
    assert _one(_findings(tmp_path, BARRIER), "SIG388")["severity"] == "info"
    found = _findings(tmp_path, BARRIER + HANG)
    assert _one(found, "SIG388")["severity"] == "error" and found[0]["rule_id"] == "SIG388"


ACC = ("The following values were not passed to `accelerate launch` and had defaults used instead:\n"
       "\t`--num_processes` was set to a value of `1`\n")


def test_one_accelerate_process_is_a_warning_where_the_inputs_list_several_gpus(tmp_path):
    assert _one(_findings(tmp_path, ACC), "SIG456")["severity"] == "info"
    gpus = "".join(f"GPU {i}: NVIDIA A100-SXM4-80GB (UUID: GPU-{i}a7e3b2c-8c44-2f19-b0a1-3c2d4e5f6a0{i})\n"
                   for i in range(4))
    f = _one(_findings(tmp_path, "$ nvidia-smi -L\n" + gpus + "$ accelerate launch train.py\n" + ACC), "SIG456")
    assert f["severity"] == "warning" and "4 GPUs" in f["title"]


@pytest.mark.parametrize("line, rule, needle", [
    # Lightning device_parser._sanitize_gpu_ids
    ("MisconfigurationException: You requested gpu: [0, 1]\n But your machine only has: []\n", "SIG454", "none"),
    ("MisconfigurationException: You requested gpu: [0, 1, 2, 3]\n But your machine only has: [0]\n", "SIG454",
     "more GPUs"),
    # triton/runtime/cache.py put -> os.replace on a cache that is not writable
    ("PermissionError: [Errno 13] Permission denied: '/tmp/torchinductor_alice/fx_graph_cache/ab/tmpx1'\n", "SIG455",
     "not writable"),
    ("OSError: [Errno 116] Stale file handle: '/home/bob/.triton/cache/9f2c/kernel.json'\n", "SIG455",
     "shared or network"),
    # aws-ofi-nccl "Request %p seq %d completed with error. RC: %d. Error: %d (%s). ..."
    ("n0:1:2 [0] nccl_net_ofi_rdma.cpp:1973 NCCL WARN NET/OFI Request 0x7f45 seq 7 completed with error. RC: 103. "
     "Error: 4124 (Unresponsive receiver (connection previously established) My host id: i-1). Completed length: 0\n",
     "SIG457", "after the connection was established"),
    ("n0:1:2 [0] nccl_net_ofi_rdma.cpp:1973 NCCL WARN NET/OFI Request 0x7f45 seq 0 completed with error. RC: 103. "
     "Error: 4126 (Unresponsive receiver (reachable by EFA device but handshake failed) My host id: i-1). "
     "Completed length: 0\n", "SIG457", "security group"),
    # slurmstepd "*** %s ON %s CANCELLED AT %s DUE TO ... ***"
    ("slurmstepd: error: *** JOB 771 ON gpu-03 CANCELLED AT 2025-02-01T10:00:00 DUE TO TIME LIMIT ***\n", "SIG458",
     "time limit"),
    ("slurmstepd: error: *** STEP 771.0 ON gpu-03 CANCELLED AT 2025-02-01T10:00:00 DUE TO NODE FAILURE ***\n",
     "SIG458", "a node failed"),
])
def test_launcher_cache_and_fabric_messages_name_their_cause(tmp_path, line, rule, needle):
    assert needle in _one(_findings(tmp_path, line), rule)["title"]


def test_an_oom_inside_torch_load_is_reported_as_the_missing_map_location(tmp_path):
    tb = ('Traceback (most recent call last):\n  File "train.py", line 40, in <module>\n'
          '    ckpt = torch.load(args.resume)\n'
          '  File "/opt/py/lib/python3.10/site-packages/torch/serialization.py", line 1014, in load\n'
          '  File "/opt/py/lib/python3.10/site-packages/torch/serialization.py", line 187, in _cuda_deserialize\n'
          '    return obj.cuda(device)\n'
          'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of '
          '79.15 GiB of which 20.06 MiB is free.\n')
    found = _findings(tmp_path, tb)
    assert found[0]["rule_id"] == "SIG459" and not any(f["rule_id"] == "SIG012" for f in found)


@pytest.mark.parametrize("text, first, hidden", [
    # local_elastic_agent.py (2.13) D-state watchdog, then the SIGKILL it sent
    ("[default] Worker pid=48211 stuck in uninterruptible sleep (D-state) for 301.2s (>= 300.0s); marking worker "
     "group UNHEALTHY and disabling restarts.\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
     "  exitcode  : -9 (pid: 48211)\n", "SIG464", "SIG047"),
    # k8s-device-plugin health.go, then the pod that no longer fits
    ("I1104 10:02:11.1 1 health.go:169] XidCriticalError: Xid=48 on Device=GPU-8c3f2a11; marking device as "
     "unhealthy.\nWarning  FailedScheduling  0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n",
     "SIG467", "SIG406"),
])
def test_the_cause_leads_and_its_consequence_is_folded(tmp_path, text, first, hidden):
    found = _findings(tmp_path, text)
    assert found[0]["rule_id"] == first and not any(f["rule_id"] == hidden for f in found)


@pytest.mark.parametrize("line, needle", [
    ("numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY\n",
     "ran out of memory"),
    ("RuntimeError: Triton Error [CUDA]: invalid device context\n", "no current CUDA context"),
])
def test_a_driver_api_error_code_names_its_cause(tmp_path, line, needle):
    assert needle in _one(_findings(tmp_path, line), "SIG057")["title"]


def test_a_job_that_waited_for_ranks_never_started(tmp_path):
    log = ("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
           "slurmstepd: error: *** JOB 88123 ON gpu-07 CANCELLED AT 2024-11-04T18:02:11 DUE TO TIME LIMIT ***\n")
    f = _one(_findings(tmp_path, log), "LOG011")
    assert "never did" in f["evidence"][0] and f["data"]["missing"] == [1]
    ok = _findings(tmp_path, "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\nEpoch 0: 100%\n")
    assert not any(x["rule_id"] == "LOG011" for x in ok)


def test_an_ipv6_bind_failure_before_the_store_starts_on_ipv4_is_not_an_error(tmp_path):
    # c10d socket.cpp: one "The server socket has failed to bind to {} {}." per address tried, IPv6 first
    for errno, reason in ((97, "Address family not supported by protocol"), (99, "Cannot assign requested address")):
        found = _findings(tmp_path, f"[W1203 10:00:02.1 1 socket.cpp:752] [c10d] The server socket has failed to "
                                    f"bind to [::]:29500 (errno: {errno} - {reason}).\nstep 10 loss 0.52\n")
        assert _one(found, "SIG470")["severity"] == "info" and not any(f["rule_id"] == "SIG040" for f in found)
    busy = _findings(tmp_path, "[W socket.cpp:752] [c10d] The server socket has failed to bind to [::]:29500 "
                               "(errno: 98 - Address already in use).\n")
    assert _one(busy, "SIG040")["severity"] == "error"


@pytest.mark.parametrize("text", [
    "{'loss': 2.3012, 'grad_norm': 4.113, 'learning_rate': 4.9e-05, 'epoch': 0.1}\n",  # HF Trainer's metrics dict
    '{\n  "train_batch_size": 64,\n  "zero_optimization": {"stage": 3}\n}\n',  # a DeepSpeed config echoed first
    '{"event": "start", "rank": 0}\nplain stderr line\n',  # JSON lines mixed with plain output
])
def test_a_log_that_begins_with_a_brace_is_read_as_text(tmp_path, text):
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of " \
          "79.15 GiB of which 1.06 GiB is free.\n"
    assert _one(_findings(tmp_path, text + oom), "SIG012")


def test_nul_runs_of_a_crashed_node_log_do_not_make_it_binary(tmp_path):
    p = tmp_path / "node.log"
    p.write_bytes(b"step 100 loss 0.5\n" + b"\x00" * 20000 + b"\ntorch.OutOfMemoryError: CUDA out of memory. "
                  b"Tried to allocate 2.00 GiB.\n" + b"\x00" * 4096)
    res = runner.invoke(app, ["check", str(p), "--format", "json"])
    assert res.exit_code == 1 and any(f["rule_id"] == "SIG012" for f in json.loads(res.stdout)["findings"])
    p.write_bytes(b"\x00\x01\x02\x03\xff\xfe" * 2000)
    assert runner.invoke(app, ["check", str(p)]).exit_code == 2


def test_torch_reported_missing_by_collect_env_but_failing_to_import_is_not_missing(tmp_path):
    text = ("Traceback (most recent call last):\n  File \"/env/lib/python3.10/site-packages/torch/__init__.py\", line "
            "191, in <module>\n    _load_global_deps()\nImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: "
            "version `GLIBCXX_3.4.30' not found (required by /env/lib/python3.10/site-packages/torch/lib/"
            "libtorch_python.so)\n\nCollecting environment information...\nPyTorch version: N/A\nIs debug build: N/A\n"
            "CUDA used to build PyTorch: N/A\nOS: Ubuntu 20.04.5 LTS (x86_64)\n")
    f = _one(_findings(tmp_path, text), "TRC001")
    assert f["title"] == "PyTorch is installed but cannot be imported" and "reinstalling torch does not" in f["remedy"]


def test_the_first_failing_rank_quotes_the_exception_no_signature_explains(tmp_path):
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
            "ValueError: the frobnicator needs an even number of widgets\n"
            "Root Cause (first observed failure):\n[0]:\n  time      : 2025-01-01_10:00:00\n  host      : gpu-1\n"
            "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 42)\n")
    f = _one(_findings(tmp_path, text), "SIG050")
    assert any("frobnicator" in e for e in f["evidence"])


def test_windows_torch_without_nccl_says_gloo_and_its_connect_retry_is_not_the_cause(tmp_path):
    text = ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [DESKTOP-7B]:58152 (system error: "
            "10049 - The requested address is not valid in its context.).\n"
            "RuntimeError: Distributed package doesn't have NCCL built in\n")
    found = _findings(tmp_path, text)
    assert found[0]["rule_id"] == "SIG105" and "gloo" in found[0]["title"]
    assert _one(found, "SIG039")["severity"] == "info"


def test_printed_slurm_numbers_make_the_missing_ranks_an_error(tmp_path):
    log = ("LOCAL_RANK=0, SLURM_NTASKS=1, SLURM_NTASKS_PER_NODE=2\n"
           "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
           "slurmstepd: error: *** JOB 88123 ON gpu-07 CANCELLED AT 2024-11-04T18:02:11 DUE TO TIME LIMIT ***\n")
    f = _one(_findings(tmp_path, log), "LOG011")
    assert f["severity"] == "error" and any("SLURM_NTASKS=1 is below" in e for e in f["evidence"])
    # per-process values (two ranks printing their own RANK) are not read as the job's environment
    two = ("RANK=0 WORLD_SIZE=2\nRANK=1 WORLD_SIZE=2\nInitializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
           "slurmstepd: error: *** JOB 5 ON n1 CANCELLED AT 2024-11-04T18:02:11 DUE TO TIME LIMIT ***\n")
    assert _one(_findings(tmp_path, two), "LOG011")["severity"] == "warning"


def test_the_log_only_rules_are_not_applicable_in_a_live_scan():
    """A live scan reads no logs: LOG005-LOG011 and NCL011 say not applicable (never pass, never 'not assessed')."""
    from gpudoctor.facts.model import Snapshot
    from gpudoctor.rules import evaluate

    snap = Snapshot(gpudoctor_version="0", created_at="2026-12-03T00:00:00+00:00")
    status = {o.rule_id: o.status for o in evaluate(snap).outcomes}
    for rule in ("LOG005", "LOG006", "LOG007", "LOG008", "LOG009", "LOG010", "LOG011", "NCL011"):
        assert status[rule] == "not_applicable", rule


# c10d CUDACachingAllocator: "... Process %d has %s memory in use." once per other process NVML lists on the GPU
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.06 GiB is free. {procs}Of the allocated memory 37.1 GiB is allocated by PyTorch, and "
       "200 MiB is reserved by PyTorch but unallocated.\n")


def test_an_oom_listing_several_processes_is_reported_as_ranks_sharing_the_gpu(tmp_path):
    found = _findings(tmp_path, OOM.format(procs="Process 2143 has 40.10 GiB memory in use. Process 2144 has "
                                                 "38.00 GiB memory in use. "))
    lead = found[0]
    assert lead["rule_id"] == "SIG308" and lead["severity"] == "error" and "SIG012" in lead["data"]["follow_on"]
    assert "SIG012" not in {f["rule_id"] for f in found}


def test_an_oom_listing_one_process_stays_the_oom_finding(tmp_path):
    # one unmarked process: this job itself seen through a container's PID namespace (SIG308's info case); an info
    # finding is no cause, so it must not hide the out-of-memory error
    found = _findings(tmp_path, OOM.format(procs="Process 2143 has 78.10 GiB memory in use. "))
    assert found[0]["rule_id"] == "SIG012" and found[0]["severity"] == "error"
    assert _one(found, "SIG308")["severity"] == "info"


def test_a_store_host_that_does_not_resolve_is_the_cause_of_the_connect_timeout(tmp_path):
    text = ("[W1204 03:11:02.118 socket.cpp:697] [c10d] The IPv4 network addresses of (trainer-master, 29500) cannot "
            "be retrieved (gai error: -2 - Name or service not known).\n"
            "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect "
            "to (trainer-master, 29500).\n")
    found = _findings(tmp_path, text)
    assert found[0]["rule_id"] == "SIG303" and found[0]["severity"] == "error"  # escalated by its follow-on
    assert found[0]["data"]["follow_on"] == ["SIG038"]
    # a transient lookup failure that did not stop the job stays a warning
    alone = _findings(tmp_path, text.splitlines(keepends=True)[0])
    assert _one(alone, "SIG303")["severity"] == "warning"


@pytest.mark.parametrize("warn, title", [
    ("GIN is disabled.", "NCCL_GIN_ENABLE=0"),
    ("Communicator does not support symmetric memory!", "symmetric memory is off"),
    ("No GIN-capable devices found.", "GPU-initiated networking"),
])
def test_nccl_gin_requirements_name_what_is_missing(tmp_path, warn, title):
    # NCCL src/gin/gin_host.cc ncclGinConnectOnce WARNs, and torch's "Last error:" copy of the last one
    text = (f"node12:88121:88190 [0] NCCL WARN {warn}\n"
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            "NCCLUtils.cpp:77, internal error - please report this issue to the NCCL developers, NCCL version 2.30.4\n"
            f"[rank0]: Last error:\n[rank0]: {warn}\n")
    found = _findings(tmp_path, text)
    assert found[0]["rule_id"] == "SIG509" and title in found[0]["title"]


_SELECT = "E1204 12:00:01.000000 4242 torch/_inductor/select_algorithm.py:2143] [0/0] "
_SKIPPED = (_SELECT + "Runtime error during autotuning: \n" + _SELECT + "No valid triton configs. OutOfMemoryError: "
            "out of resource: triton_mm Required: 131072 Hardware limit:101376 Reducing block sizes or `num_stages` "
            "may help.. \n" + _SELECT + "Ignoring this choice.\n")
_FATAL = ("torch._inductor.exc.InductorError: RuntimeError: No valid triton configs. OutOfMemoryError: out of "
          "resource: triton_tem_fused_0 Required: 147456 Hardware limit:101376 Reducing block sizes or `num_stages` "
          "may help.\n")


def test_autotuning_candidates_that_do_not_fit_are_info_not_a_failure(tmp_path):
    found = _findings(tmp_path, _SKIPPED * 3)
    assert {f["rule_id"] for f in found if f["rule_id"].startswith("SIG")} == {"SIG510"}
    assert _one(found, "SIG510")["severity"] == "info"


def _rejected(error: str, note: str = "") -> str:
    """A candidate's rejection as select_algorithm logs it: log.error("Runtime error during autotuning: \\n%s.
    \\nIgnoring this choice.", msg), msg = str(RuntimeError) + the note inductor appends (torch 2.1-2.13)."""
    return f"{_SELECT}Runtime error during autotuning: \n{error}{note}. \nIgnoring this choice.\n"


_ASYNC = ("\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
          "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with "
          "`TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


@pytest.mark.parametrize("text", [
    _rejected("CUDA error: invalid argument" + _ASYNC, "\n\nThis may mean this GPU is too small for max_autotune "
              "mode.\n\n"),
    _rejected("Triton Error [CUDA]: invalid argument", "\n\nThis may mean this GPU is too small for max_autotune "
              "mode.\n\n"),
    # torch 2.0: log.warning(msg) alone
    "CUDA error: invalid argument" + _ASYNC + "\n\nThis may mean this GPU is too small for max_autotune mode.\n\n",
])
def test_the_error_a_rejected_candidate_quotes_is_part_of_the_rejection(tmp_path, text):
    found = _findings(tmp_path, text + "step 10 loss 2.31\n")
    assert {f["rule_id"] for f in found if f["rule_id"].startswith("SIG")} == {"SIG510"}, found


def test_the_same_cuda_error_outside_autotuning_is_still_an_error(tmp_path):
    text = _rejected("CUDA error: invalid argument", "\n\nThis may mean this GPU is too small for max_autotune "
                     "mode.\n\n") + "step 10\nTraceback (most recent call last):\n  File \"t.py\", line 9\n" \
        "RuntimeError: CUDA error: invalid argument\n"
    found = _findings(tmp_path, text)
    assert _one(found, "SIG057")["severity"] == "error"


@pytest.mark.parametrize("error, note", [
    ("CUDA error: an illegal memory access was encountered" + _ASYNC, "\n\nEither error in template or triton "
     "bug.\n"),
    ("CUDA error: unspecified launch failure" + _ASYNC, "\n\nAn unrecoverable unspecified launch failure was caught "
     "during autotuning.\nPlease try re-running with TORCHINDUCTOR_AUTOTUNE_IN_SUBPROC=1.\n\n"),
])
def test_a_candidate_that_crashed_the_context_is_the_cause_of_the_later_crash(tmp_path, error, note):
    later = ("[rank0]: Traceback (most recent call last):\n[rank0]:   File \"train.py\", line 40, in <module>\n"
             f"[rank0]: RuntimeError: {error.splitlines()[0]}\n")
    found = _findings(tmp_path, _rejected(error, note) + later)
    assert found[0]["rule_id"] == "SIG512" and found[0]["severity"] == "error"
    assert "TORCHINDUCTOR_AUTOTUNE_IN_SUBPROC=1" in found[0]["remedy"]
    assert not [f for f in found if f["rule_id"] in ("SIG023", "SIG058", "SIG057")]


def test_no_config_fitting_is_the_shared_memory_failure_with_the_kernel_named(tmp_path):
    f = _one(_findings(tmp_path, _SKIPPED + _FATAL), "SIG314")
    assert f["severity"] == "error"
    assert "triton_tem_fused_0" in f["evidence"][0] and "147456" in f["evidence"][0]


def test_a_block_with_too_many_threads_is_not_called_shared_memory(tmp_path):
    f = _one(_findings(tmp_path, "triton.runtime.errors.OutOfResources: out of resource: threads, Required: 2048, "
                                 "Hardware limit: 1024. Reducing block sizes or `num_stages` may help.\n"), "SIG314")
    assert "threads" in f["title"] and "shared memory" not in f["evidence"][0]


@pytest.mark.parametrize("line", [
    "RuntimeError: upsample_nearest3d only supports output tensors with less than INT_MAX elements, but got "
    "[1, 1, 1178, 1367, 1367]",
    "RuntimeError: input tensor must fit into 32-bit index math",
    "RuntimeError: Expected canUse32BitIndexMath(input) && canUse32BitIndexMath(output) to be true, but got false.  "
    "(Could this error message be improved?  If so, please report an enhancement request to PyTorch.)",
])
def test_a_tensor_past_32_bit_indexing_is_named_not_memory(tmp_path, line):
    found = _findings(tmp_path, line + "\n")
    f = _one(found, "SIG511")
    assert "2^31" in f["evidence"][0] and "SIG012" not in {x["rule_id"] for x in found}


def test_cudnn_not_supported_is_a_configuration_not_a_second_install(tmp_path):
    f = _one(_findings(tmp_path, "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if "
                                 "you passed in a non-contiguous input.\n"), "SIG342")
    assert "configuration" in f["title"] and "install" not in f["title"]
    assert "contiguous" in f["remedy"]


def test_cudnn_version_mismatch_still_blames_the_install(tmp_path):
    f = _one(_findings(tmp_path, "RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH\n"), "SIG342")
    assert "install" in f["title"]


def test_a_gil_held_at_the_heartbeat_kill_points_at_python(tmp_path):
    f = _one(_findings(tmp_path, "[rank0]:[E1204 12:00:00.0 ProcessGroupNCCL.cpp:1500] [PG ID 0 PG GUID 0 Rank 0] "
                                 "Could not acquire GIL within 300 ms on exit, possible GIL induced hang\n"), "SIG043")
    assert "GIL" in f["title"] and "py-spy" in f["remedy"]


@pytest.mark.parametrize("reason, needle", [
    ("No route to host", "firewall"), ("Connection refused", "no peer listens"), ("Connection timed out", "timed out"),
])
def test_nccl_connect_failure_is_read_by_its_errno(tmp_path, reason, needle):
    # NVIDIA/nccl src/misc/socket.cc (v2.17-v2.25): WARN "socketStartConnect: Connect to %s failed : %s"
    f = _one(_findings(tmp_path, f"node2:4242:4300 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
                                 f"10.0.0.1<43211> failed : {reason}\n"), "SIG031")
    assert needle in f["title"]


# NVIDIA/nccl src/include/checks.h SYSCHECK: WARN("Call to " name " failed : %s", strerror(errno)) (" failed: " in
# later releases); any strerror text is read, a failed bind names the address or the port
@pytest.mark.parametrize("sep", [" : ", ": "])
@pytest.mark.parametrize("errno, says", [("Cannot assign requested address", "no interface of this host"),
                                         ("Address already in use", "taken by another process"),
                                         ("Network is unreachable", "bind -> Network is unreachable")])
def test_a_failed_bind_inside_nccl_names_what_to_change(tmp_path, sep, errno, says):
    text = (f"gpu-7:4242:4242 [0] misc/socket.cc:413 NCCL WARN Call to bind failed{sep}{errno}\n"
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93,"
            " unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.28.9\n"
            f"Last error:\nCall to bind failed{sep}{errno}\n")
    found = _findings(tmp_path, text)
    f = found[0]
    assert f["rule_id"] == "SIG037" and says in (f["title"] + " ".join(f["evidence"]))


def test_any_strerror_text_of_a_failed_call_is_read(tmp_path):
    f = _one(_findings(tmp_path, "h:1:1 [0] NCCL WARN Call to ioctl failed : Inappropriate ioctl for device\n"),
             "SIG037")
    assert "ioctl -> Inappropriate ioctl for device" in " ".join(f["evidence"])


# NVIDIA/nccl src/transport/net_ib: WARN("NET/IB: Got completion from peer %s with status=%s(%d) opcode=%s(%d)
# vendor_err=%u %s%s%s%s hca %s", ...) with ibv_wc_status_str's name; libibverbs enum ibv_wc_status numbers
@pytest.mark.parametrize("name, status, says, sev", [
    ("IBV_WC_LOC_PROT_ERR", 4, "GPUDirect RDMA is blocked", "error"),
    ("IBV_WC_WR_FLUSH_ERR", 5, "a consequence", "warning"),
    ("IBV_WC_REM_ACCESS_ERR", 10, "the peer's NIC refused", "error"),
    ("IBV_WC_RETRY_EXC_ERR", 12, "stopped acknowledging", "error"),
    ("IBV_WC_RNR_RETRY_EXC_ERR", 13, "receiver not ready", "error"),
])
def test_an_ib_completion_error_is_read_by_its_status(tmp_path, name, status, says, sev):
    line = (f"gpu-r3-n05:301877:302519 [3] transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer "
            f"10.0.7.22<53211> with status={name}({status}) opcode=IBV_WC_RDMA_WRITE(1) vendor_err=81  hca mlx5_3\n")
    f = _one(_findings(tmp_path, line), "SIG034")
    assert says.lower() in f["title"].lower() and f["severity"] == sev


def test_c10d_retry_and_start_lines_are_not_unexplained(tmp_path):
    # torch/csrc/distributed/c10d/socket.cpp "The server socket on {} has timed out, will retry." (a retry) and
    # TCPStore.cpp "[c10d] Failed to start TCPStore server on port {}" before the bind error SIG040 reads
    found = _findings(tmp_path, "[W611 10:22:31.604227817 TCPStore.cpp:1034] [c10d] Failed to start TCPStore server "
                                "on port 29500\ntorch.distributed.DistNetworkError: The server socket has failed to "
                                "listen on any local network address. port: 29500, useIpv6: false, code: -98, name: "
                                "EADDRINUSE, message: address already in use\n"
                                "[W611 10:22:40.1 socket.cpp:752] [c10d] The server socket on [::ffff:10.0.3.11]:29500 "
                                "has timed out, will retry.\n")
    assert "SIG040" in {f["rule_id"] for f in found} and "SIG000" not in {f["rule_id"] for f in found}


# NVIDIA/libnvidia-container src/cli/dsl.c dsl_evaluate: space-separated alternatives of comma-joined conditions;
# error_setx(err, "unsatisfied condition: %s", buf) names the failing condition of the last alternative tried
@pytest.mark.parametrize("cond, says", [
    ("brand=tesla", "newer cuda than the host driver"), ("brand = tesla", "newer cuda than the host driver"),
    ("arch>=9.0", "gpu architecture"), ("driver>=535", "newer nvidia driver"),
    ("cuda>=12.6", "newer cuda than the host driver"),
])
def test_a_container_requirement_is_read_by_its_condition(tmp_path, cond, says):
    f = _one(_findings(tmp_path, f"docker: Error response from daemon: failed to create task for container: "
                                 f"nvidia-container-cli: requirement error: unsatisfied condition: {cond}: unknown.\n"),
             "SIG089")
    assert says in f["title"].lower()


def test_a_bootstrap_device_filter_that_matches_nothing_names_nccl_oob_net_ifname(tmp_path):
    # NVIDIA/nccl src/bootstrap.cc WARN("no device found matching %s%s, verify NCCL_OOB_NET_IFNAME", ...)
    f = _one(_findings(tmp_path, "node7:3001:3120 [0] bootstrap.cc:577 NCCL WARN no device found matching "
                                 "exactly =mlx5_9, verify NCCL_OOB_NET_IFNAME\n"), "SIG033")
    assert "NCCL_OOB_NET_IFNAME" in f["title"] and "NCCL_OOB_NET_IFNAME" in f["remedy"]


def test_a_bus_error_of_a_dataloader_worker_is_shared_memory_even_wrapped(tmp_path):
    # torch/utils/data/_utils/signal_handling.py: "DataLoader worker (pid {}) is killed by signal: Bus error. It is
    # possible that dataloader's workers are out of shared memory. ...", wrapped by the reporter's editor
    found = _findings(tmp_path, "RuntimeError: DataLoader worker (pid 47) is killed by signal: Bus\nerror. It is "
                                "possible that dataloader's workers are out of shared\nmemory.\n")
    assert found[0]["rule_id"] == "SIG006" and "SIG081" not in {f["rule_id"] for f in found}


def test_a_socket_of_an_unsupported_family_names_the_host_network(tmp_path):
    # NVIDIA/nccl src/include/socket.h (older) WARN("Socket creation failed : %s", strerror(errno)) with EAFNOSUPPORT
    found = _findings(tmp_path, "e66aa18dc444:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : "
                                "Address family not supported by protocol\nRuntimeError: NCCL Error 2: unhandled "
                                "system error\n")
    assert found[0]["rule_id"] == "SIG033" and "NCCL_SOCKET_FAMILY" in found[0]["remedy"]
    assert "SIG008" not in {f["rule_id"] for f in found}


def test_the_linker_and_setup_lines_after_a_build_error_are_its_follow_ons(tmp_path):
    found = _findings(tmp_path, "/usr/local/cuda/include/crt/host_config.h:132:2: error: #error -- unsupported GNU "
                                "version! gcc versions later than 13 are not supported!\n"
                                "collect2: error: ld returned 1 exit status\n"
                                "error: command '/usr/bin/gcc' failed with exit code 1\n")
    assert "SIG076" in {f["rule_id"] for f in found} and "SIG000" not in {f["rule_id"] for f in found}


# torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py _create_tcp_store: RendezvousConnectionError("The
# connection to the C10d store has failed. See inner exception for details.") raised from TCPStore's
# "connect() timed out. Original timeout was %d ms." (the store host never recognised itself: _matches_machine_hostname)
_RDZV = ("RuntimeError: connect() timed out. Original timeout was 60000 ms.\n\nThe above exception was the direct "
         "cause of the following exception:\n\ntorch.distributed.elastic.rendezvous.api.RendezvousConnectionError: "
         "The connection to the C10d store has failed. See inner exception for details.\n")


def test_a_rendezvous_store_nobody_hosts_names_the_host_check(tmp_path):
    found = _findings(tmp_path, _RDZV)
    f = found[0]
    assert f["rule_id"] == "SIG051" and "is_host" in f["remedy"] and "/etc/hosts" in f["remedy"]
    assert "SIG038" not in [x["rule_id"] for x in found]  # the inner exception: listed in SIG051
    plain = _findings(tmp_path, "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection "
                                "to the C10d store has failed. See inner exception for details.\n")
    assert "is_host" not in _one(plain, "SIG051")["remedy"]  # no timed-out connect: the general reading


# net_ib common.cc WARN "NET/IB : %s:%d GID table changed" before ProcessGroupNCCL's watchdog timeout
def test_a_gid_change_is_the_cause_of_the_timeout_after_it(tmp_path):
    found = _findings(tmp_path, "n7:5120:5190 [0] transport/net_ib/common.cc:153 NCCL WARN NET/IB : mlx5_2:1 GID "
                                "table changed\n[rank0]:[E1204 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog "
                                "caught collective operation timeout: WorkNCCL(SeqNum=120, OpType=ALLREDUCE, "
                                "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600041 milliseconds before timing "
                                "out.\n")
    assert [(f["rule_id"], f["severity"]) for f in found if f["severity"] != "info"] == [("SIG514", "error")]
    assert "SIG022" in found[0]["data"]["follow_on"]


def test_an_oom_where_expandable_segments_is_unavailable_does_not_advise_it(tmp_path):
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "23.99 GiB of which 1.02 GiB is free. Of the allocated memory 19.1 GiB is allocated by PyTorch, and 3.1 GiB "
           "is reserved by PyTorch but unallocated.\n")
    warn = ("UserWarning: expandable_segments not supported on this platform (Triggered internally at "
            "c10/cuda/x.h:41.)\n")
    assert "expandable_segments:True" in _one(_findings(tmp_path, oom), "SIG012")["remedy"]
    f = _one(_findings(tmp_path, warn + oom), "SIG012")
    assert "expandable_segments:True" not in f["remedy"] and "max_split_size_mb" in f["remedy"]


def test_a_missing_plugin_is_a_note_a_plugin_that_does_not_load_a_warning(tmp_path):
    missing = ("n2:3311:3311 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: "
               "cannot open shared object file: No such file or directory\n")
    broken = ("n2:3311:3311 [0] NCCL INFO NET/Plugin: libnccl-net-ofi.so: libfabric.so.1: cannot open shared object "
              "file: No such file or directory\n")
    assert _one(_findings(tmp_path, missing), "SIG513")["severity"] == "info"
    f = _one(_findings(tmp_path, broken), "SIG513")
    assert f["severity"] == "warning" and "libfabric.so.1" in " ".join(f["evidence"])


def test_an_issue_titled_with_the_exception_is_read_a_comment_quoting_one_is_not(tmp_path):
    title = "# RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\n\nMy versions:\ncuDNN: 8.5.0\npytorch=1.4.0\n"
    assert [f["rule_id"] for f in _findings(tmp_path, title)] == ["SIG071"]
    comment = "python train.py\n# RuntimeError: CUDA error: out of memory happens at step 3, so I lowered the batch\n"
    assert "SIG012" not in [f["rule_id"] for f in _findings(tmp_path, comment)]


def test_a_later_worse_event_of_the_same_message_decides_its_case(tmp_path):
    """net_ib.cc "NET/IB : %s:%d Got async event : %s" (v2.20-v2.22): a port error, then the HCA's catastrophic error:
    the worse (more specific) case is the finding's; NCCL's 'Last error:' copy still decides when there is one."""
    found = _findings(tmp_path, "n1:1:2 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got async event : "
                                "port error\nn1:1:2 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got async "
                                "event : local catastrophic error\n")
    assert "HCA itself failed" in _one(found, "SIG035")["title"]
