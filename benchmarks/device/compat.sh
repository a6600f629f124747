#!/usr/bin/env bash
# cuda-version-check on a GPU host (run from the repo root; used through `device`):
# the installed torch vs the local driver / GPUs, and vs the sample fleet; text and json.
# Writes to $OUT (7 files); takes about a minute (three torch-probe subprocesses, ~5 s each).
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-compat
{ date -u; uname -a; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,compute_cap --format=csv; } > "$OUT/host.txt" 2>&1
run() {  # name, args...
  local name=$1; shift
  timeout 180 python3 -m gpudoctor cuda-version-check "$@" > "$OUT/$name" 2> "$OUT/$name.stderr"
  echo "$name: exit code $?" >> "$OUT/exit-codes.txt"
}
run local.txt
run local.json --format json
run fleet.txt --fleet examples/fleet.toml
run fleet.json --fleet examples/fleet.toml --format json
# keep $OUT small: fold the (normally empty) stderr files into one
for f in "$OUT"/*.stderr; do { echo "== $(basename "$f")"; cat "$f"; } >> "$OUT/stderr.txt"; rm -f "$f"; done
