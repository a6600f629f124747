"""Signatures against instantiations of the real format strings, release by release (issue 14 verification).

Each line below fills one format string read in the project's source (NVIDIA/nccl tags v2.4.8-1 .. v2.30.7-1,
pytorch/pytorch as shipped in torch 2.13 plus the older forms quoted in each entry's ``origin``,
NVIDIA/libnvidia-container, NVIDIA/open-gpu-kernel-modules 515-595), with NCCL's log prefix
``host:pid:tid [dev] file:line NCCL WARN`` where the source prints one. The benign lines are INFO/TRACE lines of the
same sources that must stay quiet.
"""
from __future__ import annotations

import pytest

from gpudoctor.parsers.signatures import match_signatures

W = "gpu1:2201:2260 [3] misc/socket.cc:484 NCCL WARN "

REAL = [
    # NCCL socket connect, every release's wording
    ("SIG031", W + "Connect to 10.0.0.2<40001> failed : Connection refused"),                       # v2.4-v2.9
    ("SIG031", W + "Net : Connect to 10.0.0.2<40001> failed : No route to host"),                   # v2.10-v2.16
    ("SIG031", W + "socketStartConnect: Connect to 10.0.0.2<40001> failed : Connection timed out"),  # v2.17-v2.26
    ("SIG031", W + "socketPollConnect: connect to 10.0.0.2<40001> failed : Connection refused"),     # v2.27-v2.30
    ("SIG031", W + "socketPollConnect to 10.0.0.2<40001> failed with error Connection reset by peer"),  # v2.27-v2.28
    ("SIG031", W + "ncclOsSocketPollConnect to [fe80::1%ib0]<40001> failed with error Connection refused"),  # v2.30
    ("SIG031", W + "socketStartConnect: exceeded retries (34)"),                                    # v2.17-v2.23
    ("SIG031", W + "socketStartConnect: connect returned Connection refused, exceeded error retry count (35)"),  # v2.26
    ("SIG031", W + "socketPollConnect: connect to 10.0.0.2<40001> returned Connection timed out, exceeded error "
               "retry count after 35 attempts"),                                                    # v2.27-v2.30
    ("SIG031", "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system "
               "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\nLast error:\n"
               "socketStartConnect: Connect to 10.0.0.2<40001> failed : Connection refused"),      # ncclGetLastError
    # NCCL socket progress
    ("SIG032", W + "Net : Connection closed by remote peer"),                                        # v2.4-v2.9
    ("SIG032", W + "Net : Call to recv from 10.0.0.2<40001> failed : Connection reset by peer"),    # v2.10-v2.16
    ("SIG032", W + "socketProgress: Connection closed by remote peer node3<52344>"),                 # v2.17-v2.30
    ("SIG032", W + "socketProgressOpt: Call to send to 10.0.0.2<40001> failed : Broken pipe"),      # v2.26-v2.28
    ("SIG032", W + "ncclOsSocketProgressOpt: Call to recv from 10.0.0.2<40001> failed : Connection reset by peer"),
    ("SIG032", W + "NET/Socket : socket progress error"),
    # interfaces
    ("SIG033", W + "Net : No interface found in the same subnet as remote address 10.9.0.1<5000>"),
    ("SIG033", W + "NET/Socket : No usable listening interface found"),
    # IB completions and events
    ("SIG034", W + "NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129"),        # v2.4-v2.9
    ("SIG034", W + "NET/IB : Got completion from peer 10.3.1.12<40921> with error 12, opcode 0, len 0, vendor "
               "err 129"),                                                                          # v2.10-v2.19
    ("SIG034", W + "NET/IB : Got completion from peer 10.3.1.12<40921> with status=12 opcode=0 len=0 vendor err "
               "129 (Send)"),                                                                       # v2.20-v2.21
    ("SIG034", W + "NET/IB: Got completion from peer 10.3.1.12<40921> with status=5 opcode=0 len=0 vendor err 249 "
               "(Recv) localGid ::ffff:10.3.1.11 remoteGid ::ffff:10.3.1.12 hca mlx5_2"),           # v2.23-v2.27
    ("SIG034", W + "NET/IB: Got completion from peer 10.3.1.12<40921> with status=IBV_WC_RETRY_EXC_ERR(12) "
               "opcode=IBV_WC_SEND(0) reqSize=0 vendor_err=129 req_type=Send hca mlx5_0"),          # v2.28-v2.30
    ("SIG034", "NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 len=32696 vendor "
               "err 129 (Send)"),                                                                   # nccl#1664
    ("SIG035", W + "NET/IB : Got async event : port error"),                                        # v2.4-v2.19
    ("SIG035", W + "NET/IB : mlx5_0:1 Got async event : port error"),                               # v2.20-v2.30
    ("SIG035", W + "Call to ibv_modify_qp failed with error Connection timed out"),                 # v2.4-v2.25
    ("SIG114", W + "NET/IB : Unable to open device mlx5_1"),
    ("SIG114", W + "NET/IB : Unable to query port_num 1"),
    ("SIG009", W + "Call to ibv_reg_mr failed with error Cannot allocate memory errno 12"),
    ("SIG021", "gpu1:2201:2201 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for GPU 3[3] / HCA 0 'mlx5_0' "
               "(no module or not supported by GPU)"),                                              # v2.4
    ("SIG021", "gpu1:2201:2201 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"),  # v2.13+
    # shared memory
    ("SIG006", W + "Call to posix_fallocate failed : No space left on device"),                     # v2.4-v2.11
    ("SIG006", W + "Error: failed to extend /dev/shm/nccl-a1B2c3 to 9637888 bytes"),                 # v2.12-v2.22
    ("SIG006", W + "Error: failed to extend /dev/shm/nccl-a1B2c3 to 9637888 bytes, error: No space left on "
               "device (28)"),                                                                      # v2.23-v2.30
    ("SIG006", "RuntimeError: unable to write to file </torch_18692_1954506624_0>: No space left on device (28)"),
    ("SIG007", W + "Call to shm_open failed : Permission denied"),                                   # v2.4-v2.11
    ("SIG007", W + "Error while creating shared memory segment /dev/shm/nccl-a1B2c3 (size 9637888), error: "
               "Permission denied (13)"),                                                           # v2.30
    # NCCL result strings (old bare forms appear inside PyTorch's wrapper)
    ("SIG030", "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, invalid "
               "usage, NCCL version 2.14.3"),                                                       # v2.4-v2.17
    ("SIG029", "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, internal "
               "error, NCCL version 2.14.3"),
    ("SIG028", W + "Cuda failure 'an illegal memory access was encountered'"),                      # checks.h
    ("SIG028", W + "Cuda failure 1 'invalid argument'"),                                            # cudawrap.h v2.19+
    # new NCCL entries
    ("SIG108", W + "Mismatched NCCL version detected : rank 4 version 22105 rank 0 version 22304"),
    ("SIG108", W + "NCCL version mismatch with remote peer 10.0.0.7<28028> (local: 22703, remote 22605)"),
    ("SIG109", W + "Message truncated : received 1024 bytes instead of 256"),
    ("SIG109", W + "NET/IB : req 1/1 tag 7 peer 10.0.0.2<3333> collective mismatch error, local size 8 remote "
               "size 16"),
    ("SIG110", W + "P2P is disabled between NVLINK connected GPUs 1 and 3. This should not be the case given their "
               "connectivity, and is probably due to a hardware issue."),
    ("SIG111", W + "Bootstrap Root : mismatch in rank count from procs 8 : 16"),
    ("SIG111", W + "Bootstrap Root : rank 3 of 8 ranks has already checked in"),
    ("SIG018", W + "failed to peer with device 3(=1b000): 217 peer access is not supported between these two "
               "devices"),
    # PyTorch
    ("SIG012", "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
               "14.20 GiB already allocated; 4.75 MiB free; 14.30 GiB reserved in total by PyTorch)"),
    ("SIG012", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
               "capacty of 23.65 GiB of which 1.02 GiB is free."),
    ("SIG019", "OSError:\nThe detected CUDA version (11.7) mismatches the version that was used to compile\n"
               "PyTorch (12.1). Please make sure to use the same CUDA versions."),                  # v1.x-v2.x
    ("SIG019", "RuntimeError: The detected CUDA version (12.8) mismatches the version that was used to "
               "compilePyTorch (11.8). Please make sure to use the same CUDA versions."),            # v2.13
    ("SIG001", "UserWarning: Found GPU0 Tesla V100-PCIE-32GB which is of compute capability (CC) 7.0.\nThe "
               "following list shows the CCs this version of PyTorch was built for"),              # v2.11+
    ("SIG022", "[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=131072000, "
               "NumelOut=131072000, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."),
    ("SIG112", "[E ProcessGroupNCCL.cpp:414] Some NCCL operations have failed or timed out. Due to the "
               "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
               "data. To avoid this inconsistency, we are taking the entire process down."),
    ("SIG113", "torch.distributed.elastic.multiprocessing.api.SignalException: Process 2211 got signal: "
               "Signals.SIGTERM"),
    ("SIG040", "[W socket.cpp:436] [c10d] The server socket has failed to listen on 0.0.0.0:29500 (errno: 98 - "
               "Address already in use)."),
    ("SIG040", "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
               "address. The server socket has failed to bind to [::]:98 (errno: 13 - Permission denied)."),  # thread
    ("SIG039", "[W socket.cpp:558] [c10d] The client socket has failed to connect to [neo2]:29500 (system error: "
               "10049 - The requested address context is invalid.)."),                              # Windows
    ("SIG066", "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu."),
    ("SIG084", "RuntimeError: unable to open shared memory object </torch_30219_3346217489_0> in read-write mode: "
               "Too many open files (24)"),
    ("SIG104", "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cuda:1, different "
               "from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)"),
    ("SIG042", "[W1201 08:00:00.1 TCPStore.cpp:141] [c10d] sendBytes failed on SocketImpl(fd=53, "
               "addr=[gpu-1]:40500, remote=[master-0]:29500): Broken pipe"),
    ("SIG042", "torch.distributed.DistNetworkError: Failed to send, sent 0 bytes. Connection was likely closed. "
               "Did the remote server shutdown or crash?"),
    ("SIG015", "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
               "False. If you are running on a CPU-only machine, please use torch.load with map_location"),
    ("SIG072", "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found "
               "runtime version (8, 9, 7). PyTorch already comes bundled with cuDNN."),
    ("SIG002", "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update "
               "your GPU driver by downloading and installing a new version from the URL"),
    # containers
    ("SIG088", "nvidia-container-cli: detection error: nvml error: unknown error: unknown."),
    ("SIG089", "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.6: unknown."),
    ("SIG089", "Error: requirements not met: unsatisfied condition: cuda>=12.6 (cuda=12.2)"),
    # kernel
    ("SIG094", "[  12.3] NVRM: API mismatch: the client 'nvidia-smi' (pid 4121)\n[  12.3] NVRM: has the version "
               "580.95.05, but this kernel module has\n[  12.3] NVRM: the version 580.82.07.  Please make sure "
               "that this"),                                                                        # 575-595
    ("SIG017", "[ 5.1] NVRM: The NVIDIA GPU 0000:41:00.0 (PCI ID: 10de:2330)\n[ 5.1] NVRM: installed in this "
               "system is not supported by the\n[ 5.1] NVRM: NVIDIA 550.90.07 driver release."),
]

BENIGN = [
    "gpu1:2201:2201 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    "gpu1:2201:2201 [0] NCCL INFO socketStartConnect: connect returned Connection refused, retrying (1/34) after "
    "sleep for 100 msec",
    "gpu1:2201:2260 [0] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, "
    "retrying 1/7 after 100 msec of sleep",
    "gpu1:2201:2260 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 1b000 / HCA 0 (distance 6 > 5)",
    "gpu1:2201:2201 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
    "gpu1:2201:2201 [0] NCCL INFO NCCL version 2.23.4+cuda12.6",
    "ssh: connect to host gpu1 port 22: Connection refused",
    "RuntimeError: unable to write to file </tmp/ckpt.pt>: No space left on device (28)",
]


@pytest.mark.parametrize("sid,line", REAL, ids=[f"{s}-{i}" for i, (s, _) in enumerate(REAL)])
def test_real_format_string_instantiations_match(sid, line):
    assert sid in {h.id for h in match_signatures(line)}


@pytest.mark.parametrize("line", BENIGN)
def test_info_and_lookalike_lines_stay_quiet(line):
    assert match_signatures(line) == []


def test_bound_to_another_driver_is_the_550_plus_form():
    """'NVRM: GPU %s is already bound to %s.' (kernel-open/nvidia/nv-pci.c check_for_bound_driver) exists from
    550.40 on (it was absent from the 515-545 sources first read); bound to nvidia itself is not a conflict."""
    assert "SIG096" in {h.id for h in match_signatures("NVRM: GPU 0000:41:00.0 is already bound to vfio-pci.")}
    assert "SIG096" in {h.id for h in match_signatures("NVRM: GPU 0000:41:00.0 is already bound to nouveau.")}
    assert match_signatures("NVRM: GPU 0000:41:00.0 is already bound to nvidia.") == []


# --- system side (issue 14, SIG400-SIG418 and the widened kernel / nvidia-smi / CUDA entries) ---------------------
# Format strings read in NVIDIA/open-gpu-kernel-modules 515.43.04-595.45.04, NVIDIA/nvidia-container-toolkit (HEAD),
# NVIDIA/libnvidia-container, NVIDIA/k8s-device-plugin, NVIDIA/nvidia-persistenced, NVIDIA/gpu-driver-container,
# libcudart 12.9/13 (rules/cuda_errors.toml); closed-source tools (nv-fabricmanager) as pasted in the cited threads.
K = "Mar 03 10:11:12 gpu-node-7 kernel: "  # journalctl / syslog prefix
D = "[ 1234.567890] "                      # dmesg prefix

REAL_SYSTEM = [
    # CUDA initialisation: runtime text, runtime name, driver CUresult, torch device_count warning, THC (v0.4-v1.5)
    ("SIG400", "RuntimeError: CUDA error: unknown error\nCUDA kernel errors might be asynchronously reported at some "
               "other API call, so the stacktrace below might be incorrect."),
    ("SIG400", "RuntimeError: CUDA error: initialization error"),
    ("SIG400", "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error"),
    ("SIG400", "cuInit failed: CUDA_ERROR_NOT_INITIALIZED: initialization error"),
    ("SIG400", "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
               "functions before calling NumCudaDevices() that might have already set an error? Error 999: unknown "
               "error (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:109.)"),
    ("SIG400", "RuntimeError: cuda runtime error (999) : unknown error at /opt/conda/conda-bld/pytorch/work/aten/src/"
               "THC/THCGeneral.cpp:47"),
    ("SIG401", "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: CUDA driver "
               "initialization failed, you might not have a CUDA gpu."),
    ("SIG065", "CUDA call failed lazily at initialization with error: device >= 0 && device < num_gpus INTERNAL ASSERT "
               "FAILED at \"../aten/src/ATen/cuda/CUDAContext.cpp\":50, please report a bug to PyTorch. device=1, "
               "num_gpus=1"),
    ("SIG065", "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/"
               "CUDAContext.cpp\":50, please report a bug to PyTorch. device=, num_gpus="),       # empty values
    ("SIG057", "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_INVALID_IMAGE: device kernel image is "
               "invalid"),
    ("SIG015", "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"),
    ("SIG419", "RuntimeError: CUDA error: the launch timed out and was terminated"),
    ("SIG002", "RuntimeError: CUDA error: API call is not supported in the installed CUDA driver"),
    # container stack
    ("SIG402", "stderr: Auto-detected mode as 'csv'\ninvoking the NVIDIA Container Runtime Hook directly (e.g. "
               "specifying the docker --gpus flag) is not supported. Please use the NVIDIA Container Runtime (e.g. "
               "specify the --runtime=nvidia flag) instead.: unknown."),
    ("SIG403", "Running hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: container "
               "error: cgroup subsystem devices not found: unknown."),
    ("SIG404", "OCI runtime create failed: unable to retrieve OCI runtime error: exec: \"nvidia-container-runtime\": "
               "executable file not found in $PATH: unknown"),
    ("SIG404", "error running prestart hook #0: fork/exec /usr/bin/nvidia-container-runtime-hook: no such file or "
               "directory: unknown"),
    ("SIG405", "E0812 05:04:19.837549       1 factory.go:112] Incompatible strategy detected auto"),       # v0.14+
    ("SIG405", "2022/12/19 07:04:53 Incompatible platform detected\n2022/12/19 07:04:53 If this is a GPU node, did "
               "you configure the NVIDIA Container Toolkit?"),                                         # v0.12-v0.13
    ("SIG406", "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
               "3 Insufficient nvidia.com/gpu."),
    ("SIG417", "Resolving Linux kernel version...\nCould not resolve Linux kernel version"),
    ("SIG420", "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no "
               "runtime for \"nvidia\" is configured"),
    ("SIG420", "failed to get sandbox runtime: no runtime for “nvidia” is configured"),           # pasted quotes
    ("SIG024", "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown."),
    # kernel driver: modprobe / lockdown / firmware / GSP / open module
    ("SIG407", "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service"),
    ("SIG407", "modprobe: ERROR: could not insert 'nvidia': Required key not available"),
    ("SIG407", K + "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7"),
    ("SIG408", "modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.8.0-45-generic"),
    ("SIG408", "modprobe: ERROR: could not insert 'nvidia_uvm': Unknown symbol in module, or unknown parameter (see "
               "dmesg)"),
    ("SIG408", D + "nvidia: disagrees about version of symbol module_layout"),
    ("SIG409", D + "nvidia 0000:01:00.0: Direct firmware load for nvidia/515.43.04/gsp.bin failed with error -2"),
    ("SIG409", D + "nvidia 0000:01:00.0: Direct firmware load for nvidia/570.133.20/gsp_ga10x.bin failed with error "
               "-2"),
    ("SIG409", D + "NVRM: RmFetchGspRmImages: No firmware image found"),
    ("SIG410", D + "NVRM: GPU6 _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP"),
    ("SIG410", D + "NVRM: kgspInitRm_IMPL: (the GPU is likely in a bad state and may need to be reset)"),
    ("SIG411", "kernel: NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)\n             NVRM: installed in this "
               "system is not supported by open\n             NVRM: nvidia.ko because it does not include the "
               "required GPU\n             NVRM: System Processor (GSP)."),
    ("SIG411", "NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:1db4)\nNVRM: installed in this vGPU host system is not "
               "supported by\nNVRM: open nvidia.ko."),
    ("SIG418", D + "NVRM: Open nvidia.ko is only ready for use on Data Center GPUs."),               # 515-535
    ("SIG095", D + "NVRM: GPU 0000:41:00.0: rm_init_adapter failed, device minor number 0"),
    ("SIG017", D + "NVRM: ignoring the legacy GPU 0000:01:00.0"),
    ("SIG096", D + "NVRM: The NVIDIA probe routine was not called for 2 device(s)."),                  # 560+
    ("SIG096", "modprobe: ERROR: could not insert 'nvidia': No such device"),
    ("SIG096", D + "NVRM: No NVIDIA graphics adapter found!"),                                         # <= 470
    ("SIG094", K + "NVRM: API mismatch: the client has the version 550.90.07, but\n" + K + "NVRM: this kernel module "
               "has the version 550.54.15.  Please"),                                                  # journal prefix
    ("SIG017", K + "NVRM: The NVIDIA GPU 0000:41:00.0 (PCI ID: 10de:2330)\n" + K + "NVRM: installed in this system "
               "is not supported by the\n" + K + "NVRM: NVIDIA 470.239.06 driver release."),
    # NVML through Python (nvidia-ml-py exception names)
    ("SIG024", "pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch."),
    ("SIG025", "pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded"),
    ("SIG101", "pynvml.NVMLError_NoPermission: Insufficient Permissions"),
    ("SIG011", "pynvml.NVMLError_GpuIsLost: GPU is lost"),
    # NVSwitch / Fabric Manager / persistenced
    ("SIG412", K + "nvidia-nvswitch2: SXid (PCI:0000:c4:00.0): 20034, Fatal, Link 27 LTSSM Fault Up"),
    ("SIG412", K + "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 10002, Fatal, Unexpected PRI error"),
    ("SIG413", K + "nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 19084, Non-fatal, Link 29 AN1 Heartbeat Timeout Error "
               "(First)"),
    ("SIG414", "nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02 don't match with "
               "driver version 530.41.03. Please update with matching NVIDIA driver package."),
    ("SIG414", "nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface version 550.127.05 doesn't match "
               "with driver version 550.120. Please update with the matching NVIDIA driver package."),
    ("SIG415", "nvidia-fabricmanager-start.sh[4756]: request to query NVSwitch device information from NVSwitch "
               "driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]"),
    ("SIG416", "May  4 21:27:48 eve nvidia-persistenced: Failed to query NVIDIA devices. Please ensure that the NVIDIA "
               "device files (/dev/nvidia*) exist, and that user 121 has read and write permissions for those files."),
]

BENIGN_SYSTEM = [
    K + "nvidia-nvswitch2: Probing device 0000:c4:00.0, Vendor Id = 0x10de, Device Id = 0x22a3",
    K + "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build",
    "nv-fabricmanager[1507]: Successfully configured all the available NVSwitches to route GPU NVLink traffic.",
    "nvidia-fabricmanager-start.sh[4753]: Detected Pre-NVL5 system",
    "May  4 21:27:48 eve nvidia-persistenced: Started (10551)",
    "I0812 05:04:19.837377       1 main.go:356] Retrieving plugins.",
    "Normal  Scheduled  5s  default-scheduler  Successfully assigned default/train-0 to gpu-node-1",
    "Resolving Linux kernel version...\nProceeding with Linux kernel version 5.15.0-101-generic",
    D + "nvidia: loading out-of-tree module taints kernel.",
    "$ which nvidia-container-runtime\n/usr/bin/nvidia-container-runtime",
]


@pytest.mark.parametrize("sid,line", REAL_SYSTEM, ids=[f"{s}-{i}" for i, (s, _) in enumerate(REAL_SYSTEM)])
def test_system_format_strings_match(sid, line):
    assert sid in {h.id for h in match_signatures(line)}


@pytest.mark.parametrize("line", BENIGN_SYSTEM)
def test_system_lookalikes_stay_quiet(line):
    assert match_signatures(line) == []
