"""Make real failures on a GPU host and diagnose each captured log with `gpudoctor check` (issue 14, item 7).

Each fault runs a small torch program in a fresh process, with the environment it needs, and keeps its stderr and
stdout as the user would paste them: NCCL_SOCKET_IFNAME naming no interface, a CPU tensor given to an NCCL
collective, GPU out of memory (with and without expandable segments), a device-side index assert, a DataLoader
worker killed by SIGKILL, a torchrun worker ended by SIGTERM; and (2026-12-03) an out-of-memory under a per-process
memory fraction, a truncated checkpoint, a checkpoint refused by weights_only, a Git LFS pointer given to torch.load,
torch.save to a full device (/dev/full), FSDP with frozen and trainable parameters in one unit, FSDP on a module left
on the CPU, and a CUDA tensor from expandable segments sent to another process; and (2026-12-03, second run) torchrun
starting two ranks on a one-GPU host, and a torchrun worker's out-of-memory from a script without its source (a .pyc);
and (2026-12-03, third run) a host sync inside CUDA-graph capture, eigh of a NaN matrix, cholesky of a matrix that is
not positive-definite, DDP of a module with no trainable parameter, of a lazy module, and of a module left on the CPU;
and (2026-12-03, fourth run) torch.load of a GPU checkpoint into a full GPU, fully_shard of a scalar parameter, a
DTensor mixed with a plain tensor, all_gather_into_tensor and all_to_all_single with sizes that do not fit the group,
ncclCommInitRank with a rank past the rank count, NCCL_SOCKET_IFNAME naming no interface (two ranks) or a prefix, an
FSDP module with parameter CPU offload moved to the GPU, and DataLoader workers collating images of two sizes;
and (2026-12-04) the NCCL watchdog timing out a collective, the store port taken, the store waiting for a rank that
never starts, a store host that does not resolve, DDP with an unused parameter and with a layer checkpointed twice,
a cuda:1 checkpoint loaded on one GPU, CUDA in a forked child, a hidden GPU, set_device past the GPU count, a Triton
kernel's illegal address, DataLoader workers under a low descriptor limit, and torch.compile without a C compiler;
and (2026-12-04, seventh run) a Triton kernel needing more shared memory than a block has, an upsampling output and a
reflection pad input of more than 2^31 elements, and a depthwise convolution over a 3.77e9-element batch; and
(2026-12-04, ninth run) NCCL_BUFFSIZE=8M and NCCL_IB_DISABLE=true (integers NCCL reads as 8 and 0), an NCCL net plugin
whose dependency is missing, and FSDP over parameters of two dtypes.
Nothing changes the
GPU's settings; every child has a timeout. Usage, on the GPU host::

    PYTHONPATH=. python3 scripts/gpu_fault_logs.py OUT_DIR

writes OUT_DIR/<fault>.log, OUT_DIR/<fault>.json (the check report) and prints one line per fault: the signatures
that fired. docs/examples/h200-fault-logs-2026-12-02/ keeps the result of a run, tests/fixtures/h200-fault-logs/
its logs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FSDP_MIXED_DTYPE = """
import os, torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29531")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.cuda.set_device(0)
m = torch.nn.Sequential(torch.nn.Linear(8, 8).to(torch.bfloat16), torch.nn.Linear(8, 8)).cuda()
FSDP(m)
"""
NCCL_ONE_RANK = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29511")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
t = torch.ones(1 << 20, device="cuda")
dist.all_reduce(t); torch.cuda.synchronize()
print("all_reduce ok", t[0].item())
dist.destroy_process_group()
"""
CPU_TENSOR = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29512")
dist.init_process_group("nccl", rank=0, world_size=1)
dist.all_reduce(torch.ones(4))
"""
OOM = """
import torch
x = torch.empty(int(4e12), dtype=torch.uint8, device="cuda")
"""
INDEX_ASSERT = """
import torch
emb = torch.nn.Embedding(10, 4).cuda()
emb(torch.tensor([3, 12], device="cuda"))
torch.cuda.synchronize()
"""
DATALOADER_KILLED = """
import os, signal, torch
class Data(torch.utils.data.Dataset):
    def __len__(self): return 8
    def __getitem__(self, i):
        if i == 3: os.kill(os.getpid(), signal.SIGKILL)
        return torch.zeros(2)
for _ in torch.utils.data.DataLoader(Data(), num_workers=2): pass
"""
SIGTERM_WORKER = """
import os, signal, time
if int(os.environ.get("LOCAL_RANK", "0")) == 0:
    time.sleep(1); os.kill(os.getpid(), signal.SIGTERM)
time.sleep(30)
"""
TWO_RANKS_ONE_GPU = """
import os, torch, torch.distributed as dist
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
t = torch.ones(1 << 20, device="cuda")
dist.all_reduce(t); torch.cuda.synchronize()
dist.destroy_process_group()
"""
OOM_FRACTION = """
import torch
torch.cuda.set_per_process_memory_fraction(0.2, 0)
total = torch.cuda.get_device_properties(0).total_memory
x = torch.empty(int(total * 0.3), dtype=torch.uint8, device="cuda")
"""
TRUNCATED_CHECKPOINT = """
import os, tempfile, torch
p = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"w": torch.randn(1024, 1024)}, p)
with open(p, "r+b") as f:
    f.truncate(os.path.getsize(p) // 2)
torch.load(p)
"""
WEIGHTS_ONLY = """
import os, tempfile, torch
class RunConfig:
    lr = 3e-4
p = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"w": torch.zeros(2), "config": RunConfig()}, p)
torch.load(p)
"""
LFS_POINTER = """
import os, tempfile, torch
p = os.path.join(tempfile.mkdtemp(), "model.bin")
with open(p, "w") as f:
    f.write("version https://git-lfs.github.com/spec/v1\\noid sha256:4d7a2146d3c1e2f0\\nsize 438007537\\n")
torch.load(p, weights_only=False)
"""
SAVE_DISK_FULL = """
import torch
torch.save({"w": torch.randn(4096, 4096)}, "/dev/full")
"""
FSDP_MIXED_GRAD = """
import os, torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29514")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.cuda.set_device(0)
m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)).cuda()
m[0].weight.requires_grad_(False)
FSDP(m, use_orig_params=False)
"""
FSDP_ON_CPU = """
import os, torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29515")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.cuda.set_device(0)
m = FSDP(torch.nn.Linear(8, 8))
m(torch.randn(2, 8, device="cuda")).sum().backward()
"""
EXPANDABLE_IPC = """
import torch, torch.multiprocessing as mp
def child(q):
    t = q.get(); print("child got", t.device, t.sum().item())
if __name__ == "__main__":
    ctx = mp.get_context("spawn"); q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,)); p.start()
    q.put(torch.ones(1 << 20, device="cuda")); p.join(60)
    print("child exit", p.exitcode)
"""

# added 2026-12-03 (third run): the new signatures of that day, on the real messages
GRAPH_CAPTURE_SYNC = """
import torch
s = torch.cuda.Stream(); x = torch.ones(8, device="cuda")
with torch.cuda.stream(s):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2
        y.sum().item()
"""
EIGH_NAN = """
import torch
a = torch.full((64, 64), float("nan"), device="cuda")
torch.linalg.eigh(a)
"""
CHOLESKY_NOT_PD = """
import torch
torch.linalg.cholesky(-torch.eye(8, device="cuda"))
"""
DDP_NO_GRAD = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29518")
dist.init_process_group("nccl", rank=0, world_size=1); torch.cuda.set_device(0)
m = torch.nn.Linear(8, 8).cuda().requires_grad_(False)
torch.nn.parallel.DistributedDataParallel(m, device_ids=[0])
"""
DDP_LAZY = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29519")
dist.init_process_group("nccl", rank=0, world_size=1); torch.cuda.set_device(0)
torch.nn.parallel.DistributedDataParallel(torch.nn.LazyLinear(8).cuda(), device_ids=[0])
"""
DDP_CPU_MODULE = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29520")
dist.init_process_group("nccl", rank=0, world_size=1); torch.cuda.set_device(0)
torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8), device_ids=[0])
"""

# added 2026-12-03 (fourth run): the signatures added that evening (SIG459-SIG463) on the real messages
TORCH_LOAD_GPU_FULL = """
import torch, os
p = "/tmp/gd_fault_ckpt.pt"
torch.save({"w": torch.ones(int(2e9), dtype=torch.uint8, device="cuda")}, p)  # 2 GB saved from cuda:0
torch.cuda.empty_cache()  # the saved tensor's 2 GB back to the driver, so that the hog below takes them
free, total = torch.cuda.mem_get_info()
hog = torch.empty(free - (512 << 20), dtype=torch.uint8, device="cuda")  # leave 512 MiB
torch.load(p)  # no map_location: the tensor goes back to cuda:0
"""
FSDP2_SCALAR = """
import os, torch, torch.distributed as dist
from torch.distributed.fsdp import fully_shard
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29521")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
class M(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.lin = torch.nn.Linear(8, 8); self.logit_scale = torch.nn.Parameter(torch.tensor(2.6))
fully_shard(M().cuda())
"""
DTENSOR_MIXED = """
import os, torch, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import distribute_tensor, Shard
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29522")
os.environ.setdefault("RANK", "0"); os.environ.setdefault("WORLD_SIZE", "1")
mesh = init_device_mesh("cuda", (1,))
w = distribute_tensor(torch.randn(8, 8, device="cuda"), mesh, [Shard(0)])
freqs = torch.randn(8, 8, device="cuda")  # a buffer left out of the plan
print(torch.mm(w, freqs))
"""
ALLGATHER_SIZE = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29523")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
inp = torch.ones(1024, device="cuda")
out = torch.empty(8 * 1024, device="cuda")  # sized for 8 ranks, the group has 1
dist.all_gather_into_tensor(out, inp)
"""
ALLTOALL_SPLITS = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29524")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
inp = torch.ones(6, 4, device="cuda"); out = torch.empty(6, 4, device="cuda")
dist.all_to_all_single(out, inp, output_split_sizes=[6], input_split_sizes=[5])  # 5 != dim 0 (6)
"""
NCCL_INVALID_RANK = """
import ctypes, torch  # torch loads the NCCL it was built with
torch.cuda.init()
lib = ctypes.CDLL("libnccl.so.2")
class UID(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]
uid = UID(); assert lib.ncclGetUniqueId(ctypes.byref(uid)) == 0
comm = ctypes.c_void_p()
rc = lib.ncclCommInitRank(ctypes.byref(comm), 2, uid, 5)  # rank 5 of a 2-rank communicator
lib.ncclGetErrorString.restype = ctypes.c_char_p
raise SystemExit(f"ncclCommInitRank failed: {lib.ncclGetErrorString(rc).decode()} (code {rc})")
"""
IFNAME_TWO_RANKS = """
import os, torch, torch.distributed as dist
torch.cuda.set_device(0)  # one GPU: both ranks on it (the bootstrap runs before any GPU check)
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
dist.all_reduce(torch.ones(4, device="cuda")); torch.cuda.synchronize()
"""

FSDP_OFFLOAD_MOVED = """
import os, torch, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, CPUOffload
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29526")
dist.init_process_group("nccl", rank=0, world_size=1); torch.cuda.set_device(0)
m = FSDP(torch.nn.Linear(64, 64), cpu_offload=CPUOffload(offload_params=True))
m = m.cuda()  # the module moved off the CPU after wrapping
m(torch.randn(2, 64, device="cuda")).sum().backward()
"""
COLLATE_SIZES = """
import torch
class Images(torch.utils.data.Dataset):
    def __len__(self): return 8
    def __getitem__(self, i): return torch.zeros(3, 224 if i % 2 == 0 else 256, 224)  # no resize in the transform
if __name__ == "__main__":
    for batch in torch.utils.data.DataLoader(Images(), batch_size=4, num_workers=2):
        print(batch.shape)
"""

# added 2026-12-04 (sixth run): a collective stuck behind a kernel past the process group's timeout (the NCCL
# watchdog), an illegal address written by a Triton kernel, the store port already taken, rank 0 waiting for a
# rank that never comes, a store host name that does not resolve, DDP with a parameter left out of the loss, DDP
# with one layer run twice under reentrant checkpointing, a checkpoint saved on cuda:1 loaded on a one-GPU host,
# CUDA used in a forked child, DataLoader workers under a 64-descriptor limit (this process's own rlimit), a
# hidden GPU (CUDA_VISIBLE_DEVICES=1), set_device past the GPU count, and torch.compile without a C compiler
WATCHDOG = """
import os, datetime, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29531")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0),
                        timeout=datetime.timedelta(seconds=10))
t = torch.ones(1 << 20, device="cuda")
dist.all_reduce(t); torch.cuda.synchronize()
torch.cuda._sleep(int(2e11))  # a kernel that spins ~100 s, queued before the collective
dist.all_reduce(t)
torch.cuda.synchronize()
"""
TRITON_OOB = """
import torch, triton, triton.language as tl

@triton.jit
def poke(p):
    tl.store(p + (1 << 40), 1.0)

x = torch.zeros(1, device="cuda")
poke[(1,)](x)
torch.cuda.synchronize()
print(x)
"""
PORT_TAKEN = """
import os, socket, torch, torch.distributed as dist
s = socket.socket(); s.bind(("0.0.0.0", 29532)); s.listen()  # another job's store on the port
os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "29532"
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
"""
STORE_WAIT = """
import os, datetime, torch, torch.distributed as dist
os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "29533"
dist.init_process_group("nccl", rank=0, world_size=2, timeout=datetime.timedelta(seconds=15),
                        device_id=torch.device("cuda", 0))
"""
STORE_HOST_UNRESOLVED = """
import os, datetime, torch, torch.distributed as dist
os.environ["MASTER_ADDR"] = "trainer-master-0.invalid"; os.environ["MASTER_PORT"] = "29534"
dist.init_process_group("nccl", rank=1, world_size=2, timeout=datetime.timedelta(seconds=15))
"""
DDP_UNUSED = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29535")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.used = torch.nn.Linear(8, 8); self.head2 = torch.nn.Linear(8, 2)
    def forward(self, x): return self.used(x)  # head2 never takes part in the loss
m = DDP(Net().cuda(), device_ids=[0])
for _ in range(2):
    m(torch.randn(4, 8, device="cuda")).sum().backward()
"""
DDP_READY_TWICE = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29536")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.block = torch.nn.Linear(8, 8)
    def forward(self, x):
        x = checkpoint(self.block, x, use_reentrant=True)
        return checkpoint(self.block, x, use_reentrant=True)  # the same layer twice
m = DDP(Net().cuda(), device_ids=[0], find_unused_parameters=True)
m(torch.randn(4, 8, device="cuda", requires_grad=True)).sum().backward()
"""
LOAD_CUDA1 = """
import io, torch
buf = io.BytesIO()
torch.save({"w": torch.ones(2, device="cuda:0")}, buf, _use_new_zipfile_serialization=False)
raw = buf.getvalue().replace(b"cuda:0", b"cuda:1")  # as saved by the rank that ran on GPU 1
open("/tmp/ckpt_rank1.pt", "wb").write(raw)
torch.load("/tmp/ckpt_rank1.pt", weights_only=True)
"""
CUDA_FORK = """
import multiprocessing as mp, torch
torch.zeros(1, device="cuda")  # CUDA is initialised in the parent
def child(): torch.zeros(1, device="cuda")
p = mp.get_context("fork").Process(target=child); p.start(); p.join()
print("child exit code", p.exitcode)
"""
FD_LIMIT = """
import resource, torch
from torch.utils.data import DataLoader, Dataset
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))  # this process's own limit, as a low `ulimit -n` gives
torch.multiprocessing.set_sharing_strategy("file_descriptor")
class Many(Dataset):
    def __len__(self): return 64
    def __getitem__(self, i): return [torch.zeros(4) for _ in range(100)]
if __name__ == "__main__":
    for _ in DataLoader(Many(), batch_size=None, num_workers=2): pass
"""
HIDDEN_GPU = """
import torch
print("device_count", torch.cuda.device_count())
torch.zeros(1, device="cuda")
"""
SET_DEVICE_PAST = """
import torch
torch.cuda.set_device(3)
torch.zeros(1, device="cuda")
"""
COMPILE_NO_CC = """
import torch
f = torch.compile(lambda x: torch.sin(x) * 2 + 1)
print(f(torch.randn(64, device="cuda")).sum().item())
"""
# 2026-12-04, seventh run: kernels past a hardware or indexing limit
TRITON_SMEM = """
import torch, triton, triton.language as tl

@triton.jit
def mm(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m = tl.arange(0, M); n = tl.arange(0, N); k = tl.arange(0, K)
    acc = tl.zeros((M, N), dtype=tl.float32)
    for _ in range(4):
        acc += tl.dot(tl.load(a + m[:, None] * K + k[None, :]), tl.load(b + k[:, None] * N + n[None, :]))
    tl.store(c + m[:, None] * N + n[None, :], acc)

M = N = K = 512  # 512x512 fp16 tiles: far more shared memory than one block may have
a = torch.randn(M, K, device="cuda", dtype=torch.float16); b = torch.randn(K, N, device="cuda", dtype=torch.float16)
c = torch.empty(M, N, device="cuda")
mm[(1,)](a, b, c, M, N, K, num_stages=4, num_warps=8)
torch.cuda.synchronize()
"""
UPSAMPLE_INT_MAX = """
import torch, torch.nn.functional as F
x = torch.zeros(1, 1, 600, 700, 700, device="cuda", dtype=torch.half)  # x2 nearest: 2.35e9 output elements
F.interpolate(x, scale_factor=2, mode="nearest")
torch.cuda.synchronize()
"""
REFLECT_PAD_INT_MAX = """
import torch, torch.nn.functional as F
x = torch.zeros(2, 1, 2 ** 30 + 1, device="cuda", dtype=torch.half)  # 2^31 + 2 elements
F.pad(x, (1, 1), mode="reflect")
torch.cuda.synchronize()
"""
DEPTHWISE_BIG = """
import torch
conv = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32).cuda()  # depthwise, as in EfficientNet
with torch.no_grad():
    conv(torch.randn(3200, 32, 192, 192, device="cuda"))  # 3.77e9 elements (pytorch/pytorch#155225)
torch.cuda.synchronize()
"""

# NCCL_ALGO / NCCL_PROTO / NCCL_TOPO_FILE faults need two ranks on two GPUs: a one-rank communicator skips the
# tuning and topology code that reads them (tried on one H200 with NCCL 2.28.9: the job succeeds, nothing printed)
# added 2026-12-04 (eighth run): NCCL_COMM_ID naming an address of no local interface, and a port another program
# listens on (rank 0 creates NCCL's bootstrap root there: the bind fails and torch prints NCCL's last error)
COMM_ID_PORT_TAKEN = """
import os, socket
s = socket.socket(); s.bind(("127.0.0.1", 29998)); s.listen(1)  # another program holds the port
os.environ["NCCL_COMM_ID"] = "127.0.0.1:29998"
""" + NCCL_ONE_RANK
#: every ncclResult_t with ncclGetErrorString of the NCCL torch loads, as a tab table and as a Markdown table: what a
#: user pastes from a wiki page (a reference listing, not a log: `check` must say so and report no error)
NCCL_RESULT_TABLE = """
import ctypes, glob, os, torch
names = ["ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError", "ncclInvalidArgument",
         "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"]  # nccl.h.in (ncclNumResults excluded)
cands = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "nccl", "lib", "libnccl.so*"))
lib = ctypes.CDLL(cands[0] if cands else "libnccl.so.2")
lib.ncclGetErrorString.restype = ctypes.c_char_p
rows = [(i, n, lib.ncclGetErrorString(i).decode()) for i, n in enumerate(names)]
print("# NCCL result codes (ncclGetErrorString, NCCL %s)" % (torch.cuda.nccl.version(),))
print()
print("| value | name | meaning |")
print("|---|---|---|")
for i, n, t in rows:
    print(f"| {i} | {n} | {t} |")
"""

FAULTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "nccl-socket-ifname-none": (["-c", NCCL_ONE_RANK], {"NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "nosuchif0"}),
    "nccl-cpu-tensor": (["-c", CPU_TENSOR], {}),
    "cuda-oom": (["-c", OOM], {}),
    "cuda-oom-expandable-segments": (["-c", OOM], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    "dataloader-worker-killed": (["-c", DATALOADER_KILLED], {}),
    "cuda-index-assert": (["-c", INDEX_ASSERT], {}),
    # added 2026-12-03: checkpoints, FSDP set-up, memory cap, expandable segments across processes
    "cuda-oom-memory-fraction": (["-c", OOM_FRACTION], {}),
    "checkpoint-truncated": (["-c", TRUNCATED_CHECKPOINT], {}),
    "checkpoint-weights-only": (["-c", WEIGHTS_ONLY], {}),
    "checkpoint-lfs-pointer": (["-c", LFS_POINTER], {}),
    "checkpoint-save-disk-full": (["-c", SAVE_DISK_FULL], {}),
    "fsdp-mixed-requires-grad": (["-c", FSDP_MIXED_GRAD], {}),
    "fsdp-module-on-cpu": (["-c", FSDP_ON_CPU], {}),
    "cuda-graph-capture-sync": (["-c", GRAPH_CAPTURE_SYNC], {}),
    "linalg-eigh-nan": (["-c", EIGH_NAN], {}),
    "linalg-cholesky-not-pd": (["-c", CHOLESKY_NOT_PD], {}),
    "ddp-module-without-grad": (["-c", DDP_NO_GRAD], {}),
    "ddp-lazy-module": (["-c", DDP_LAZY], {}),
    "ddp-module-on-cpu": (["-c", DDP_CPU_MODULE], {}),
    "torch-load-gpu-full": (["-c", TORCH_LOAD_GPU_FULL], {}),
    "fsdp2-scalar-param": (["-c", FSDP2_SCALAR], {}),
    "dtensor-mixed-tensor": (["-c", DTENSOR_MIXED], {}),
    "allgather-into-tensor-size": (["-c", ALLGATHER_SIZE], {}),
    "all-to-all-split-sizes": (["-c", ALLTOALL_SPLITS], {}),
    "nccl-invalid-rank": (["-c", NCCL_INVALID_RANK], {"NCCL_DEBUG": "WARN"}),
    "fsdp-cpu-offload-moved": (["-c", FSDP_OFFLOAD_MOVED], {}),
    # added 2026-12-04 (sixth run)
    "nccl-watchdog-timeout": (["-c", WATCHDOG], {"NCCL_DEBUG": "WARN"}),
    "store-port-in-use": (["-c", PORT_TAKEN], {}),
    "store-waits-for-rank": (["-c", STORE_WAIT], {}),
    "store-host-unresolvable": (["-c", STORE_HOST_UNRESOLVED], {}),
    "ddp-unused-parameter": (["-c", DDP_UNUSED], {}),
    "ddp-checkpoint-ready-twice": (["-c", DDP_READY_TWICE], {}),
    "torch-load-cuda1-one-gpu": (["-c", LOAD_CUDA1], {}),
    "cuda-in-forked-child": (["-c", CUDA_FORK], {}),
    "cuda-visible-devices-hides-gpu": (["-c", HIDDEN_GPU], {"CUDA_VISIBLE_DEVICES": "1"}),
    "set-device-past-count": (["-c", SET_DEVICE_PAST], {}),
    # added 2026-12-04 (seventh run)
    "upsample-int-max": (["-c", UPSAMPLE_INT_MAX], {}),
    "reflection-pad-int-max": (["-c", REFLECT_PAD_INT_MAX], {}),
    "depthwise-conv-large-batch": (["-c", DEPTHWISE_BIG], {}),
    # added 2026-12-04 (eighth run)
    "nccl-comm-id-foreign-address": (["-c", NCCL_ONE_RANK], {"NCCL_DEBUG": "WARN", "NCCL_COMM_ID": "192.0.2.1:29999"}),
    "nccl-comm-id-port-taken": (["-c", COMM_ID_PORT_TAKEN], {"NCCL_DEBUG": "WARN"}),
    "nccl-result-code-table": (["-c", NCCL_RESULT_TABLE], {}),
    # ninth run: integers NCCL_PARAM reads with strtoll (param.cc), FSDP over two dtypes
    "nccl-buffsize-with-unit": (["-c", NCCL_ONE_RANK], {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV",
                                                        "NCCL_BUFFSIZE": "8M"}),
    "nccl-ib-disable-word": (["-c", NCCL_ONE_RANK], {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV,NET",
                                                     "NCCL_IB_DISABLE": "true"}),
    "fsdp-mixed-dtype": (["-c", FSDP_MIXED_DTYPE], {}),
}
TIMEOUT_S = 120


def run_fault(name: str, args: list[str], env: dict[str, str], out: Path) -> Path:
    """Run one fault; its combined stdout and stderr go to OUT/<name>.log (a timeout is noted at the end)."""
    log = out / f"{name}.log"
    full = {**os.environ, **env}
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S, env=full)
        text = p.stdout + p.stderr + f"\n# exit status {p.returncode}\n"
    except subprocess.TimeoutExpired as exc:  # keep what it printed before the timeout (bytes or str)
        parts = [x.decode("utf-8", "replace") if isinstance(x, bytes) else (x or "") for x in (exc.stdout, exc.stderr)]
        text = "".join(parts) + f"\n# timed out after {TIMEOUT_S} s\n"
    log.write_text(text)
    return log


def check(log: Path) -> list[str]:
    """The signature findings `gpudoctor check` reports for ``log`` (its JSON report is kept beside it)."""
    p = subprocess.run([sys.executable, "-m", "gpudoctor", "check", str(log), "--json", "-j", "1"],
                       capture_output=True, text=True, timeout=TIMEOUT_S)
    log.with_suffix(".json").write_text(p.stdout)
    try:
        report = json.loads(p.stdout)
    except ValueError:
        return [f"no report (exit {p.returncode}): {p.stderr.strip()[:200]}"]
    return [f"{f['rule_id']} {f['severity']}: {f['title']}" for f in report.get("findings", [])
            if f["rule_id"].startswith(("SIG", "LOG"))]


def _plugin_missing_dependency(out: Path) -> Path | None:
    """A folder holding libnccl-net-gdbroken.so, linked against libgdmissing.so, which is then removed: the dynamic
    loader finds the plugin and fails on its dependency. None when no C compiler is on this host."""
    d = out / "plugin"
    d.mkdir(exist_ok=True)
    (d / "dep.c").write_text("int gd_missing_symbol(void) { return 1; }\n")
    (d / "plugin.c").write_text("int gd_missing_symbol(void);\nint gd_plugin(void) { return gd_missing_symbol(); }\n")
    try:
        for cmd in (["cc", "-shared", "-fPIC", "-o", str(d / "libgdmissing.so"), str(d / "dep.c")],
                    ["cc", "-shared", "-fPIC", "-o", str(d / "libnccl-net-gdbroken.so"), str(d / "plugin.c"),
                     f"-L{d}", "-lgdmissing"]):
            subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    (d / "libgdmissing.so").unlink()
    return d


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "fault-logs")
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    faults = {name: ([py, *args], env) for name, (args, env) in FAULTS.items()}
    script = out / "sigterm_worker.py"
    script.write_text(SIGTERM_WORKER)
    ipc = out / "expandable_ipc.py"  # spawn re-imports the main module: it must be a file
    ipc.write_text(EXPANDABLE_IPC)
    faults["expandable-segments-ipc"] = ([py, str(ipc)], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    faults["torchrun-worker-sigterm"] = ([py, "-m", "torch.distributed.run", "--nproc_per_node", "1",
                                          "--master_port", "29513", str(script)], {})
    # added 2026-12-03 (second run): torchrun starting 2 ranks on a 1-GPU host; the same OOM as a compiled script
    # without its source (a traceback with no source lines, as from a .pyc, a zipapp or a trimmed paste)
    two = out / "two_ranks.py"
    two.write_text(TWO_RANKS_ONE_GPU)
    faults["torchrun-two-ranks-one-gpu"] = ([py, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                                             "--master_port", "29516", str(two)], {"NCCL_DEBUG": "WARN"})
    import py_compile

    src = out / "oom_nosource.py"
    src.write_text("import torch\nx = torch.empty(int(4e12), dtype=torch.uint8, device='cuda')\n")
    pyc = out / "oom_nosource.pyc"
    py_compile.compile(str(src), cfile=str(pyc), doraise=True)
    src.unlink()
    faults["torchrun-oom-no-source"] = ([py, "-m", "torch.distributed.run", "--nproc_per_node", "1",
                                         "--master_port", "29517", str(pyc)], {})
    # added 2026-12-03 (fourth run): NCCL_SOCKET_IFNAME naming no interface with two ranks (both on the one GPU:
    # NCCL's bootstrap runs before its device checks), and a prefix value (what 'NET/Socket : Using' lists)
    ifn = out / "ifname_two_ranks.py"
    ifn.write_text(IFNAME_TWO_RANKS)
    faults["nccl-socket-ifname-none-two-ranks"] = (
        [py, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29525", str(ifn)],
        {"NCCL_DEBUG": "INFO", "NCCL_SOCKET_IFNAME": "nosuchif0", "TORCH_NCCL_TRACE_BUFFER_SIZE": "0"})
    names = sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else []
    real = [n for n in names if n != "lo"]
    if real:
        faults["nccl-socket-ifname-prefix"] = ([py, "-c", NCCL_ONE_RANK],
                                               {"NCCL_DEBUG": "INFO", "NCCL_SOCKET_IFNAME": real[0][:1]})
    collate = out / "collate_sizes.py"  # DataLoader workers re-import the main module: a file
    collate.write_text(COLLATE_SIZES)
    faults["dataloader-collate-sizes"] = ([py, str(collate)], {})
    # added 2026-12-04 (sixth run): programs that must be files (Triton reads its kernel's source; DataLoader
    # workers re-import the main module); torch.compile with no C compiler on PATH (fresh caches, so Triton must
    # build its launcher)
    for name, prog, env in (("triton-illegal-address", TRITON_OOB, {}), ("dataloader-fd-limit", FD_LIMIT, {}),
                            ("triton-shared-memory", TRITON_SMEM, {})):  # seventh run
        f = out / f"{name.replace('-', '_')}.py"
        f.write_text(prog)
        faults[name] = ([py, str(f)], env)
    import tempfile

    cache = tempfile.mkdtemp(prefix="nocc-")
    faults["compile-no-c-compiler"] = ([py, "-c", COMPILE_NO_CC], {
        "PATH": os.path.dirname(py), "CC": "", "TRITON_CACHE_DIR": f"{cache}/triton",
        "TORCHINDUCTOR_CACHE_DIR": f"{cache}/inductor"})
    plugin = _plugin_missing_dependency(out)  # ninth run: a net plugin NCCL finds but cannot load
    if plugin is not None:
        faults["nccl-plugin-missing-dependency"] = ([py, "-c", NCCL_ONE_RANK], {
            "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET", "NCCL_NET_PLUGIN": "gdbroken",
            "LD_LIBRARY_PATH": f"{plugin}:{os.environ.get('LD_LIBRARY_PATH', '')}"})
    only = set(sys.argv[2:])  # optional: run only these faults
    for name, (args, env) in faults.items():
        if only and name not in only:
            continue
        log = run_fault(name, args, env, out)
        found = check(log)
        print(f"{name}: {'; '.join(found) if found else 'no signature'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
