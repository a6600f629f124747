"""A seeded mixed log for the big-log fast paths (issue 14): NCCL INFO/WARN/TRACE lines with and without the
``host:pid:tid [cudaDev]`` prefix (the format of NCCL's src/debug.cc), torchrun ``[rankN]:`` tees, dmesg NVRM/Xid
lines with continuations, catalogue error lines, CRLF and ANSI escapes. tests/test_fast_paths.py compares what the
parsers read from it with tests/fixtures/fast-paths/golden.json, written by the line-by-line parsers before the fast
paths replaced them.
"""
from __future__ import annotations

import random

NCCL_TEMPLATES = (
    "{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d}/0 : {r}[{g}] -> {r2}[{g2}] via P2P/CUMEM/read",
    "{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d}/1 : {r}[{g}] -> {r2}[{g2}] [send] via NET/IB/{g}/GDRDMA",
    "{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d}/0 : {r}[{g}] -> {r2}[{g2}] [receive] via NET/IB/{g}",
    "{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d} : {r}[{g}] -> {r2}[{g2}] via SHM/direct/direct",
    "{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d}/0 : {r}[{g}] -> {r2}[{g2}] via NET/Socket/0",
    "NCCL INFO Channel {c:02d}/0 : {r}[{g}] -> {r2}[{g2}] via P2P/IPC",
    "{h}:{p}:{t} [{g}] NCCL TRACE Channel {c:02d}/0 : {r}[{g}] -> {r2}[{g2}] via P2P/direct pointer",
    "{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d}/02 :    0   1   2   3",
    "{h}:{p}:{t} [{g}] NCCL INFO comm 0x55d{p} rank {r} nranks {n} cudaDev {g} nvmlDev {g} busId {g}c000 "
    "commId 0x{p} - Init COMPLETE",
    "{h}:{p}:{t} [{g}] NCCL INFO comm 0x55d{p} rank {r} nRanks {n} nNodes 2 localRanks 8 localRank {g} MNNVL 0",
    "{h}:{p}:{t} [{g}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "{h}:{p}:{t} [{g}] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
    "{h}:{p}:{t} [{g}] NCCL INFO Trees [0] {r2}/-1/-1->{r}->{r3} [1] {r2}/-1/-1->{r}->{r3}",
    "{h}:{p}:{t} [{g}] NCCL INFO cudaDriverVersion 1{g}0{c:02d}0",
    "{h}:{p}:{t} [{g}] NCCL INFO NCCL version 2.{c}.{g}+cuda12.{g}",
    "{h}:{p}:{t} [{g}] NCCL INFO NET/IB : No device found.",
    "{h}:{p}:{t} [{g}] NCCL INFO NET/IB : Using [0]mlx5_{g}:1/IB [1]mlx5_{c}:1/RoCE ; OOB eth0:10.0.{g}.{c}<0>",
    "{h}:{p}:{t} [{g}] NCCL INFO Using network {net}",
    "{h}:{p}:{t} [{g}] NCCL INFO GPU Direct RDMA Disabled for HCA {g} 'mlx5_{g}'",
    "{h}:{p}:{t} [{g}] NCCL INFO NCCL_{var} set by environment to {val}",
    "NCCL_{var} set by environment to {val}.",
    "{h}:{p}:{t} [{g}] NCCL INFO {c} nvls channels, {g} nvls rings",
    "{h}:{p}:{t} [{g}] NCCL WARN NET/IB : Got completion from peer {h}<{p}> with status=12 opcode=0 len=0 "
    "vendor err 129",
    "{h}:{p}:{t} [{g}] NCCL WARN Cuda failure 'out of memory' via cudaMalloc",
    "{h}:{p}:{t} [{g}] NCCL  INFO Channel {c:02d}/0 : {r}[{g}] -> {r2}[{g2}] via P2P/odd-spacing",
    "{h}:{p}:{t} [{g}] NCCL\tINFO Using network Odd{g}",
    "[rank{r}]:{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d}/0 : {r}[{g}] -> {r2}[{g2}] via NET/IB/{g}/GDRDMA",
    "[rank{r}]:[I ProcessGroupNCCL.cpp:1000] [PG 0 Rank {r}] ProcessGroupNCCL initialization options: "
    "TIMEOUT(ms): 600000",
    "[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum={c}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600{c:03d} "
    "milliseconds before timing out.",
    "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {g} has a total "
    "capacity of 139.72 GiB of which 1.{c} GiB is free.",
    "[rank{r}]: RuntimeError: something unusual went wrong on step {c}",
    "step {c} loss 2.{p} lr 3e-4 grad_norm 1.0{g} throughput 1234 tokens/s",
    "[{ts:>12.6f}] NVRM: Xid (PCI:0000:{bus:02x}:00): {xid}, pid={p}, name=python, Ch 0000000{g}",
    "[{ts:>12.6f}] NVRM: GPU at PCI:0000:{bus:02x}:00: GPU-{p}-{t}",
    "[{ts:>12.6f}] NVRM: The NVIDIA GPU 0000:{bus:02x}:00.0 (PCI ID: 10de:2335)\n"
    "               NVRM: installed in this system has\n               NVRM: fallen off the bus and is not responding",
    "\x1b[1m{h}:{p}:{t} [{g}] NCCL INFO Using network IB\x1b[0m",
    "{h}:{p}:{t} [{g}] NCCL INFO Bootstrap : Using eth0:10.1.{g}.{c}<0>\r",
)
VARS = ("SOCKET_IFNAME", "IB_HCA", "DEBUG", "P2P_LEVEL", "NET_GDR_LEVEL", "IB_GID_INDEX")


def mixed_log(lines: int = 20000, seed: int = 7, examples: list[str] | None = None) -> str:
    """``lines`` seeded random lines of the templates above, a catalogue example every 150 lines."""
    rnd = random.Random(seed)
    out = []
    for k in range(lines):
        if examples and k % 150 == 149:
            out.append(rnd.choice(examples))
            continue
        out.append(rnd.choice(NCCL_TEMPLATES).format(
            h=f"node{rnd.randrange(4):02d}", p=rnd.randrange(1000, 99999), t=rnd.randrange(1000, 99999),
            g=rnd.randrange(8), c=rnd.randrange(32), r=rnd.randrange(32), r2=rnd.randrange(32), g2=rnd.randrange(8),
            r3=rnd.randrange(32), n=rnd.choice((16, 32)), net=rnd.choice(("IB", "Socket")),
            var=rnd.choice(VARS), val=rnd.choice(("eth0", "mlx5_0,mlx5_1", "INFO", "NVL", "=ib0")),
            ts=rnd.uniform(0, 99999), bus=rnd.choice((0x18, 0x3b, 0xb3)), xid=rnd.choice((13, 31, 43, 48, 79, 94))))
    return "\n".join(out) + "\n"
