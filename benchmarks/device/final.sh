#!/usr/bin/env bash
# The merged tool after the 2026-12-01 evening session, one `device` call from the repo root:
#   merged.sh (scan with confirmation + self-test, check of the saved report, formats, selftest, smoke, --script),
#   bench allreduce, a 30 s burn, `cluster` under torchrun on this host; faults.sh runs in a second call.
# $OUT/extra.txt: wall time, exit code and the tail of each extra command.
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-final
X="$OUT/extra.txt"; date -u > "$X"
extra() { local name=$1 to=$2; shift 2; local t0=$(date +%s.%N)
  timeout "$to" "$@" > /tmp/extra.out 2>&1; local rc=$?
  { echo "== $name: exit $rc, $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"; tail -25 /tmp/extra.out; } >> "$X"; }
bash benchmarks/device/merged.sh
extra "bench allreduce" 120 python3 -m gpudoctor bench allreduce
extra "burn --minutes 0.5" 120 python3 -m gpudoctor burn --minutes 0.5
extra "torchrun cluster (1 agent, GPU)" 150 torchrun --nproc-per-node 1 -m gpudoctor cluster

nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$X" 2>&1
