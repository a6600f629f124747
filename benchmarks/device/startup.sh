#!/usr/bin/env bash
# Scan start-up cost on a GPU host (issue 2's goal: scan <= import torch + 0.5 s), in one device call.
# From the repo root:  OUT=/some/dir bash benchmarks/device/startup.sh
# Writes: bench_scan.txt/.json (round-robin: scan, collect_env, import torch,
# --help) and timeline.txt/.json (benchmarks/scan_timeline.py: where the scan's wall time goes).
# SMOKE=1 also runs `smoke --model hf` (auto batch) and `smoke --batch 32` (smoke-hf.json, smoke-b32.json).
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-startup
date -u > "$OUT/bench_scan.txt"
timeout 400 python3 benchmarks/bench_scan.py --runs 7 --out "$OUT/bench_scan.json" >> "$OUT/bench_scan.txt" 2>&1
echo "bench rc=$?" >> "$OUT/bench_scan.txt"
timeout 200 python3 benchmarks/scan_timeline.py --runs 5 --out "$OUT/timeline.json" > "$OUT/timeline.txt" 2>&1
if [ "${SMOKE:-0}" = 1 ]; then
  timeout 150 python3 -m gpudoctor smoke --model hf --json > "$OUT/smoke-hf.json" 2> "$OUT/smoke-stderr.txt"
  timeout 150 python3 -m gpudoctor smoke --batch 32 --json > "$OUT/smoke-b32.json" 2>> "$OUT/smoke-stderr.txt"
fi
cat "$OUT/bench_scan.txt" "$OUT/timeline.txt"
