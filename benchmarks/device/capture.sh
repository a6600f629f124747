#!/usr/bin/env bash
# Capture real probe outputs on a GPU host (run from the repo root; used through `device`).
# Writes to $OUT: the NVML worker's stream idle and under a bf16 matmul load, the torch
# probe's output, and `gpudoctor scan` (terminal -v and --json).
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-capture
{ date -u; uname -a; nvidia-smi -L; } > "$OUT/host.txt" 2>&1
python3 gpudoctor/probes/nvml_worker.py > "$OUT/nvml-worker-idle.jsonl" 2>&1
python3 gpudoctor/probes/torch_script.py > "$OUT/torch-probe.txt" 2>&1
python3 - <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 20:
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
PY
LOAD=$!
sleep 10
python3 gpudoctor/probes/nvml_worker.py > "$OUT/nvml-worker-busy.jsonl" 2>&1
wait $LOAD
python3 -m gpudoctor scan -v --no-confirm > "$OUT/scan-v.txt" 2>&1; echo "exit code: $?" >> "$OUT/scan-v.txt"
python3 -m gpudoctor scan --json --no-confirm --save "$OUT/scan-saved.json" > "$OUT/scan.json"; echo "json exit code: $?" >> "$OUT/host.txt"
