#!/usr/bin/env bash
# Confirmation runs on a GPU host (issue 9), run from the repo root through `device`.
# Writes to $OUT:
#   scan.json       `gpudoctor scan --json` with the confirmation runs (must finish within 60 s)
#   scan.txt        the same report rendered by `gpudoctor check scan.json -v` (offline, no re-run)
#   smoke.json      `gpudoctor smoke --json` (DDP BERT-base step, built-in model)
#   bench.json      `gpudoctor bench allreduce --json`
#   compare.txt     benchmarks/confirm_compare.py: gpudoctor vs plain loops (separate processes, then
#                   paired windows in one process at 3 batch x seq settings)
#   compare.json    the same figures as JSON
#   gpu-samples.csv nvidia-smi every 500 ms during the comparison (SM clock, power, clock event reasons)
#   cpu-steal.txt   vmstat 1 during the comparison (st = time stolen by the hypervisor)
#   timings.txt     wall time and exit code of every command
# SMOKE_HF=1 also runs `gpudoctor smoke --model hf` (imports transformers: ~16 s more).
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-confirm
T="$OUT/timings.txt"
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count(), "GPU(s)")'; } > "$T" 2>&1

timed() {  # timed NAME CMD... : run, append wall seconds and exit code to timings.txt
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$@"; local rc=$?
  local t1=$(date +%s.%N)
  echo "$name: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s, exit code $rc ($(date -u +%H:%M:%S) UTC)" >> "$T"
}

timed "scan (with confirmation runs)" sh -c "timeout 120 python3 -m gpudoctor scan --json > '$OUT/scan.json' 2>> '$T'"
timeout 60 python3 -m gpudoctor check "$OUT/scan.json" -v > "$OUT/scan.txt" 2>&1
timed "smoke" sh -c "timeout 120 python3 -m gpudoctor smoke --json > '$OUT/smoke.json' 2>> '$T'"
timed "bench allreduce" sh -c "timeout 120 python3 -m gpudoctor bench allreduce --json > '$OUT/bench.json' 2>> '$T'"
timeout 420 nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 > "$OUT/gpu-samples.csv" 2>&1 &
SMI=$!
if command -v vmstat >/dev/null; then timeout 420 vmstat -t 1 > "$OUT/cpu-steal.txt" 2>&1 & VM=$!; else VM=; echo "no vmstat" > "$OUT/cpu-steal.txt"; fi
timed "compare" sh -c "OUT='$OUT' timeout 400 python3 benchmarks/confirm_compare.py ${COMPARE_ARGS:-} > '$OUT/compare.txt' 2>&1"
kill $SMI ${VM:-} 2>/dev/null
if [ "${SMOKE_HF:-0}" = 1 ]; then
  timed "smoke --model hf" sh -c "timeout 120 python3 -m gpudoctor smoke --model hf --json > '$OUT/smoke-hf.json' 2>> '$T'"
fi
cat "$T"
