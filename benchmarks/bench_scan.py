"""Whole-process timing: `gpudoctor scan` vs `python -m torch.utils.collect_env` vs `python -c "import torch"`.

Usage (from the repo root, on the machine to measure):
    PYTHONPATH=. python3 benchmarks/bench_scan.py --runs 5 [--out results.json]

Each command runs once untimed (page cache), then --runs rounds in which every command runs once, in
turn (round-robin, so host drift hits all commands alike); the median, min and max wall times (s) are
printed and written as JSON. The scan runs without
confirmation runs (`--no-confirm` when the installed gpudoctor has that flag).
Goal (issue 2): scan <= 0.85 x collect_env, and scan <= import torch + 0.5 s.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time


def timed(cmds, runs):
    """{name: [seconds per run]} for {name: (argv, env)}, round-robin after one warm-up run each."""
    for argv, env in cmds.values():
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=600)
    out = {name: [] for name in cmds}
    for _ in range(runs):
        for name, (argv, env) in cmds.items():
            t0 = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=600)
            out[name].append(time.perf_counter() - t0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    env = dict(os.environ)
    py = sys.executable
    help_text = subprocess.run([py, "-m", "gpudoctor", "scan", "--help"], capture_output=True, text=True,
                               env=env).stdout
    scan = [py, "-m", "gpudoctor", "scan", "--json", "--fail-on", "never"]
    if "--no-confirm" in help_text:
        scan.append("--no-confirm")
    cmds = {
        "gpudoctor scan": (scan, env),
        "collect_env": ([py, "-m", "torch.utils.collect_env"], env),
        "import torch": ([py, "-c", "import torch"], env),
        "gpudoctor --help": ([py, "-m", "gpudoctor", "--help"], env),
    }
    res = {}
    times = timed(cmds, args.runs)
    for name, (argv, _env) in cmds.items():
        ts = times[name]
        res[name] = {"median_s": round(statistics.median(ts), 3), "min_s": round(min(ts), 3),
                     "max_s": round(max(ts), 3), "runs": args.runs, "argv": " ".join(argv[1:])}
        print(f"{name:36} median {res[name]['median_s']:.3f} s  (min {res[name]['min_s']:.3f}, "
              f"max {res[name]['max_s']:.3f}, n={args.runs})")
    s, c, t = (res[k]["median_s"] for k in ("gpudoctor scan", "collect_env", "import torch"))
    res["ratios"] = {"scan_over_collect_env": round(s / c, 3), "scan_minus_import_torch_s": round(s - t, 3),
                     "goal_ratio_max": 0.85, "goal_extra_max_s": 0.5,
                     "met": bool(s / c <= 0.85 and s - t <= 0.5)}
    res["machine"] = {"host": platform.node(), "python": platform.python_version(), "cpus": os.cpu_count(),
                      "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(res["ratios"]))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
