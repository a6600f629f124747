#!/usr/bin/env bash
# Confirmation runs on a GPU host (issue 9), run from the repo root through `device`.
# Writes to $OUT (8 files):
#   scan.json      `gpudoctor scan --json` with the confirmation runs (must finish within 60 s)
#   scan.txt       the same report rendered by `gpudoctor check scan.json -v` (offline, no re-run)
#   smoke.json     `gpudoctor smoke --json` (DDP BERT-base step, built-in model)
#   smoke-hf.json  `gpudoctor smoke --model hf --json` (transformers BertForMaskedLM, for comparison)
#   bench.json     `gpudoctor bench allreduce --json`
#   compare.txt    benchmarks/confirm_compare.py: gpudoctor vs plain loops, side by side
#   compare.json   the same figures as JSON
#   timings.txt    wall time and exit code of every command
set -u
OUT=${OUT:-/tmp/gpudoctor-confirm}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=.:${PYTHONPATH:-}
T="$OUT/timings.txt"
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count(), "GPU(s)")'; } > "$T" 2>&1

timed() {  # timed NAME CMD... : run, append wall seconds and exit code to timings.txt
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$@"; local rc=$?
  local t1=$(date +%s.%N)
  echo "$name: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s, exit code $rc" >> "$T"
}

timed "scan (with confirmation runs)" sh -c "python3 -m gpudoctor scan --json > '$OUT/scan.json' 2>> '$T'"
python3 -m gpudoctor check "$OUT/scan.json" -v > "$OUT/scan.txt" 2>&1
timed "smoke" sh -c "python3 -m gpudoctor smoke --json > '$OUT/smoke.json' 2>> '$T'"
timed "bench allreduce" sh -c "python3 -m gpudoctor bench allreduce --json > '$OUT/bench.json' 2>> '$T'"
timed "compare" sh -c "python3 benchmarks/confirm_compare.py > '$OUT/compare.txt' 2>&1"
timed "smoke --model hf" sh -c "python3 -m gpudoctor smoke --model hf --json > '$OUT/smoke-hf.json' 2>> '$T'"
cat "$T"
