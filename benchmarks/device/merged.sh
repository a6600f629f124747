#!/usr/bin/env bash
# After the issue 13-18 merge: the whole tool end to end on a GPU host, one `device` call from the repo root.
#   scan.txt / scan.json   `gpudoctor scan -v` with the confirmation runs and the self-test (timed), saved report
#   check.txt              `gpudoctor check scan.json` (the saved report re-judged offline)
#   scan.prom / scan.xml / scan.html   `gpudoctor scan --no-confirm --format prometheus|junit|html`
#   selftest.json          `gpudoctor selftest --json`;  smoke.txt  `gpudoctor smoke`
#   lint.txt               `gpudoctor scan --no-confirm --script` on a small DDP script with known pitfalls
#   timings.txt            wall time and exit code of every command
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-merged
D="$OUT/d"; mkdir -p "$D"; T="$D/timings.txt"
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__)'; git log -1 --format=%h 2>/dev/null; } > "$T" 2>&1
timed() { local name=$1; shift; local t0=$(date +%s.%N); "$@"; local rc=$?; local t1=$(date +%s.%N)
  echo "$name: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s, exit code $rc" >> "$T"; }
timed "scan -v (confirmation + self-test)" sh -c "timeout 150 python3 -m gpudoctor scan -v --save '$D/scan.json' > '$D/scan.txt' 2>&1"
timed "check of the saved report" sh -c "timeout 60 python3 -m gpudoctor check '$D/scan.json' > '$D/check.txt' 2>&1"
for f in prometheus junit html; do
  timed "scan --no-confirm --format $f" sh -c "timeout 60 python3 -m gpudoctor scan --no-confirm --format $f -o '$D/scan.$f' 2>> '$T'"
done
timed "selftest --json" sh -c "timeout 90 python3 -m gpudoctor selftest --json > '$D/selftest.json' 2>> '$T'"
timed "smoke" sh -c "timeout 120 python3 -m gpudoctor smoke > '$D/smoke.txt' 2>&1"
cat > /tmp/train_ddp.py <<'PY'
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(8, 8).cuda())
loader = DataLoader(list(range(64)), sampler=DistributedSampler(list(range(64))), batch_size=8)
for epoch in range(2):
    for x in loader:
        pass
torch.save(model.state_dict(), "ckpt.pt")
PY
timed "scan --no-confirm --script" sh -c "timeout 60 python3 -m gpudoctor scan --no-confirm --script /tmp/train_ddp.py > '$D/lint.txt' 2>&1"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$T" 2>&1
tar -C "$OUT" -czf "$OUT/merged.tar.gz" d && rm -rf "$D"
