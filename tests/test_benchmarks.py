"""The benchmark scripts behind the figures in docs/benchmarks.md keep working (CPU dry runs)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import needs_torch

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bootstrap_interval_brackets_the_median_and_narrows_with_agreement():
    cc = _load("confirm_compare")
    med, lo, hi = cc.bootstrap_median_ci([1.0, 1.0, 1.001, 0.999, 1.0, 1.0])
    assert lo <= med <= hi and hi - lo <= 0.002
    med, lo, hi = cc.bootstrap_median_ci([0.8, 1.2, 0.9, 1.1, 1.0, 0.85, 1.15])
    assert lo <= med <= hi and lo < 0.95 and hi > 1.05  # noisy rounds: no 5 % claim possible
    assert cc.bootstrap_median_ci([1.0, 2.0, 3.0]) == cc.bootstrap_median_ci([1.0, 2.0, 3.0])  # seeded


def test_parse_settings():
    assert _load("confirm_compare").parse_settings("128x128, 32X512") == [(128, 128), (32, 512)]


@needs_torch
def test_confirm_compare_cpu_dry_run(tmp_path):
    """The GPU comparison script runs end to end on CPU (gloo, world size 2) and writes every section."""
    env = dict(os.environ, OUT=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "confirm_compare.py"), "--cpu", "--repeat", "1",
                           "--paired", "2", "--steps", "3"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads((tmp_path / "compare.json").read_text())
    assert doc["world_size"] == 2 and len(doc["allreduce"]) == 4  # 2 sizes x 2 dtypes
    assert all(r["plain_s"] > 0 and r["gpudoctor_s"] > 0 for r in doc["allreduce"])
    (p,) = doc["paired"]
    assert (p["batch"], p["seq"]) == (4, 32) and len(p["ratios"]) == 2
    assert p["ratio_ci95"][0] <= p["ratio_median"] <= p["ratio_ci95"][1] and "5 %" in p["verdict"]
    assert len(doc["allreduce_paired"]) == 4 and doc["kernel_paired"] is None  # the kernel check is GPU-only
    assert "paired windows" in proc.stdout


def test_alternate_swaps_who_goes_first():
    calls = []
    gd, pl = _load("confirm_compare").alternate(3, lambda: calls.append("g") or 1.0, lambda: calls.append("p") or 2.0)
    assert calls == ["g", "p", "p", "g", "g", "p"] and gd == [1.0] * 3 and pl == [2.0] * 3
