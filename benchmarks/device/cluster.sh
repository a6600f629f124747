#!/usr/bin/env bash
# `gpudoctor cluster` on a real GPU host: two torchrun agents on this one host act as two "nodes".
# Run from the repo root: `OUT=/some/dir bash benchmarks/device/cluster.sh` (python3 with torch; pydantic
# carried as on the other device scripts). Writes at most 7 files to $OUT; takes ~1-3 minutes.
#  1. cluster-cpu.{txt,json}: --cpu (gloo), full per-node scan (NVML + torch probe on the GPU host).
#  2. cluster-gpu.{txt,json}: without --cpu. With >= 2 GPUs each agent gets its own GPU
#     (CUDA_VISIBLE_DEVICES) and the all-reduce/pairs run over NCCL (cpu:gloo,cuda:nccl); with one GPU
#     both agents share it, and the report must say the GPU runs were skipped and why (NCCL refuses two
#     ranks on one GPU).
#  3. cluster-timing.txt: wall time of each run, and phase times from the JSON.
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-cluster
export PYTHONWARNINGS=ignore
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
{ date -u; uname -n; nvidia-smi -L; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'; } > "$OUT/cluster-timing.txt" 2>&1

run2() {  # $1 name, $2.. gpudoctor cluster args; two agents on 127.0.0.1, c10d rendezvous
  local name=$1; shift
  local port=$((29400 + RANDOM % 500))
  local t0=$(date +%s.%N)
  for k in 0 1; do
    if [ "$NGPU" -ge 2 ] && [ "$name" = gpu ]; then export CUDA_VISIBLE_DEVICES=$k; fi
    timeout 300 python3 -m torch.distributed.run --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d \
      --rdzv-endpoint 127.0.0.1:$port -m gpudoctor cluster --timeout 120 --save "$OUT/cluster-$name.json" "$@" \
      > "$OUT/agent$k-$name.out" 2> "$OUT/agent$k-$name.err" &
    unset CUDA_VISIBLE_DEVICES
  done
  wait
  local t1=$(date +%s.%N)
  cat "$OUT/agent0-$name.out" "$OUT/agent1-$name.out" > "$OUT/cluster-$name.txt"
  echo "--- stderr (tail) ---" >> "$OUT/cluster-$name.txt"
  tail -n 15 "$OUT/agent0-$name.err" "$OUT/agent1-$name.err" >> "$OUT/cluster-$name.txt"
  rm -f "$OUT"/agent?-"$name".out "$OUT"/agent?-"$name".err
  echo "$name: $(python3 -c "print(round($t1 - $t0, 1))") s wall for 2 agents" >> "$OUT/cluster-timing.txt"
}
run2 cpu --cpu -v
run2 gpu -v
python3 - "$OUT" >> "$OUT/cluster-timing.txt" 2>&1 <<'PY'
import json, sys, pathlib
for name in ("cpu", "gpu"):
    p = pathlib.Path(sys.argv[1]) / f"cluster-{name}.json"
    if not p.exists():
        print(name, "no JSON report"); continue
    d = json.loads(p.read_text())
    ar = d.get("allreduce") or {}
    print(name, "backend", d["launch"]["backend"], "note", d["launch"].get("backend_note"),
          "phases", d["phase_seconds"], "total", d["duration_s"],
          "allreduce busbw GB/s", ar.get("busbw_gbs"), "size", ar.get("size_bytes"), "error", ar.get("error"),
          "pairs", [(x["a"], x["b"], x["busbw_gbs"], x["error"]) for x in (d.get("pairwise") or {}).get("pairs", [])],
          "findings", [(f["rule_id"], f["subject"]) for f in d["findings"]])
PY
ls -la "$OUT" >> "$OUT/cluster-timing.txt"
