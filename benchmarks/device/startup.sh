#!/usr/bin/env bash
# Scan start-up cost on a GPU host (issue 2's goal: scan <= import torch + 0.5 s) and GPU checks of the
# smoke step's batch paths, in one device call. From the repo root:  OUT=/some/dir bash benchmarks/device/startup.sh
# Writes: bench_scan.txt/.json (round-robin, with and without the cuInit prefetch), torch-probe.txt (the torch
# probe child's own timings, 3 runs each way), smoke-hf.json (--model hf, auto batch), smoke-b32.json (--batch 32).
set -u
OUT=${OUT:-/tmp/gpudoctor-startup}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=.:${PYTHONPATH:-}
date -u > "$OUT/torch-probe.txt"
for i in 1 2 3; do
  for v in "" 1; do
    echo "GPUDOCTOR_NO_CUINIT_PREFETCH=$v" >> "$OUT/torch-probe.txt"
    GPUDOCTOR_NO_CUINIT_PREFETCH=$v timeout 120 python3 gpudoctor/probes/torch_script.py 2>&1 | tail -1 | cut -c1-700 >> "$OUT/torch-probe.txt"
  done
done
timeout 400 python3 benchmarks/bench_scan.py --runs 7 --out "$OUT/bench_scan.json" > "$OUT/bench_scan.txt" 2>&1
echo "bench rc=$?" >> "$OUT/bench_scan.txt"
timeout 150 python3 -m gpudoctor smoke --model hf --json > "$OUT/smoke-hf.json" 2> "$OUT/smoke-stderr.txt"; echo "smoke hf rc=$?" >> "$OUT/bench_scan.txt"
timeout 150 python3 -m gpudoctor smoke --batch 32 --json > "$OUT/smoke-b32.json" 2>> "$OUT/smoke-stderr.txt"; echo "smoke b32 rc=$?" >> "$OUT/bench_scan.txt"
cat "$OUT/bench_scan.txt"
