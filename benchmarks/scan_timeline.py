"""Where a `gpudoctor scan --no-confirm` spends its wall time, next to a bare `python -c "import torch"`.

Usage (repo root, on the machine to measure):  PYTHONPATH=. python3 benchmarks/scan_timeline.py --runs 7

Each round runs `import torch` and the scan alternately (after one warm-up of each). From the scan's own JSON:
the probe phase (snapshot.duration_s), the torch probe (probe_seconds.torch, counted from the probe phase's
start; its child started earlier, in gpudoctor.cli.entry), and inside the child: import_seconds and
cuda_init_seconds. Wall - probe phase = the CLI's own start-up and report time. Medians are printed
(seconds) and written as JSON to --out.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out")
    args = ap.parse_args()
    py = sys.executable
    scan = [py, "-m", "gpudoctor", "scan", "--json", "--no-confirm", "--fail-on", "never"]
    torch = [py, "-c", "import torch"]
    subprocess.run(torch, capture_output=True, timeout=300)
    subprocess.run(scan, capture_output=True, timeout=300)
    rows = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        subprocess.run(torch, capture_output=True, timeout=300)
        t_torch = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = subprocess.run(scan, capture_output=True, text=True, timeout=300)
        t_scan = time.perf_counter() - t0
        snap = json.loads(r.stdout)["snapshot"]
        tf = snap.get("torch") or {}
        rows.append({"import_torch_wall": t_torch, "scan_wall": t_scan, "probe_phase": snap["duration_s"],
                     "torch_probe": snap["probe_seconds"].get("torch"), "child_import": tf.get("import_seconds"),
                     "child_cuda_init": tf.get("cuda_init_seconds"),
                     "slowest_other_probe": max((v for k, v in snap["probe_seconds"].items() if k != "torch"),
                                                default=None)})
    keys = list(rows[0])
    med = {k: round(statistics.median(r[k] for r in rows if r[k] is not None), 3) for k in keys}
    med["scan_minus_import_torch"] = round(med["scan_wall"] - med["import_torch_wall"], 3)
    med["cli_outside_probe_phase"] = round(med["scan_wall"] - med["probe_phase"], 3)
    for k, v in med.items():
        print(f"{k:28} {v:.3f} s")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"medians_s": med, "rounds": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
