"""Signatures against instantiations of the real format strings, release by release (issue 14 verification).

Each line below fills one format string read in the project's source (NVIDIA/nccl tags v2.4.8-1 .. v2.30.7-1,
pytorch/pytorch as shipped in torch 2.13 plus the older forms quoted in each entry's ``origin``,
NVIDIA/libnvidia-container, NVIDIA/open-gpu-kernel-modules 515-595), with NCCL's log prefix
``host:pid:tid [dev] file:line NCCL WARN`` where the source prints one. The benign lines are INFO/TRACE lines of the
same sources that must stay quiet.
"""
from __future__ import annotations

import pytest

from gpudoctor.parsers.signatures import catalogue, match_signatures

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
    ("SIG445", W + "FP8 reduction support begins with sm90 capable devices."),                     # v2.26-v2.30
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
    # PyTorch, issue 14 second pass (c10d watchdog / flight recorder, store, DDP, torch.cuda, compile, FSDP)
    # v1.8-v1.10
    ("SIG022", "RuntimeError: [Rank 0] Caught collective operation timeout: WorkNCCL(OpType=BROADCAST, "
               "TensorShape=[1024], Timeout(ms)=1800000) ran for 1800209 milliseconds before timing out."),
    ("SIG022", "[rank368]:[E808 04:21:41.160918398 ProcessGroupNCCL.cpp:655] [Rank 368] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
               "ran for 600001 milliseconds before timing out."),                                  # v2.4-v2.13
    ("SIG300", "RuntimeError: [3] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d "
               "key-value store by key '0', but store->get('0') got exception: Socket Timeout"),      # v1.11-v1.13
    ("SIG300", "[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
               "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: wait "
               "timeout after 600000ms, keys: /default_pg//0//cuda//0. This may indicate a possible application "
               "crash on rank 0 or a network set up issue."),                                       # v2.x
    ("SIG301", "[rank1]:[E1003 18:37:01.833575187 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception "
               "(either an error or timeout) detected by watchdog at work: 6463, last enqueued NCCL work: 6463, last "
               "completed NCCL work: 6462."),                                                       # v2.2-v2.3
    ("SIG301", "[rank1]:[E1003 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 1] Timeout at NCCL work: 6463, "
               "last enqueued NCCL work: 6463, last completed NCCL work: 6462."),                     # v2.2-v2.3
    ("SIG301", "[rank3]:[E710 18:00:32.426302794 ProcessGroupNCCL.cpp:2395] [PG ID 0 PG GUID 0(default_pg) Rank 3]  "
               "failure detected by watchdog at work sequence id: 59958 PG status: last enqueued work: 59998, last "
               "completed work: 59957"),                                                            # v2.4-v2.13
    ("SIG302", "[rank0]:[E709 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump "
               "signal due to a collective timeout from this local rank and we will try our best to dump the debug "
               "info. Last enqueued NCCL work: 20589, last completed NCCL work: 20584."),
    ("SIG302", "[rank1]:[E703 ProcessGroupNCCL.cpp:1922] [PG ID 0 PG GUID 0(default_pg) Rank 1] Observed flight "
               "recorder dump signal from another rank via TCPStore."),
    ("SIG112", "[rank1]:[E1003 ProcessGroupNCCL.cpp:1715] [PG 0 (default_pg) Rank 1] To avoid data inconsistency, "
               "we are taking the entire process down."),                                           # v2.2-v2.13
    ("SIG112", "[rank2]:[F1229 20:37:13.091528310 ProcessGroupNCCL.cpp:1306] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
               "Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL watchdog hang."),
    ("SIG112", "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 2. "),
    ("SIG303", "[W1201 10:00:00.5 socket.cpp:697] [c10d] The network addresses of (master-0.svc, 29500) cannot be "
               "retrieved (gai error: -5 - No address associated with hostname)."),                   # '' family
    ("SIG304", "RuntimeError: use_libuv was requested but PyTorch was built without libuv support, run with "
               "USE_LIBUV=0 to disable it."),
    ("SIG039", "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node1]:29500 (errno: 111 - "
               "Connection refused)."),
    ("SIG113", "WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGTERM death signal, shutting "
               "down workers"),                                                                     # Python <= 3.10
    ("SIG113", "W1201 10:00:00.1 torch/distributed/elastic/agent/server/api.py:704] Received 15 death signal, "
               "shutting down workers"),                                                            # Python 3.11+
    ("SIG052", "[rank1]: Parameter indices which did not receive grad for rank 1: 198 199"),
    ("SIG052", "Parameters which did not receive grad for rank 1: module.head.bias, module.head.weight"),
    ("SIG053", "Parameter at index 73 with name module.encoder.layer.11.output.dense.weight has been marked as ready "
               "twice. This means that multiple autograd engine  hooks have fired"),                  # DETAIL
    ("SIG053", "Parameter at index 73 has been marked as ready twice. This means that multiple autograd engine  "
               "hooks have fired for this particular parameter during this iteration."),            # INFO/OFF
    ("SIG054", "RuntimeError: [1]: params[0] in this process with sizes [512, 768] appears not to match sizes of "
               "the same param in process 0."),
    ("SIG054", "RuntimeError: [3]: params[12] in this process with sizes [768] appears not to match strides of the "
               "same param in process 0."),
    # v2.1-v2.3 printed the values empty
    ("SIG306", "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
               "\"../aten/src/ATen/cuda/CUDAContext.cpp\":50, please report a bug to PyTorch. device=, num_gpus="),
    ("SIG307", "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: "
               "you tried to allocate 52428800000 bytes. Error code 12 (Cannot allocate memory)"),
    ("SIG307", "RuntimeError: [enforce fail at ..\\c10\\core\\impl\\alloc_cpu.cpp:72] data. DefaultCPUAllocator: "
               "not enough memory: you tried to allocate 1073741824 bytes."),                       # Windows
    ("SIG308", "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
               "capacity of 79.15 GiB of which 3.94 MiB is free. Process 4121 has 39.10 GiB memory in use. "
               "Process 4122 has 40.02 GiB memory in use."),
    ("SIG012", "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\n"
               "Currently allocated     : 22.43 GiB\nRequested               : 4.07 GiB"),          # cudaMallocAsync
    ("SIG012", "RuntimeError: CUDA error: out of memory"),
    ("SIG309", "RuntimeError: DataLoader worker (pid 29332) exited unexpectedly with exit code 1. Details are lost "
               "due to multiprocessing. Rerunning with num_workers=0 may give better error trace."),
    ("SIG310", "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Found Tesla "
               "P100-PCIE-16GB which is too old to be supported by the triton GPU compiler, which is used as the "
               "backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA "
               "capability 6.0"),
    ("SIG311", "RuntimeError: Cannot find a working triton installation. Either the package is not installed or it "
               "is too old. More information on installing Triton can be found at https://github.com/openai/triton"),
    ("SIG312", "/usr/bin/ld: cannot find -lcuda: No such file or directory"),
    ("SIG312", "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nAssertionError: libcuda.so "
               "cannot found!"),
    ("SIG313", "/tmp/tmpq8/cuda_utils.c:6:10: fatal error: Python.h: No such file or directory"),
    ("SIG314", "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, Hardware "
               "limit: 101376. Reducing block sizes or `num_stages` may help."),
    ("SIG315", "ValueError: Unknown CUDA arch (sm_90) or GPU not supported"),
    ("SIG316", "ValueError: Inconsistent compute device and `device_id` on rank 3: cuda:0 vs cuda:3"),
    ("SIG317", "RuntimeError: DeviceMesh only support homogeneous hardware, but found 12 ranks and 8 cuda devices!"),
    ("SIG318", "RuntimeError: Mesh should not be bigger than default world size 8, but found 16 ranks!"),
    ("SIG319", "RuntimeError: cuDNN version 91100 is not compatible with devices with SM < 7.5. Please install a "
               "version of PyTorch with a compatible cuDNN version."),
    ("SIG320", "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:789: UserWarning: Can't initialize NVML"),
    ("SIG065", "ValueError: local_rank 4 exceeds available GPUs in CUDA_VISIBLE_DEVICES=0,1,2,3"),     # torchrun
    ("SIG065", "RuntimeError: device 2 is not visible (CUDA_VISIBLE_DEVICES=[0, 1])"),
    ("SIG069", "RuntimeError: PyTorch was compiled without CUDA support"),
    ("SIG069", "RuntimeError: cuda driver can't be loaded, is cuda enabled?"),
    ("SIG105", "RuntimeError: LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
               "`get_node_local_rank` to work, assuming you are not running in a multi-device context"),
    ("SIG321", "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
               "store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)"),          # v1.8-v1.12
    ("SIG321", "torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on "
               "rank 3, for key: store_based_barrier_key:1 (world_size=8, num_workers_joined=4, timeout=0:30:00 "
               "error=wait timeout after 1800000ms, keys: /store_based_barrier_key:1)"),            # v1.13-v2.13
    ("SIG321", "torch.distributed.DistStoreError: Timed out waiting on barrier on rank 0, for key prefix: "
               "torchelastic/agent/terminal_state (world_size=2, missing_ranks=[1], timeout=300)"),
    ("SIG321", "TimeoutError: timed out waiting for all 4 members to join"),
    ("SIG322", "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
               "Unable to find address for: eth0"),
    ("SIG322", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/device.cc:135] Unable to find address for "
               "gpu-node-3; bind(2) for 10.0.0.9 failed with: Cannot assign requested address"),
    ("SIG323", "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] "
               "no error"),
    ("SIG324", "UserWarning: Got pickle error when attempting to start a worker Process. This might be because the "
               "worker Process arguments are not picklable."),
    ("SIG324", "AttributeError: Can't get attribute 'MyDataset' on <module '__mp_main__' from '/work/train.py'>"),
    ("SIG324", "AttributeError: Can't pickle local object 'build_loader.<locals>.<lambda>'"),
    ("SIG324", "_pickle.PicklingError: Can't pickle <function <lambda> at 0x7f3b2c>: attribute lookup <lambda> on "
               "__main__ failed"),
    ("SIG072", "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against "
               "7005"),                                                                             # v0.4-v1.7
    ("SIG072", "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, "
               "libcudnn_cnn.so}"),
    ("SIG076", "RuntimeError: The current installed version of g++ (13.2.0) is greater than the maximum required "
               "version by CUDA 11.8. Please make sure to use an adequate version of g++ (>=6.0.0, <12.0)."),
    ("SIG076", "UserWarning: The current installed version of g++ (5.4.0) is less than the minimum required version "
               "by CUDA 12.1 (6.0.0). Please make sure to use an adequate version of g++ (>=6.0.0, <13.0)."),
    ("SIG325", "RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at "
               "\"../c10/cuda/CUDACachingAllocator.cpp\":1123, please report a bug to PyTorch."),
    ("SIG325", "RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "
               "\"../c10/cuda/CUDACachingAllocator.cpp\":1076, please report a bug to PyTorch."),       # v2.0
    ("SIG325", "RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlDeviceGetHandleByPciBusId_v2_( pci_id, "
               "&nvml_device) INTERNAL ASSERT FAILED at \"../c10/cuda/CUDACachingAllocator.cpp\":963"),
    ("SIG022", "[rank0]:[E1201 ProcessGroupNCCL.cpp:1234] [PG ID 0 PG GUID 0(default_pg) Rank 0] Work WorkNCCL("
               "SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) timed out in blocking wait "
               "(TORCH_NCCL_BLOCKING_WAIT=1)."),                                                     # v2.2-v2.3
    ("SIG022", "1066.6s [rank1]: Watchdog caught collective operation timeout:\n[rank1]: WorkNCCL(SeqNum=306, "
               "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600032 milliseconds before "
               "timing out."),
    ("SIG015", "RuntimeError: FSDP needs a non-CPU accelerator device, but no accelerator device is detected."),
    ("SIG326", "RuntimeError: PTXAS error: Internal Triton PTX codegen error\nptxas fatal   : Value 'sm_120a' is "
               "not defined for option 'gpu-name'"),
    ("SIG326", "ptxas fatal : Value 'sm_52' is not defined for option 'gpu-name'"),                  # CUDA 13
    ("SIG327", "RuntimeError: Failed to find C compiler. Please specify via CC environment variable."),  # triton
    ("SIG327", "RuntimeError: Failed to find C compiler. Please specify via CC environment variable or set "
               "triton.knobs.build.impl."),
    ("SIG327", "torch._inductor.exc.InvalidCxxCompiler: No working C++ compiler found in "
               "torch._inductor.config.cpp.cxx: (None, 'g++')"),
    ("SIG328", "RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 1800000 ms"),   # wait_all_ranks
    ("SIG328", "RuntimeError: Rank 2 successfully reached monitoredBarrier, but received errors while waiting for "
               "send/recv from rank 0. Please check rank 0 logs for faulty rank."),
    ("SIG329", "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA versions. "
               "PyTorch has CUDA Version=11.7 and torchvision has CUDA Version=11.6. Please reinstall the "
               "torchvision that matches your PyTorch install."),                                   # older check
    ("SIG329", "RuntimeError: Detected that PyTorch and TorchAudio were compiled with different CUDA versions. "
               "PyTorch has CUDA version 12.8 whereas TorchAudio has CUDA version 12.9. Please install the "
               "TorchAudio version that matches your PyTorch version."),
    ("SIG330", "ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.29' not found "
               "(required by /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_python.so)"),
    ("SIG330", "OSError: /lib64/libc.so.6: version `GLIBC_2.28' not found (required by /home/u/.local/lib/"
               "python3.9/site-packages/nvidia/cudnn/lib/libcudnn.so.9)"),
    ("SIG330", "ImportError: /usr/lib/libstdc++.so.6: version `CXXABI_1.3.15' not found (required by "
               "/env/lib/python3.12/site-packages/triton/_C/libtriton.so)"),
    ("SIG331", "RuntimeError: cuda runtime error (98) : invalid device function at /pytorch/aten/src/THC/"
               "THCTensorMathPairwise.cu:21"),                                                       # THC era
    ("SIG331", "RuntimeError: Triton Error [CUDA]: invalid device function"),
    ("SIG067", "slurmstepd: error: Detected 1 oom_kill event in StepId=1054.0. Some of the step tasks have been OOM "
               "Killed."),
    ("SIG067", "slurmstepd: error: Detected 2 oom-kill event(s) in step 7.0 cgroup. Some of your processes may have "
               "been killed by the cgroup out-of-memory handler."),                                  # older Slurm
    ("SIG067", "slurmstepd: error: StepId=7.batch exceeded memory limit (734003200 > 52428800), being killed"),
    ("SIG067", "srun: error: gpu-node-3: task 5: Out Of Memory"),
    ("SIG332", "RuntimeError: Tensors must be CUDA and dense"),                                  # torch 1.x
    ("SIG332", "RuntimeError: No backend type associated with device type cpu"),
    ("SIG057", "RuntimeError: Triton Error [CUDA]: invalid argument"),
    ("SIG023", "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered"),
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
    # NCCL, second reading (NVIDIA/nccl v2.7.8-1 .. master): more wordings of known causes, and new causes
    ("SIG032", W + "Call to recv failed : Connection reset by peer"),                          # v2.4-v2.9 socket.h
    ("SIG037", W + "[Service thread] Accept failed Too many open files"),                       # proxy.cc v2.12+
    ("SIG037", W + "ncclSocketInit: Socket creation failed : Too many open files"),              # v2.16-v2.23
    ("SIG037", W + "Net : Socket creation failed : Too many open files"),                        # v2.7-v2.14
    ("SIG037", W + "UDS: Socket creation error : Too many open files (24)"),                     # ipcsocket.cc v2.18+
    ("SIG037", "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
               "error.\nLast error:\nUDS: Socket creation error : Too many open files (24)"),   # ncclGetLastError
    ("SIG008", "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. "
               "It can be also caused by unexpected exit of a remote peer, you can check NCCL warnings for "
               "failure reason and see if there is connection closure by a peer."),               # torch 1.10-2.x
    ("SIG006", W + "Error: failed to create shared memory file /dev/shm/nccl-Xa1b2C, error No space left on device "
               "(28)"),                                                                            # v2.23+
    ("SIG336", W + "Could not map /dev/shm/nccl-Ab12Cd"),                                         # v2.12-v2.14
    ("SIG336", W + "Could not map /dev/shm/nccl-Xa1b2C size 9637888, error: Cannot allocate memory"),  # v2.16-v2.21
    ("SIG336", W + "Error: Could not map /dev/shm/nccl-Xa1b2C size 9637892, error: Bad address (14)"),  # v2.23+
    ("SIG333", W + "Could not open XML topology file /etc/nccl/topo.xml : No such file or directory"),  # v2.7+
    ("SIG334", W + 'Unrecognized element token "collnet" when parsing "ring,collnet"'),       # tuning.cc v2.26+
    ("SIG334", W + 'Unrecognized prefix token "allreduc" when parsing "allreduc:ring"'),
    ("SIG035", W + "communicator encountered a fatal error (detected in ncclIbTest)"),           # net_ib v2.23+
    ("SIG035", "[rank4]: Last error:\n[rank4]: communicator encountered a fatal error (detected in ncclIbIsend)"),
    ("SIG214", "gpu1:2201:2260 [5] transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'"),  # v2.19+
    ("SIG214", "gpu1:2201:2260 [5] transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'"),    # v2.18
    ("SIG335", W + "Call to ibv_reg_dmabuf_mr failed with error Operation not supported"),        # ibvwrap.cc v2.13+
    ("SIG335", W + "Call to ibv_reg_mr failed with error Bad address errno 14"),                 # v2.19+ form
    ("SIG009", W + "Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory errno 12"),
    ("SIG009", W + "Call to ibv_create_qp failed with error Cannot allocate memory"),
    ("SIG114", W + "Call to ibv_open_device failed"),                                            # IBV_PTR_CHECK
    ("SIG029", "RuntimeError: NCCL Error 3: internal error"),                   # torch/csrc/cuda/nccl.cpp, NCCL <2.18
    ("SIG029", "RuntimeError: NCCL Error 4: invalid argument"),
    ("SIG030", "RuntimeError: NCCL Error 5: invalid usage"),
    ("SIG029", "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:290, internal error"),  # 1.x
    ("SIG030", "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:514, invalid usage"),
    ("SIG337", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:176, "
               "NCCL operation in progress, NCCL version 2.21.5"),
    ("SIG337", "RuntimeError: NCCL timeout when waiting for nonblocking call to become successful."),
    # CUDA libraries as torch reports them (ATen's TORCH_CUDABLAS_CHECK / AT_CUDNN_CHECK / CUFFT_CHECK, cuDNN v8 API)
    ("SIG341", "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedEx(handle, "
               "opa, opb, (int)m, (int)n, (int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea)`"),
    ("SIG341", "RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx(handle, opa, opb)`"),
    ("SIG341", "RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasLtMatmul(ltHandle, "
               "computeDesc.descriptor(), &alpha_val)`"),
    ("SIG342", "RuntimeError: GET was unable to find an engine to execute this computation"),   # Conv_v8.cpp
    ("SIG342", "RuntimeError: FIND was unable to find an engine to execute this computation"),
    ("SIG342", "RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"),           # cuDNN 9
    ("SIG342", "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
               "non-contiguous input."),
    ("SIG342", "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph."),
    ("SIG342", "Invalid handle. Cannot load symbol cudnnCreate"),
    ("SIG343", "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR"),
    ("SIG343", "RuntimeError: cusolver error: CUSOLVER_STATUS_INTERNAL_ERROR, when calling `cusolverDnCreate(handle)`"),
    # c10/cuda/driver_api.h C10_CUDA_DRIVER_CHECK: "CUDA driver error: " + cuGetErrorString
    ("SIG340", "RuntimeError: CUDA driver error: operation not supported"),
    ("SIG012", "RuntimeError: CUDA driver error: out of memory"),
    ("SIG057", "RuntimeError: CUDA driver error: device kernel image is invalid"),
    ("SIG346", "[E ProcessGroupNCCL.cpp:1320] Caught exception on rank 2 while running onCompletion hook for "
               "ProcessGroupNCCL: CUDA error: driver shutting down. Aborting all communicators."),
    ("SIG001", "RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)"),     # jiterator, NVRTC
    ("SIG346", "[W CUDAGuardImpl.h:46] Warning: CUDA warning: driver shutting down (function uncheckedGetDevice)"),
    ("SIG071", "RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED"),
    ("SIG002", "ERROR: This container was built for NVIDIA Driver Release 545.23 or later, but\n       version "
               "535.104.05 was detected and compatibility mode is UNAVAILABLE."),                  # NGC banner
    ("SIG013", "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [32,0,0] "
               "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed."),
    # kernel: Linux AER, IOMMU (drivers/pci/pcie/aer.c, drivers/iommu/intel/dmar.c, drivers/iommu/amd/iommu.c)
    ("SIG338", "pcieport 0000:00:01.1: AER: Uncorrected (Fatal) error message received from 0000:41:00.0"),
    ("SIG338", "pcieport 0000:00:01.1: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
               "(Receiver ID)"),
    ("SIG098", "pcieport 0000:00:01.1: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)"),
    ("SIG339", "[ 1523.118210] DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0xfbe00000 [fault reason "
               "0x06] PTE Read access is not set"),                                                # 5.x+
    ("SIG339", "DMAR: [DMA Write] Request device [3b:00.0] PASID ffffffff fault addr fbe00000 [fault reason 05] PTE "
               "Write access is not set"),                                                          # 4.x
    ("SIG339", "nvidia 0000:41:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0027 address=0xfd000000 "
               "flags=0x0020]"),
    ("SIG339", "AMD-Vi: Event logged [IO_PAGE_FAULT device=41:00.0 domain=0x0027 address=0xfd000000 flags=0x0020]"),
    # torch.distributed: heartbeat monitor and store wordings by release, torchrun exits
    ("SIG043", "[E ProcessGroupNCCL.cpp:1182] No PGNCCL's watchdog heartbeat detected, so we are dumping debug info."),
    ("SIG043", "[F ProcessGroupNCCL.cpp:1170] [Rank 3] NCCL monitor thread timeout. Basically, this could be due to "
               "CUDA or NCCL calls being unexpectedly blocking, especially when your program enters a deadlock"),
    ("SIG043", "[rank1]:[E1120 01:13:20.892421310 ProcessGroupNCCL.cpp:1440] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
               "Could not acquire GIL within 300 ms on exit, possible GIL induced hang"),
    ("SIG386", "[rank1]:[E614 11:14:03.086670611 ProcessGroupNCCL.cpp:1319] [PG 0 Rank 1] Failed to get exception "
               "dump flag from the global store.Connection reset by peer"),                        # v2.3-v2.4
    ("SIG112", "torch.distributed.DistBackendError: NCCL communicator encountered error set by ProcessGroupNCCL: "
               "Process Group destroyed on rank 0"),
    ("SIG344", "E0412 09:01:55.331000 22871 torch/distributed/elastic/agent/server/api.py:1008] Error waiting on exit "
               "barrier. Elapsed: 300.10 seconds"),
    ("SIG344", "ERROR:torch.distributed.elastic.agent.server.api:Error waiting on exit barrier. Elapsed: "
               "300.0478765964508 seconds"),                                                        # v1.x
    # NCCL plugins that exist but do not load (src/plugin/plugin_open.cc "%s/Plugin: %s: %s", v2.23-v2.30;
    # src/net.cc "NET/Plugin: Plugin load returned %d : %s when loading %s" v2.19-v2.22, "Plugin load (%s)" v2.10-18)
    ("SIG513", "node2:3311:3311 [0] NCCL INFO NET/Plugin: libnccl-net-ofi.so: libfabric.so.1: cannot open shared "
               "object file: No such file or directory"),
    ("SIG513", "node2:3311:3311 [0] NCCL INFO TUNER/Plugin: libnccl-tuner-sm.so: /usr/lib/libnccl-tuner-sm.so: "
               "undefined symbol: ncclTunerPlugin_v2"),
    ("SIG513", "node2:3311:3311 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libhcoll.so.1: cannot open "
               "shared object file: No such file or directory when loading libnccl-net.so"),
    ("SIG513", "node2:3311:3311 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 0 : "
               "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so: undefined symbol: sharp_coll_init"),
    # autograd (saved_variable.cpp, engine.cpp), Dynamo / inductor (utils.py, exc.py, cudagraph_trees.py)
    ("SIG519", "[rank0]: RuntimeError: one of the variables needed for gradient computation has been modified by an "
               "inplace operation: [torch.cuda.FloatTensor [64]], which is output 0 of ReluBackward0, is at version 2; "
               "expected version 1 instead. Hint: the backtrace further above shows the operation"),
    ("SIG520", "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors "
               "after they have already been freed). Saved intermediate values of the graph are freed when you call "
               ".backward() or autograd.grad()."),
    ("SIG520", "RuntimeError: Trying to backward through the graph a second time, but the saved intermediate results "
               "have already been freed. Specify retain_graph=True when calling backward the first time."),  # v1.x
    ("SIG521", "[rank3]: RuntimeError: Function 'MulBackward0' returned nan values in its 1th output."),
    ("SIG522", "torch._dynamo.exc.TorchRuntimeError: Dynamo failed to run FX node with fake tensors: call_function "
               "<built-in function add>(*(FakeTensor(..., size=(4, 3)), FakeTensor(..., size=(5,))), **{}): got "
               "RuntimeError('The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension "
               "1')"),
    ("SIG523", "torch._dynamo.exc.Unsupported: data dependent operator: aten._local_scalar_dense.default"),
    ("SIG524", "RuntimeError: Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent "
               "run. Stack trace: File \"m.py\", line 3. To prevent overwriting, clone the tensor outside of "
               "torch.compile()"),
    ("SIG522", "torch._dynamo.exc.TorchRuntimeError: Failed running call_function <built-in function add>(*(FakeTensor"
               "(..., size=(4, 3)), FakeTensor(..., size=(5,))), **{}):"),                          # torch 2.0-2.3
    ("SIG450", "pdsh@launcher: worker-1: ssh exited with exit code 255"),                           # pdsh runner
    # topo.h ncclTopoIdToNetDev (NIC fusion's fallback NET id 0 in 2.25-2.26, NVIDIA/nccl#1748)
    ("SIG525", "node3:4412:4501 [2] graph/topo.h:234 NCCL WARN Could not find NET with id 0"),
    # systemd's journal lines for the Fabric Manager unit
    ("SIG527", "Dec 04 06:05:48 hgx-node17 systemd[1]: Failed to start NVIDIA fabric manager service."),
    ("SIG527", "Dec 04 06:05:48 hgx-node17 systemd[1]: nvidia-fabricmanager.service: Main process exited, "
               "code=exited, status=1/FAILURE"),
    # the GPU Operator's driver container (gpu-driver-container nvidia-driver _unload_driver, k8s-driver-manager)
    ("SIG526", "nvidia-driver-ctr Could not unload NVIDIA driver kernel modules, driver is in use"),
    # DeepSpeed's runner: its ssh check uncaught (older releases: CalledProcessError of check_call's list argument)
    ("SIG450", "subprocess.CalledProcessError: Command '['ssh', '-o', 'PasswordAuthentication=no', '192.168.3.100', "
               "'hostname']' returned non-zero exit status 255."),
    # IBV_EVENT_GID_CHANGE (net_ib.cc v2.28-v2.30; "unknown event type (18)" before)
    ("SIG514", "node7:5120:5190 [0] transport/net_ib/common.cc:153 NCCL WARN NET/IB : mlx5_2:1 GID table changed"),
    ("SIG514", "node7:5120:5190 [0] transport/net_ib.cc:184 NCCL WARN NET/IB : mlx5_2:1 unknown event type (18)"),
    # torch: Join, allocator, FSDP flattening (both releases' wording); DeepSpeed's op builder
    ("SIG515", "[rank3]: RuntimeError: Detected at least one rank that exhausted inputs. Throwing across all ranks."),
    ("SIG516", "C:\\venv\\lib\\site-packages\\torch\\cuda\\memory.py:365: UserWarning: expandable_segments not "
               "supported on this platform (Triggered internally at C:\\actions-runner\\_work\\pytorch\\pytorch\\"
               "c10/cuda/CUDAAllocatorConfig.h:41.)"),
    ("SIG378", "ValueError: `FlatParameter` requires uniform `requires_grad`"),
    ("SIG421", "[rank0]: ValueError: Must flatten tensors with uniform dtype but got torch.bfloat16 and torch.float32"),
    ("SIG421", "ValueError: `FlatParameter` requires uniform dtype but got torch.float16 and torch.float32"),
    ("SIG421", "[rank0]: AssertionError: FSDP expects uniform original parameter dtype but got {torch.bfloat16, "
               "torch.float32}"),
    ("SIG517", "deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA "
               "version 12.2 does not match the version torch was compiled with 11.7, unable to compile cuda/cpp "
               "extensions without a matching cuda version."),
    ("SIG517", "[WARNING] DeepSpeed Op Builder: Installed CUDA version 12.4 does not match the version torch was "
               "compiled with 11.8.Detected `DS_SKIP_CUDA_CHECK=1`: Allowing this combination of CUDA, but it may "
               "result in unexpected behavior."),
    ("SIG345", "Root Cause (first observed failure):\n[0]:\n  time      : 2024-05-14_10:22:31\n  host      : gpu-3\n"
               "  rank      : 5 (local_rank: 5)\n  exitcode  : -15 (pid: 77121)\n  error_file: <N/A>\n"
               "  traceback : Signal 15 (SIGTERM) received by PID 77121"),
]

BENIGN = [
    "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py:456: UserWarning: Plan failed with a cudnnException: "
    "CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED",
    "[    0.110000] DMAR: IOMMU enabled",
    "[    0.120000] AMD-Vi: Interrupt remapping enabled",
    "I0412 09:01:55.331000 22871 torch/distributed/elastic/agent/server/api.py:1000] Local worker group finished "
    "(WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
    "gpu1:2201:2201 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/microsoft/ndv5-topo.xml",
    "gpu1:2201:2201 [0] NCCL INFO NCCL_ALGO set by environment to ring,tree",
    "gpu1:2201:2201 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    "gpu1:2201:2201 [0] NCCL INFO socketStartConnect: connect returned Connection refused, retrying (1/34) after "
    "sleep for 100 msec",
    "gpu1:2201:2260 [0] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, "
    "retrying 1/7 after 100 msec of sleep",
    "gpu1:2201:2260 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 1b000 / HCA 0 (distance 6 > 5)",
    "gpu1:2201:2201 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
    "gpu1:2201:2201 [0] NCCL INFO NCCL version 2.23.4+cuda12.6",
    "ssh: connect to host gpu1 port 22: Connection refused",
    "W0120 21:26:21.759000 444778 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1333] The node "
    "'ai11_444778_0' has failed to send a keep-alive heartbeat to the rendezvous 'exp3' due to an error of type "
    "RendezvousTimeoutError.",
    "RuntimeError: unable to write to file </tmp/ckpt.pt>: No space left on device (28)",
    # look-alikes of SIG200-SIG214 and of the widened forms
    "gpu1:2201:2201 [0] NCCL INFO NET/IB : mlx5_0:1 Got non-fatal async event: port active(9)",
    "gpu1:2201:2201 [0] transport/net_ib.cc:175 NCCL WARN NET/IB : mlx5_0:1 Got async error event: port active",
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
    "[W socket.cpp:464] [c10d] The server socket on [::]:29500 is not yet listening (errno: 111 - Connection "
    "refused), will retry.",
    "[rank0]:[E813 ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not found, potentially because "
    "FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
    "UserWarning: It seems like you did not set/select the default device for the current process before the "
    "DeviceMesh initialization or use a launcher (i.e. torchrun) which populates `LOCAL_RANK` environment variable.",
    "UserWarning: TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included for compilation.",
    "[rank0]:[I ProcessGroupNCCL.cpp:2041] [PG ID 0 PG GUID 0(default_pg) Rank 0] ProcessGroupNCCL broadcast unique "
    "ID through store took 0.41 ms",
    "INFO:torch.distributed.distributed_c10d:Rank 3: Completed store-based barrier for key:store_based_barrier_key:1 "
    "with 8 nodes.",
    "node2:3311:3311 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
    "node2:3311:3311 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)",
    "node2:3311:3311 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v8)",
    "node2:3311:3311 [0] NCCL INFO TUNER/Plugin: Could not find: libnccl-tuner.so. Using internal tuner plugin.",
    "Installed CUDA version 12.4 does not match the version torch was compiled with 12.1 but since the APIs are "
    "compatible, accepting this combination",
    "FSDP(model, use_orig_params=True, mixed_precision=MixedPrecision(param_dtype=torch.bfloat16))",
    "[rank0]: Join: rank 0 has exhausted its inputs and is shadowing the collectives",
    "loss.backward(retain_graph=True)  # keep the graph for the second loss",
    "UserWarning: Unable to hit fast path of CUDAGraphs because outputs from a previous step still require backward.",
    "V1204 10:00:00.000 torch/_dynamo/symbolic_convert.py:1201] [0/0] [__graph_breaks] Graph break in user code",
    "UserWarning: Error detected in NativeBatchNormBackward0. Traceback of forward call that caused the error:",
]


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

@pytest.mark.parametrize("line,want", [
    ("[rank3]:[E1201 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL("
     "SeqNum=57, OpType=ALLGATHER, NumelIn=1, NumelOut=4, Timeout(ms)=600000) ran for 600038 milliseconds before "
     "timing out.", ["Rank 3", "ALLGATHER", "SeqNum 57", "600000 ms", "600038 ms"]),
    ("RuntimeError: [Rank 0] Caught collective operation timeout: WorkNCCL(OpType=BROADCAST, TensorShape=[1024], "
     "Timeout(ms)=1800000) ran for 1800209 milliseconds before timing out.", ["Rank 0", "BROADCAST", "1800000 ms"]),
    ("[rank6]: [PG ID 0 PG GUID 0(default_pg) Rank 6] Received a dump signal due to a collective timeout from  "
     "rank 7 and we will try", ["Rank 6", "rank 7"]),
    ("[5] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', "
     "but store->get('0') got error: Socket Timeout", ["Rank 5", "key '0'", "Socket Timeout"]),
    ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [node1]:29500 (errno: 111 - Connection "
     "refused).", ["node1:29500", "errno 111", "Connection refused"]),
    ("Parameters which did not receive grad for rank 1: module.head.bias", ["Rank 1", "module.head.bias"]),
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: "
     "6000, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use", ["port 6000", "EADDRINUSE"]),
    ("[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in "
     "use).", ["port 29500", "errno 98"]),
    ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
     ["1 of 2 ranks", "901 s"]),
    ("The client socket has timed out after 30min while trying to connect to (master-0, 29500).", ["30 min"]),
    ("terminate called after throwing an instance of 'c10::DistBackendError'", ["c10::DistBackendError"]),
    ("[W socket.cpp:752] [c10d] The client socket has timed out after 600s while trying to connect to (10.128.0.15, "
     "23456).", ["10.128.0.15:23456", "600 s"]),
    ("[W socket.cpp:752] [c10d] The client socket has timed out after 1800000ms while trying to connect to (master, "
     "29500).", ["master:29500", "1800000 ms"]),
    ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
     "before calling NumCudaDevices() that might have already set an error? Error 999: unknown error (Triggered "
     "internally at ../c10/cuda/CUDAFunctions.cpp:108.)", ["CUDA error 999", "unknown error"]),
    ("[PG ID 0 PG GUID 0(default_pg) Rank 4] Work WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
     "Timeout(ms)=600000) timed out in blocking wait.", ["Rank 4", "ALLREDUCE", "SeqNum 9", "600000 ms"]),
    ("1066.6s [rank1]: Watchdog caught collective operation timeout:\n[rank1]: WorkNCCL(SeqNum=306, OpType=ALLREDUCE, "
     "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600032 milliseconds", ["ALLREDUCE", "SeqNum 306"]),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 "
     "GiB of which 1.06 GiB is free. Process 2143 has 40.10 GiB memory in use.", ["Process 2143", "40.10 GiB"]),
    # one exception message over several lines (reducer.cpp): the names come from its last line
    ("RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the following "
     "reasons: 1) Use of a module parameter outside the `forward` function.\nParameter at index 440 with name "
     "backbone.layers.3.mlp.fc2.bias has been marked as ready twice. This means that multiple autograd engine  hooks "
     "have fired", ["Parameter 440", "backbone.layers.3.mlp.fc2.bias"]),
    ("[rank1]: RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
     "This error indicates that your module has parameters that were not used in producing loss.\n[rank1]: making "
     "sure all `forward` function outputs participate in calculating loss.\n[rank1]: Parameter indices which did "
     "not receive grad for rank 1: 198 199\n", ["Rank 1", "198 199"]),
])
def test_conclusions_carry_the_captured_facts(line, want):
    """Conclude, don't echo: the finding's sentence names the rank, collective, timeout, peer, key or sizes."""
    from gpudoctor.rules.logs import _conclusion

    entries = {e["id"]: e for e in catalogue()}
    texts = [_conclusion(entries[h.id], h.groups) or "" for h in match_signatures(line)]
    joined = " | ".join(texts)
    for w in want:
        assert w in joined, (w, joined)
    assert "[[" not in joined and "{" not in joined


def test_optional_parts_of_a_conclusion_are_left_out():
    from gpudoctor.rules.logs import _conclusion

    e = {"id": "X", "conclusion": "[[Rank {rank}: ]]{op} failed[[ (SeqNum {seq})]]."}
    assert _conclusion(e, {"op": "ALLREDUCE"}) == "ALLREDUCE failed."
    assert _conclusion(e, {"op": "ALLREDUCE", "rank": "2", "seq": "9"}) == "Rank 2: ALLREDUCE failed (SeqNum 9)."
    assert _conclusion(e, {}) is None


def test_watchdog_follow_ons_reported_under_the_timeout(tmp_path):
    """The sequence-number and dump-signal lines of the same timeout are attached to SIG022, not separate findings;
    the store wait behind a failed NCCL id exchange is attached to SIG300."""
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    p = tmp_path / "log.txt"
    p.write_text(
        "[rank1]:[E1003 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL("
        "SeqNum=6463, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800017 milliseconds "
        "before timing out.\n"
        "[rank1]:[E1003 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either an error or timeout) "
        "detected by watchdog at work: 6463, last enqueued NCCL work: 6463, last completed NCCL work: 6462.\n"
        "[rank1]:[E1003 ProcessGroupNCCL.cpp:1715] [PG 0 (default_pg) Rank 1] To avoid data inconsistency, we are "
        "taking the entire process down.\n")
    snap, _ = build_snapshot([str(p)])
    got = {f.rule_id: f for f in evaluate(snap).findings}
    assert "SIG022" in got and "SIG301" not in got and "SIG112" not in got
    assert any("follow-on (SIG301" in line for line in got["SIG022"].evidence)
    p.write_text("[3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store "
                 "by key '0', but store->get('0') got error: wait timeout after 600000ms, keys: /default_pg//0\n")
    snap, _ = build_snapshot([str(p)])
    got = {f.rule_id: f for f in evaluate(snap).findings}
    assert "SIG300" in got and "SIG041" not in got
    # NCCL's NVLS bind failure quotes the CUDA error (transport/nvls.cc "... : CUDA error %d '%s'"): one finding
    p.write_text("node7:5510:5590 [4] transport/nvls.cc:285 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast "
                 "memory of size 536870912 : CUDA error 999 'unknown error'\n")
    snap, _ = build_snapshot([str(p)])
    got = {f.rule_id: f for f in evaluate(snap).findings}
    assert "SIG214" in got and "SIG057" not in got
    assert any("follow-on (SIG057" in line for line in got["SIG214"].evidence)


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


# --- SIG500: the caching allocator's configuration parser, every era (torch 1.10-2.7 and 2.8-2.13 forms) ---------
ALLOC_CONF = [
    "RuntimeError: Unrecognized CachingAllocator option: expandable_segments",          # torch 2.0 and a 2.1+ key
    "RuntimeError: Unrecognized key 'expandable_segment' in Accelerator allocator config.",   # 2.8+
    "ValueError: Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'maybe'",   # measured, torch 2.11
    "RuntimeError: Expected a single True/False argument for expandable_segments",              # 2.1-2.7
    "RuntimeError: CachingAllocator option max_split_size_mb too small, must be >= 20",
    "RuntimeError: garbage_collect_threshold too big, set it 0.0~1.0",
    "RuntimeError: garbage_collect_threshold is invalid, set it in (0.0, 1.0)",
    "RuntimeError: For roundups, the divisions has to be power of 2 ",
    "RuntimeError: Unknown allocator backend, options are native and cudaMallocAsync",
]


@pytest.mark.parametrize("line", ALLOC_CONF)
def test_allocator_config_errors_match(line):
    assert "SIG500" in {h.id for h in match_signatures(line)}


def test_allocator_config_lookalikes_stay_quiet():
    assert "SIG500" not in {h.id for h in match_signatures(
        "[W CUDAAllocatorConfig.h:28] Warning: expandable_segments not supported on this platform")}
    assert "SIG500" not in {h.id for h in match_signatures("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")}


# every line built from a source's format string (REAL: NCCL / PyTorch, REAL_SYSTEM: CUDA, container, driver) and
# every benign look-alike (BENIGN, BENIGN_SYSTEM), in one pair of tests
ALL_REAL = REAL + REAL_SYSTEM


@pytest.mark.parametrize("sid,line", ALL_REAL, ids=[f"{s}-{i}" for i, (s, _) in enumerate(ALL_REAL)])
def test_real_format_string_instantiations_match(sid, line):
    assert sid in {h.id for h in match_signatures(line)}


@pytest.mark.parametrize("line", BENIGN + BENIGN_SYSTEM)
def test_info_and_lookalike_lines_stay_quiet(line):
    assert match_signatures(line) == []


@pytest.mark.parametrize("line,want,not_want", [
    (W + "Call to ibv_reg_mr failed with error Cannot allocate memory", "SIG009", "SIG335"),  # memlock
    (W + "Call to ibv_reg_dmabuf_mr failed with error Operation not supported", "SIG335", "SIG009"),  # DMA-BUF
    (W + "Call to ibv_reg_mr failed with error Bad address", "SIG335", "SIG009"),  # peer memory, not memlock
    (W + "Call to socket failed : Too many open files", "SIG037", "SIG335"),
])
def test_the_errno_picks_the_cause_of_a_failed_registration(line, want, not_want):
    ids = {h.id for h in match_signatures(line)}
    assert want in ids and not_want not in ids


def test_a_failed_cuda_call_is_not_read_as_a_system_call():
    """SIG037 reads "<call> failed : <errno>"; cudaIpcGetMemHandle's 'invalid argument' is a CUDA error string."""
    assert "SIG037" not in {h.id for h in match_signatures(W + "cudaIpcGetMemHandle failed : invalid argument")}
    assert "SIG037" in {h.id for h in match_signatures(W + "Call to open failed : Invalid argument")}


def test_ib_completion_conclusion_names_the_peer_apart_from_the_status(tmp_path):
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    p = tmp_path / "ib.txt"
    p.write_text(W + "NET/IB : Got completion from peer 10.0.0.5<45678> with status=12 opcode=0 len=0 vendor err 129 "
                     "(Recv) localGid ::ffff:10.0.0.4\n")
    snap, _ = build_snapshot([str(p)])
    got = {f.rule_id: f for f in evaluate(snap).findings}
    assert got["SIG034"].data["conclusion"] == "IB completion status 12 from peer 10.0.0.5<45678>."


def test_the_last_error_text_is_an_error_line_even_without_an_error_word():
    """torch prints ncclGetLastError() after "Last error:" without NCCL's WARN prefix; an unknown one is still
    listed as unexplained (the payload is the cause the user needs), on its own line or on the same line."""
    from gpudoctor.parsers.signatures import unexplained_error_lines

    text = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run "
            "with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
            "[rank2]: Last error:\n[rank2]: NET/Plugin: some plugin said no to 10.0.0.2\n")
    spans: list = []
    match_signatures(text, spans=spans)
    assert unexplained_error_lines(text, spans) == ["[rank2]: NET/Plugin: some plugin said no to 10.0.0.2"]
    one = "Last error: something the plugin said\n"
    assert unexplained_error_lines(one, []) == ["Last error: something the plugin said"]
    assert unexplained_error_lines("Last error:\n\n", []) == []


@pytest.mark.parametrize("line", [
    "gpu1:2201:2201 [0] transport.cc:384 NCCL WARN Cannot initialize CollNet, using point-to-point network instead",
    "[W Utils.hpp:133] Warning: Environment variable NCCL_ASYNC_ERROR_HANDLING is deprecated; use "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING instead (function getCvarInt)",
    "[    4.51] nvidia: module verification failed: signature and/or required key missing - tainting kernel",
])
def test_quiet_lines_are_not_unexplained_errors(line):
    from gpudoctor.parsers.signatures import unexplained_error_lines

    assert unexplained_error_lines(line, []) == []


def test_the_static_graph_error_is_not_also_the_unused_parameters_error(tmp_path):
    """reducer.cpp's static_graph message starts like the unused-parameters one; find_unused_parameters is the
    wrong fix for it, so SIG052 is reported inside SIG056."""
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    p = tmp_path / "ddp.txt"
    p.write_text("RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
                 "This error indicates that your training graph has changed in this iteration, e.g., one parameter is "
                 "used in first iteration, but then got unused in the second iteration. this is not compatible with "
                 "static_graph set to True.\n")
    ids = {f.rule_id for f in evaluate(build_snapshot([str(p)])[0]).findings}
    assert "SIG056" in ids and "SIG052" not in ids


def test_the_exit_barrier_wait_is_not_reported_as_an_unreachable_master(tmp_path):
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    p = tmp_path / "exit.txt"
    p.write_text("[E socket.cpp:957] [c10d] The client socket has timed out after 300s while trying to connect to "
                 "(node-0, 29400).\nERROR:torch.distributed.elastic.agent.server.api:Error waiting on exit barrier. "
                 "Elapsed: 300.0478765964508 seconds\n")
    ids = {f.rule_id for f in evaluate(build_snapshot([str(p)])[0]).findings}
    assert "SIG344" in ids and "SIG038" not in ids


def test_workers_torchrun_stopped_after_another_failed_are_not_a_sigterm_root_cause():
    """torchrun SIGTERMs the other workers once one fails: their -15 under "Other Failures" is not the cause."""
    text = ("Failures:\n[1]:\n  time      : 2024-05-14_10:22:31\n  host      : gpu-3\n  rank      : 6 (local_rank: 6)\n"
            "  exitcode  : -15 (pid: 77122)\n  error_file: <N/A>\n  traceback : Signal 15 (SIGTERM) received by PID "
            "77122\n-----\nRoot Cause (first observed failure):\n[0]:\n  time      : 2024-05-14_10:22:30\n"
            "  host      : gpu-3\n  rank      : 5 (local_rank: 5)\n  exitcode  : 1 (pid: 77121)\n")
    ids = {h.id for h in match_signatures(text)}
    assert "SIG050" in ids and "SIG345" not in ids


@pytest.mark.parametrize("line,want", [
    ("pcieport 0000:00:01.1: AER: Uncorrectable (Fatal) error message received from 0000:41:00.0", "SIG338"),  # 6.8+
    ("pcieport 0000:00:01.1: AER: Correctable error message received from 0000:41:00.0", "SIG098"),           # 6.8+
])
def test_aer_wording_of_newer_kernels(line, want):
    assert want in {h.id for h in match_signatures(line)}


def test_the_shm_mmap_failure_explains_the_segment_line_after_it():
    from gpudoctor.parsers.signatures import unexplained_error_lines

    text = (W + "Error: Could not map /dev/shm/nccl-Xa1b2C size 9637892, error: Cannot allocate memory (12)\n"
            + W + "Error while creating shared memory segment /dev/shm/nccl-Xa1b2C (size 9637888), error: Cannot "
            "allocate memory (12)\n")
    spans: list = []
    assert "SIG336" in {h.id for h in match_signatures(text, spans=spans)}
    assert unexplained_error_lines(text, spans) == []

