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
    # issue 14, second pass: NCCL messages without a signature before (SIG200-SIG214) and later releases' forms
    ("SIG200", W + "Failed to malloc 8388608 bytes"),                                               # v2.4-v2.30
    ("SIG200", W + "Failed to CUDA malloc 2097152 bytes"),                                          # v2.14-v2.30
    ("SIG200", W + "Failed to CUDA calloc async 4096 bytes"),                                       # v2.14-v2.30
    ("SIG200", W + "Failed to CUDA host alloc 33554432 bytes"),
    ("SIG200", W + "misc/utils.cc:40 Unrecoverable error detected: malloc(size=65536) returned null."),  # v2.14-v2.28
    ("SIG201", W + "Error : no algorithm/protocol available"),                                      # v2.7-v2.23
    ("SIG201", W + "Error : no algorithm/protocol available for function ReduceScatter with datatype "
               "ncclBfloat16. NCCL_PROTO was set to LL128."),                                      # v2.26-v2.28
    ("SIG201", W + "No algorithm/protocol available for function AllGather with datatype ncclInt8.."),  # v2.30
    ("SIG202", W + "Broadcast : recvbuff allocated on device 3 mismatchs with NCCL device 2"),      # v2.4-v2.30
    ("SIG202", W + "AllGather : sendbuff is not a valid pointer"),                                  # v2.4-v2.10
    ("SIG202", W + "ReduceScatter : recvbuff 0x7f01a0000000 is not a valid pointer"),               # v2.12-v2.30
    ("SIG203", W + "AllReduce : invalid type 10"),
    ("SIG203", W + "Reduce : invalid reduction operation 4"),
    ("SIG203", W + "AllReduce : reduction operation 7 unknown to this communicator"),               # v2.12-v2.30
    ("SIG203", W + "FP8 reduction support begins with sm90 capable devices."),                     # v2.26-v2.30
    ("SIG204", W + "Reduce : invalid root 16 (root should be in the 0..15 range)"),
    ("SIG205", W + "Error: network AWS Libfabric not found."),                                      # v2.10-v2.26
    ("SIG205", W + "Failed to initialize any NET plugin"),                                          # v2.27-v2.30
    ("SIG206", W + "No transport found !"),                                                         # v2.4-v2.10
    ("SIG206", W + "No transport found for rank 3[41000] -> rank 2[3e000]"),                        # v2.12-v2.30
    ("SIG206", W + "Rank 5 has no transport for send peer 6 on channel 3/1"),                       # v2.12-v2.30
    ("SIG207", W + "CUDA Driver version found is 11020. Minimum requirement is 11030"),             # v2.14-v2.30
    ("SIG207", W + "NCCL cannot be captured in a graph if either it wasn't built with CUDA runtime >= 11.3 or if "
               "the installed CUDA driver < R465."),                                                # v2.16-v2.30
    ("SIG208", W + "Error while attaching to shared memory segment /dev/shm/nccl-QmX2aB (size 9637888)"),  # v2.12-v2.22
    ("SIG208", W + "Error while attaching to shared memory segment /dev/shm/nccl-QmX2aB (size 9637888), error: No "
               "such file or directory (2)"),                                                       # v2.23-v2.30
    ("SIG208", W + "UDS: Sending data over socket /tmp/nccl-socket-1-9f0e1d2c3b4a5968 failed : Connection refused "
               "(111)"),                                                                            # v2.19-v2.30
    ("SIG208", W + "UDS: Receiving data over socket failed"),
    ("SIG208", W + "ncclProxyCallBlockingUDS call to tpRank 1(ab12cd34ef567890) failed : 2"),       # v2.21-v2.30
    ("SIG208", W + "nvmlDeviceGetHandleByPciBusId() failed: Not Found"),                            # NVMLCHECK
    ("SIG209", W + "Attribute vendor of node cpu not found"),                                       # v2.7-v2.30
    ("SIG209", W + "XML Topology has wrong version 2, 1 needed"),
    ("SIG209", W + "XML Parse error : unterminated comment"),
    ("SIG210", W + "MNNVL (cliqueSize 36) is available but not supported on this system. Check the IMEX "
               "configuration."),                                                                   # v2.26
    ("SIG210", W + "MNNVL (cliqueSize 72) is available but not working on this system. Check the IMEX channel "
               "configuration (/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this issue."),
    ("SIG211", W + "NET/IB : Can't merge net devices with different link_layer. i=0 remMeta.ndevs=2 link_layer=1 "
               "rem_link_layer=2"),                                                                 # v2.21-v2.23
    ("SIG211", W + "NET/IB : Attempted to connect incompatible devices: [1]mlx5_1:1/IB and [0]mlx5_0:1/RoCE. Try "
               "selecting NICs of only one link type using NCCL_IB_HCA"),                           # v2.26-v2.30
    ("SIG211", W + "NET/IB : Remote IB device is incompatible with the local [0]mlx5_0:1/RoCE. Try selecting NICs "
               "of only one link type using NCCL_IB_HCA"),
    ("SIG212", W + "Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>"),
    ("SIG212", W + "Net : error encountered when getting address info : Temporary failure in name resolution"),
    ("SIG212", W + "Net : No valid [IPv6]:port pair found"),
    ("SIG213", W + "Error while creating shared memory segment /dev/shm/nccl-Zx81Qa (size 9637888)"),  # v2.16-v2.22
    ("SIG214", W + "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 536870912 : CUDA error 999 'unknown "
               "error'.\nThis is usually caused by a system or configuration error in the Fabric Manager or "
               "NVSwitches."),                                                                      # v2.28-v2.30
    ("SIG006", W + "Error while creating shared memory segment /dev/shm/nccl-Zx81Qa (size 9637888), error: No space "
               "left on device (28)"),                                                              # v2.23-v2.30
    ("SIG010", W + "Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable "
               "this configuration."),                                                              # v2.30
    ("SIG033", W + "NET/IB : No IP interface found."),                                              # v2.4-v2.30
    ("SIG033", W + "no device found matching exactly ib0, verify NCCL_OOB_NET_IFNAME"),             # v2.26-v2.30
    ("SIG033", W + "no device found after excluding docker0, verify NCCL_OOB_NET_IFNAME"),
    ("SIG035", W + "NET/IB : mlx5_2:1 async fatal event: local catastrophic error"),               # v2.23-v2.30
    ("SIG035", W + "NET/IB : mlx5_2:1 async fatal event on CQ (0x55aa10): CQ error"),
    ("SIG035", W + "NET/IB : mlx5_2:1 Got async error event: port error"),                          # v2.23-v2.27
    ("SIG035", W + "NET/IB : mlx5_2:1 Got non-fatal async event: port error(10)"),                  # v2.28-v2.30
    ("SIG037", "[rank2]: Last error:\n[rank2]: socketTryAccept: Accept failed: Too many open files"),  # last error
    ("SIG037", "Last error:\nCall to posix_fallocate failed : No space left on device"),
    ("SIG109", W + "Mismatched collective detected, please check your collective calls at and around rank 5. You "
               "can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs"),   # v2.4
    ("SIG109", W + "Your program may be hanging, this may be caused by a collective mismatch around rank 5. Please "
               "check your collective calls at and around this rank."),                             # v2.4
    ("SIG207", W + "Cuda failure 'API call is not supported in the installed CUDA driver'"),      # checks.h
    ("SIG207", W + "Retrieve cuMemCreate version 11000 failed with 500"),                           # v2.14-v2.19
    ("SIG215", W + "Invalid config blocking attribute value -2147483648"),                          # v2.14-v2.30
    ("SIG215", W + "Invalid config min/max channels attribute value 64/-1"),                        # v2.18-v2.30
    ("SIG215", W + "Invalig config graphUsageMode attribute value 7"),                              # v2.30 (sic)
    ("SIG215", W + "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER"),
    ("SIG216", W + "Detected mixed local CollNet device counts across ranks (min 0, max 1). Set "
               "NCCL_IGNORE_COLLNET_MISMATCH=1 to continue."),                                       # v2.30
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
    # look-alikes of SIG200-SIG214 and of the widened forms
    "gpu1:2201:2201 [0] NCCL INFO NET/IB : mlx5_0:1 Got non-fatal async event: port active(9)",
    "gpu1:2201:2201 [0] NCCL INFO NET/IB : mlx5_0:1 GID table changed",
    "gpu1:2201:2201 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
    "gpu1:2201:2201 [0] bootstrap.cc:98 NCCL WARN no device found matching NCCL_OOB_NET_IFNAME=ens9, ignoring",  # v2.23
    "gpu1:2201:2201 [0] NCCL INFO NCCL_ALGO set by environment to Ring,Tree",
    "gpu1:2201:2201 [0] NCCL INFO NVLS multicast support is not available on dev 0",
    "gpu1:2201:2201 [0] NCCL INFO Allocated 9637892 bytes of shared memory in /dev/shm/nccl-CmU6vI",
    "gpu1:2201:2201 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
    "gpu1:2201:2201 [0] NCCL INFO MNNVL busId 0x1b000 fabric UUID 0.0 cliqueId 0x0 state 3 healthMask 0x0",
    "gpu1:2201:2201 [0] NCCL INFO Loading topology file /opt/microsoft/ndv5-topo.xml",
    "gpu1:2201:2201 [0] NCCL INFO comm 0x55d0 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE",
    "  ✗ SIG208 Ranks on one host cannot share memory or see each other's GPUs (separate containers or namespaces)",
    "Summary: 1 error, 0 warnings, 0 info · 115 passed, 50 not assessed, 12 not applicable",
]


@pytest.mark.parametrize("sid,line", REAL, ids=[f"{s}-{i}" for i, (s, _) in enumerate(REAL)])
def test_real_format_string_instantiations_match(sid, line):
    assert sid in {h.id for h in match_signatures(line)}


@pytest.mark.parametrize("line", BENIGN)
def test_info_and_lookalike_lines_stay_quiet(line):
    assert match_signatures(line) == []


def test_retired_invented_forms_are_gone():
    """Forms that were not found in the source were dropped rather than kept with false provenance."""
    assert "SIG096" not in {h.id for h in match_signatures("NVRM: GPU 0000:41:00.0 is already bound to vfio-pci")}


# --- root cause first: PyTorch's wrapper around NCCL's own last error (issue 14) ----------------------------------

def _torch_nccl_error(err: str, last: str) -> str:
    """ProcessGroupNCCL's exception text: NCCLUtils 'NCCL error in: %s:%d, %s, NCCL version %s', the interpretation
    line of getNcclErrorDetailStr and '\\nLast error:\\n' + ncclGetLastError (the WARN text without its prefix)."""
    return (f"[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            f"ProcessGroupNCCL.cpp:2006, {err}, NCCL version 2.21.5\n[rank1]: ncclSystemError: System call (e.g. "
            f"socket, malloc) or external library call failed or device error. \n[rank1]: Last error:\n"
            f"[rank1]: {last}\n")


@pytest.mark.parametrize("want,hidden,last", [
    ("SIG208", "SIG008", "UDS: Sending data over socket /tmp/nccl-socket-1-9f0e1d2c3b4a5968 failed : Connection "
                         "refused (111)"),
    ("SIG213", "SIG008", "Error while creating shared memory segment /dev/shm/nccl-Zx81Qa (size 9637888)"),
    ("SIG200", "SIG008", "Failed to CUDA calloc 10485760 bytes"),
    ("SIG205", "SIG008", "Error: network IB not found."),
    ("SIG201", "SIG029", "Error : no algorithm/protocol available for function AllGather with datatype ncclInt8."),
    ("SIG215", "SIG029", "Invalid config blocking attribute value -2147483648"),
    ("SIG202", "SIG030", "AllReduce : sendbuff allocated on device 1 mismatchs with NCCL device 0"),
])
def test_specific_cause_reported_and_generic_nccl_error_folded(tmp_path, want, hidden, last):
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    err = {"SIG008": "unhandled system error (run with NCCL_DEBUG=INFO for details)",
           "SIG029": "internal error - please report this issue to the NCCL developers",
           "SIG030": "invalid usage (run with NCCL_DEBUG=WARN for details)"}[hidden]
    p = tmp_path / "paste.txt"
    p.write_text(_torch_nccl_error(err, last))
    snap, _ = build_snapshot([str(p)])
    got = {f.rule_id: f for f in evaluate(snap).findings}
    assert want in got and hidden not in got
    assert got[want].data["conclusion"]  # concludes with the facts of the line, not only the title


def test_shm_create_without_reason_folds_under_the_reason():
    """v2.12-v2.22 print the errno on the line before: the bare 'Error while creating' line joins that cause."""
    text = (W + "Error: failed to extend /dev/shm/nccl-fjwOOB to 5967876 bytes\n\n"
            + W + "Error while creating shared memory segment /dev/shm/nccl-fjwOOB (size 5967872)\n")
    hits = {h.id for h in match_signatures(text)}
    assert {"SIG006", "SIG213"} <= hits
    from gpudoctor.parsers.signatures import catalogue
    from gpudoctor.rules.logs import _suppressed

    e = next(x for x in catalogue() if x["id"] == "SIG213")
    assert _suppressed(e, hits)[0]

