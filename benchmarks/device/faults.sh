#!/usr/bin/env bash
# Faults set by hand on the GPU host (no GPU setting is changed: only the environment of the scan, its CPU
# affinity, its ulimits, /dev/shm, and other processes holding the GPU). One `device` call from the repo root:
#   bash benchmarks/device/faults.sh      -> $OUT/faults.tar.gz (summary.txt: one block per case; <case>.json/.txt)
# CASES=name1,name2 runs only those cases (default: all).
# For each case: the scan's exit code and its error/warning/info findings (rule id, title, first evidence line).
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-faults
D="$OUT/f"; mkdir -p "$D"; S="$D/summary.txt"
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__)'; } > "$S" 2>&1
summ() {  # case name -> summary block from its JSON report
  python3 - "$1" "$2" "$D/$1.json" >> "$S" 2>&1 <<'PY'
import json, sys
name, rc, path = sys.argv[1:4]
print(f"\n## {name}: exit {rc}")
try:
    d = json.load(open(path))
except Exception as e:  # noqa: BLE001
    print(f"  (no JSON report: {e})"); sys.exit(0)
s = d["summary"]
print(f"  errors {s['errors']} warnings {s['warnings']} infos {s['infos']} passed {s['passed']} "
      f"not_assessed {s['not_assessed']} probe_errors {s['probe_errors']}")
for f in d["findings"]:
    ev = (f.get("evidence") or [""])[0][:160]
    print(f"  {f['severity'][:4]} {f['rule_id']} {f['title'][:90]} | {ev}")
PY
}
want() { [ -z "${CASES:-}" ] || [[ ",$CASES," == *",$1,"* ]]; }
run() {  # run NAME TIMEOUT CMD... (the scan's stdout/stderr -> NAME.txt, report -> NAME.json)
  local name=$1 to=$2; shift 2
  want "$name" || return 0
  local t0=$(date +%s.%N)
  timeout "$to" "$@" --save "$D/$name.json" > "$D/$name.txt" 2>&1; local rc=$?
  echo "$name wall $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s" >> "$D/times.txt"
  summ "$name" "$rc"
}
G="python3 -m gpudoctor scan"
run baseline-noconfirm 90 $G --no-confirm
run cvd-empty 90 env CUDA_VISIBLE_DEVICES= $G --no-confirm
run cvd-index-1 90 env CUDA_VISIBLE_DEVICES=1 $G --no-confirm
run cvd-bad-uuid 90 env CUDA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000000 $G --no-confirm
run nccl-p2p-disable 90 env NCCL_P2P_DISABLE=1 $G --no-confirm
run nccl-shm-disable 90 env NCCL_SHM_DISABLE=1 $G --no-confirm
run nccl-ib-hca-bogus 90 env NCCL_IB_HCA=mlx5_99 $G --no-confirm
run nccl-debug-trace 90 env NCCL_DEBUG=TRACE NCCL_DEBUG_SUBSYS=ALL $G --no-confirm
run cuda-launch-blocking 90 env CUDA_LAUNCH_BLOCKING=1 $G --no-confirm
run nccl-async-off 90 env TORCH_NCCL_ASYNC_ERROR_HANDLING=0 NCCL_BLOCKING_WAIT=1 $G --no-confirm
run alloc-conf-bogus 90 env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:maybe $G --no-confirm
STUBS=$(ls -d /usr/local/cuda*/lib64/stubs /usr/local/cuda*/targets/*/lib/stubs 2>/dev/null | head -1)
echo "stubs dir: $STUBS" >> "$S"
[ -n "$STUBS" ] && run ld-stubs-first 90 env LD_LIBRARY_PATH="$STUBS:${LD_LIBRARY_PATH:-}" $G --no-confirm
run taskset-1cpu 90 taskset -c 0 $G --no-confirm
run memlock-64k 90 sh -c "ulimit -l 64; exec $G --no-confirm \"\$@\"" sh
run python-no-torch 90 $G --no-confirm --python /usr/bin/python3
run local-rank-3 90 env LOCAL_RANK=3 WORLD_SIZE=4 RANK=3 $G --no-confirm
SYSNCCL=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
echo "system NCCL: ${SYSNCCL:-none}" >> "$S"
[ -n "$SYSNCCL" ] && run ld-system-nccl 90 env LD_LIBRARY_PATH="$(dirname "$SYSNCCL"):${LD_LIBRARY_PATH:-}" $G --no-confirm
# tiny /dev/shm (needs CAP_SYS_ADMIN in the container; said in the summary if the mount is refused)
if want devshm-1m && mount -t tmpfs -o size=1m tmpfs /dev/shm 2>>"$S"; then
  run devshm-1m 90 $G --no-confirm; umount /dev/shm
else echo "devshm-1m: mount refused" >> "$S"; fi
# another process holding 120 GiB of the GPU and computing
if want gpu-hog-noconfirm || want gpu-hog-full; then
python3 - <<'PY' &
import time, torch
x = torch.empty(120 * 2**30, dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t0 = time.time()
while time.time() - t0 < 100:
    a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
PY
HOG=$!; sleep 12
run gpu-hog-noconfirm 90 $G --no-confirm
run gpu-hog-full 150 $G
kill $HOG 2>/dev/null; wait $HOG 2>/dev/null; sleep 3
fi
# faults that show only when NCCL runs: full scans (confirmation runs + self-test)
run nccl-ifname-bogus 150 env NCCL_SOCKET_IFNAME=nonexist0 $G
run nccl-net-bogus 150 env NCCL_NET=Bogus $G
run nccl-algo-bogus 150 env NCCL_ALGO=Bogus $G
run nccl-net-ib-full 150 env NCCL_NET=IB $G
run alloc-conf-full 150 env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:maybe $G
run baseline-full 150 $G
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$S" 2>&1
tar -C "$OUT" -czf "$OUT/faults.tar.gz" f && cp "$S" "$OUT/summary.txt" && rm -rf "$D"
