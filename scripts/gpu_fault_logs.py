"""Make real failures on a GPU host and diagnose each captured log with `gpudoctor check` (issue 14, item 7).

Each fault runs a small torch program in a fresh process, with the environment it needs, and keeps its stderr and
stdout as the user would paste them: NCCL_SOCKET_IFNAME naming no interface, a CPU tensor given to an NCCL
collective, GPU out of memory (with and without expandable segments), a device-side index assert, a DataLoader
worker killed by SIGKILL, and a torchrun worker ended by SIGTERM. Nothing changes the
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

# NCCL_ALGO / NCCL_PROTO / NCCL_TOPO_FILE faults need two ranks on two GPUs: a one-rank communicator skips the
# tuning and topology code that reads them (tried on one H200 with NCCL 2.28.9: the job succeeds, nothing printed)
FAULTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "nccl-socket-ifname-none": (["-c", NCCL_ONE_RANK], {"NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "nosuchif0"}),
    "nccl-cpu-tensor": (["-c", CPU_TENSOR], {}),
    "cuda-oom": (["-c", OOM], {}),
    "cuda-oom-expandable-segments": (["-c", OOM], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    "dataloader-worker-killed": (["-c", DATALOADER_KILLED], {}),
    "cuda-index-assert": (["-c", INDEX_ASSERT], {}),
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


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "fault-logs")
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    faults = {name: ([py, *args], env) for name, (args, env) in FAULTS.items()}
    script = out / "sigterm_worker.py"
    script.write_text(SIGTERM_WORKER)
    faults["torchrun-worker-sigterm"] = ([py, "-m", "torch.distributed.run", "--nproc_per_node", "1",
                                          "--master_port", "29513", str(script)], {})
    for name, (args, env) in faults.items():
        log = run_fault(name, args, env, out)
        found = check(log)
        print(f"{name}: {'; '.join(found) if found else 'no signature'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
