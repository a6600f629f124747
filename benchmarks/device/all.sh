#!/usr/bin/env bash
# Every GPU-host measurement of this repo in ONE device call (the device lease is short).
# Usage, from the repo root on the GPU host:  OUT=/some/dir bash benchmarks/device/all.sh [parts...]
# parts (default: all): capture topology compat confirm cluster bench report
# Each part writes into /tmp/gpudoctor-all/<part>/; at the end everything is packed into
# $OUT/all.tgz and the key files are copied next to it (at most 8 files in $OUT).
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-all-out
W=/tmp/gpudoctor-all; rm -rf "$W"; mkdir -p "$W"
LOG="$OUT/all.log"
parts=${*:-capture topology compat confirm cluster bench report}
{ date -u; uname -a; nvidia-smi -L; } > "$LOG" 2>&1
for p in $parts; do
  mkdir -p "$W/$p"; t0=$(date +%s)
  case $p in
    capture|topology|compat|confirm|cluster)
      [ -f "benchmarks/device/$p.sh" ] || { echo "$p: no script" >> "$LOG"; continue; }
      OUT="$W/$p" timeout 420 bash "benchmarks/device/$p.sh" > "$W/$p/stdout.txt" 2>&1 ;;
    bench)
      timeout 300 python3 benchmarks/bench_scan.py --runs 5 --out "$W/bench/bench_scan.json" > "$W/bench/bench_scan.txt" 2>&1 ;;
    report)
      # the README example: a plain scan as a user runs it (with the confirmation runs), and -v
      timeout 240 python3 -m gpudoctor scan > "$W/report/scan.txt" 2>&1; echo "exit code: $?" >> "$W/report/scan.txt"
      timeout 240 python3 -m gpudoctor scan --json --save "$W/report/scan-saved.json" > "$W/report/scan.json" 2>/dev/null ;;
  esac
  echo "$p: rc=$? $(( $(date +%s) - t0 )) s" >> "$LOG"
done
tar czf "$OUT/all.tgz" -C "$W" .
for f in report/scan.txt bench/bench_scan.txt confirm/timings.txt confirm/compare.txt; do
  [ -f "$W/$f" ] && cp "$W/$f" "$OUT/$(echo "$f" | tr / -)"
done
cat "$LOG"
