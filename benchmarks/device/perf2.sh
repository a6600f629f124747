#!/usr/bin/env bash
# Issue 16, second device call: fleet baseline, the no-false-alarm loop with the final table, burn stopped early.
#   baseline.json               `gpudoctor baseline save` on the idle GPU
#   scan-baseline-idle.json     `gpudoctor scan --baseline baseline.json` (idle)
#   scan-baseline-contention.json  the same while benchmarks/device/matmul_load.py computes on GPU 0
#   loop/selftest-N.json        ${LOOP_N:-10} x `gpudoctor selftest --json` on the idle GPU
#   burn-stopped.txt, burn-stopped.json  `gpudoctor burn --minutes 2` stopped by SIGTERM after 40 s
#   timings.txt                 wall time, exit codes, nvidia-smi memory/processes after each step
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-perf2
D="$OUT/d"; mkdir -p "$D/loop"; T="$D/timings.txt"
{ date -u; nvidia-smi -L; } > "$T" 2>&1
timed() { local name=$1; shift; local t0=$(date +%s.%N); "$@"; local rc=$?; local t1=$(date +%s.%N)
  echo "$name: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s, exit code $rc ($(date -u +%H:%M:%S) UTC)" >> "$T"; }
smi() { echo "  nvidia-smi: $(nvidia-smi --query-gpu=memory.used,utilization.gpu,temperature.gpu,power.draw --format=csv,noheader); apps: [$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ';')]" >> "$T"; }
timed "baseline save" sh -c "timeout 120 python3 -m gpudoctor baseline save '$D/baseline.json' >> '$T' 2>&1"
timed "scan --baseline (idle)" sh -c "timeout 120 python3 -m gpudoctor scan --baseline '$D/baseline.json' --json > '$D/scan-baseline-idle.json' 2>> '$T'"
timeout 100 python3 benchmarks/device/matmul_load.py --seconds 45 >> "$T" 2>&1 &
LOAD=$!; sleep 8
timed "scan --baseline with a second process computing" sh -c "timeout 120 python3 -m gpudoctor scan --baseline '$D/baseline.json' --json > '$D/scan-baseline-contention.json' 2>> '$T'"
kill $LOAD 2>/dev/null; wait $LOAD 2>/dev/null; sleep 2; smi
for i in $(seq 1 "${LOOP_N:-10}"); do
  timed "loop selftest $i" sh -c "timeout 90 python3 -m gpudoctor selftest --json > '$D/loop/selftest-$i.json' 2>> '$T'"
done
smi
timed "burn --minutes 2, SIGTERM after 40 s" sh -c "timeout -s TERM 40 python3 -m gpudoctor burn --minutes 2 --series '$D/burn-stopped.json' > '$D/burn-stopped.txt' 2>> '$T'"
sleep 1; echo "after the stopped burn-in:" >> "$T"; smi
ps -eo pid,args | grep -c "[g]pudoctor.confirm.gpuload" | sed 's/^/  gpuload processes left: /' >> "$T"
date -u >> "$T"
( cd "$OUT" && tar czf perf2.tgz d )
cat "$T"
