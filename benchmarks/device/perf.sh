#!/usr/bin/env bash
# Issue 16 measurements on a GPU host, run from the repo root through `device` (one call):
#   selftest-idle.json    `gpudoctor selftest --json` on the idle GPU (self-test figures vs the SKU table)
#   scan-idle.json        `gpudoctor scan --json` with the confirmation runs and the self-test (timed)
#   scan-contention.json  the same while benchmarks/device/matmul_load.py computes on GPU 0
#   selftest-contention.json
#   burn.txt, burn-series.json  `gpudoctor burn --minutes ${BURN_MIN:-2}`
#   loop/scan-N.json      up to ${LOOP_N:-10} scans of the idle GPU (stops at ${LOOP_BUDGET_S:-250} s)
#   timings.txt           wall time and exit code of every command, nvidia-smi before/after
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-perf
D="$OUT/d"; mkdir -p "$D/loop"; T="$D/timings.txt"
{ date -u; nvidia-smi -L; python3 -c 'import torch, pynvml; print("torch", torch.__version__, torch.cuda.device_count(), "GPU(s); pynvml ok")'; } > "$T" 2>&1
timed() {  # timed NAME CMD... : run, append wall seconds and exit code
  local name=$1; shift; local t0=$(date +%s.%N); "$@"; local rc=$?; local t1=$(date +%s.%N)
  echo "$name: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s, exit code $rc ($(date -u +%H:%M:%S) UTC)" >> "$T"
}
smi() { nvidia-smi --query-gpu=index,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm --format=csv,noheader >> "$T" 2>&1; nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >> "$T" 2>&1; }
smi
timed "gpuload worker raw (selftest)" sh -c "timeout 90 python3 -m gpudoctor.confirm.gpuload selftest > '$D/gpuload-selftest.jsonl' 2>> '$T'"
timed "selftest idle" sh -c "timeout 90 python3 -m gpudoctor selftest --json > '$D/selftest-idle.json' 2>> '$T'"
timed "scan idle (confirmation + self-test)" sh -c "timeout 120 python3 -m gpudoctor scan --json > '$D/scan-idle.json' 2>> '$T'"
timed "scan idle --no-confirm" sh -c "timeout 120 python3 -m gpudoctor scan --no-confirm --json > /dev/null 2>> '$T'"
timeout 100 python3 benchmarks/device/matmul_load.py --seconds 80 >> "$T" 2>&1 &
LOAD=$!
sleep 8
timed "scan with a second process computing" sh -c "timeout 120 python3 -m gpudoctor scan --json > '$D/scan-contention.json' 2>> '$T'"
timed "selftest with a second process computing" sh -c "timeout 90 python3 -m gpudoctor selftest --json > '$D/selftest-contention.json' 2>> '$T'"
kill $LOAD 2>/dev/null; wait $LOAD 2>/dev/null
sleep 2; smi
timed "burn --minutes ${BURN_MIN:-2}" sh -c "timeout 300 python3 -m gpudoctor burn --minutes ${BURN_MIN:-2} --series '$D/burn-series.json' > '$D/burn.txt' 2>> '$T'"
echo "after burn:" >> "$T"; smi
start=$(date +%s)
for i in $(seq 1 "${LOOP_N:-10}"); do
  [ $(( $(date +%s) - start )) -gt "${LOOP_BUDGET_S:-250}" ] && { echo "loop stopped after $((i-1)) scans (budget)" >> "$T"; break; }
  timed "loop scan $i" sh -c "timeout 120 python3 -m gpudoctor scan --json > '$D/loop/scan-$i.json' 2>> '$T'"
done
date -u >> "$T"
( cd "$OUT" && tar czf perf.tgz d )
cat "$T"
