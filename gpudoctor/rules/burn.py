"""Judging a burn-in's time series (``gpudoctor burn``): drift, throttling, heat, contention, new errors.

Pure functions over the worker's JSON lines (:mod:`gpudoctor.confirm.gpuload`), so they are tested on CPU
with fabricated series. Thresholds come from ``rules/perf_sku.toml`` ``[verdict.burn]``.
Units: TFLOP/s, GB/s, °C, W, MHz, seconds.
"""
from __future__ import annotations

import statistics
from typing import Any

from gpudoctor.compat import data
from gpudoctor.facts.findings import Finding
from gpudoctor.facts.perf import FAULT_REASONS, HOT_MARGIN_C, summarize_samples

AREA = "Confirmation runs"
DOC = "docs/performance.md"


def thresholds() -> dict[str, Any]:
    return dict(data.load("perf_sku")["verdict"]["burn"])


def _finding(rid: str, severity: str, title: str, subject: str | None, evidence: list[str], remedy: str,
             extra: dict[str, Any] | None = None) -> Finding:
    return Finding(rule_id=rid, severity=severity, area=AREA, title=title, subject=subject,  # type: ignore[arg-type]
                   evidence=evidence, remedy=remedy, sources=[DOC, "rules/perf_sku.toml [verdict.burn]"],
                   data=extra or {})


def series(lines: list[dict[str, Any]], gpu: int, kind: str) -> list[tuple[float, float]]:
    """(seconds since start, value) of one GPU's timed rounds of ``kind`` ('gemm' or 'copy')."""
    timed_from = next((ln["s"] for ln in lines if ln.get("t") == "mark" and ln.get("what") == "timed"), 0.0)
    return [(float(ln["s"]), float(ln["value"])) for ln in lines
            if ln.get("t") == "round" and ln.get("i") == gpu and ln.get("kind") == kind and ln.get("s", 0) > timed_from]


def drift(points: list[tuple[float, float]], edge: float) -> tuple[float, float, float] | None:
    """(median of the first ``edge`` fraction of the run, median of the last, change as a fraction of the first);
    None with fewer than 6 points."""
    if len(points) < 6:
        return None
    k = max(2, int(len(points) * edge))
    first = statistics.median(v for _, v in points[:k])
    last = statistics.median(v for _, v in points[-k:])
    return first, last, (last - first) / first if first else 0.0


def counter_deltas(lines: list[dict[str, Any]], gpu: int) -> dict[str, int]:
    """Increase of each error counter between the 'before' and 'after' reads (ECC, row remap, NVLink)."""
    reads = {ln.get("when"): ln for ln in lines if ln.get("t") == "counters" and ln.get("i") == gpu}
    b, a = reads.get("before"), reads.get("after")
    if not b or not a:
        return {}
    out = {}
    for group in ("ecc", "remap", "nvlink"):
        for k, va in (a.get(group) or {}).items():
            vb = (b.get(group) or {}).get(k)
            if isinstance(va, bool) or isinstance(vb, bool):
                if va and not vb:
                    out[f"{group}.{k}"] = 1
            elif isinstance(va, int) and isinstance(vb, int) and va > vb:
                out[f"{group}.{k}"] = va - vb
    return out


def analyze(lines: list[dict[str, Any]], new_xids: list[str] | None = None) -> list[Finding]:
    """Findings of a burn-in: throughput drift or dips per GPU, fault throttling, heat, other processes, error
    counters that rose, new XIDs (``new_xids``: kernel log lines that appeared during the run)."""
    th = thresholds()
    out: list[Finding] = []
    gpus = {ln["i"]: ln for ln in lines if ln.get("t") == "gpu" and isinstance(ln.get("i"), int)}
    for i, g in sorted(gpus.items()):
        subj = f"GPU {i}"
        label = f"GPU {i} ({g.get('name')})"
        for kind, unit in (("gemm", "TFLOP/s"), ("copy", "GB/s")):
            pts = series(lines, i, kind)
            d = drift(pts, th["edge_fraction"])
            if d and d[2] < -th["drift_fraction"]:
                out.append(_finding("BRN001", "warning", f"{kind.upper()} throughput fell during the burn-in", subj,
                                    [f"{label}: {kind} {d[0]:.1f} -> {d[1]:.1f} {unit} ({d[2]:+.0%}) from the first to "
                                     f"the last {th['edge_fraction']:.0%} of the run (finding beyond "
                                     f"-{th['drift_fraction']:.0%})"],
                                    "A GPU that slows as it warms up is cooling- or power-limited: airflow, fans, "
                                    "inlet temperature, PSU; see the temperature and reasons of this run.",
                                    {"kind": kind, "first": d[0], "last": d[1], "change": round(d[2], 3)}))
            if len(pts) >= 6:
                med = statistics.median(v for _, v in pts)
                dips = [(s, v) for s, v in pts if v < th["dip_fraction"] * med]
                if len(dips) / len(pts) >= th["dip_min_share"]:
                    out.append(_finding("BRN002", "warning", f"{kind.upper()} throughput dips during the burn-in", subj,
                                        [f"{label}: {len(dips)} of {len(pts)} rounds below {th['dip_fraction']:.0%} of "
                                         f"the median {med:.1f} {unit} (lowest {min(v for _, v in dips):.1f} at "
                                         f"{dips[0][0]:.0f} s)"],
                                        "Intermittent slowdowns: another process, throttling (see reasons), or a "
                                        "failing GPU; repeat with `gpudoctor burn` and watch `nvidia-smi dmon`.",
                                        {"kind": kind, "dips": len(dips), "rounds": len(pts), "median": med}))
        samples = [ln for ln in lines if ln.get("t") == "sample" and ln.get("i") == i]
        s = summarize_samples(samples, g.get("static") or {})
        faults = {r: f for r, f in s.reasons.items() if r in FAULT_REASONS and f >= th["reason_fraction"]}
        if faults:
            out.append(_finding("BRN003", "error", "GPU throttled by a fault during the burn-in", subj,
                                [f"{label}: " + ", ".join(f"{r} in {f:.0%} of {s.n} samples"
                                                          for r, f in faults.items()),
                                 f"SM clock median {s.sm_mhz_median} MHz (min {s.sm_mhz_min}, max {s.max_sm_mhz})"],
                                "HW slowdown / thermal / power brake under load: cooling, power delivery, the GPU "
                                "(RMA if it repeats).", {"reasons": faults}))
        if s.temp_c_max is not None and s.slowdown_temp_c and s.temp_c_max >= s.slowdown_temp_c - HOT_MARGIN_C:
            out.append(_finding("BRN004", "warning", "GPU near its slowdown temperature during the burn-in", subj,
                                [f"{label}: up to {s.temp_c_max:.0f} °C, its slowdown threshold is "
                                 f"{s.slowdown_temp_c:.0f} °C (finding within {HOT_MARGIN_C:.0f} °C)"],
                                "Cooling: airflow, fan curves, inlet temperature, blanking panels.",
                                {"temp_c_max": s.temp_c_max, "slowdown_temp_c": s.slowdown_temp_c}))
        if s.others:
            out.append(_finding("BRN005", "warning", "Other processes used the GPU during the burn-in", subj,
                                [f"{label}: " + ", ".join(f"pid {o.pid} {o.name or ''}".strip() for o in s.others)],
                                "The figures are not the GPU's own: run the burn-in on idle GPUs.",
                                {"pids": [o.pid for o in s.others]}))
        deltas = counter_deltas(lines, i)
        if deltas:
            bad = any(k.startswith(("ecc.uncorrected", "remap.uncorrectable", "remap.pending", "remap.failure"))
                      for k in deltas)
            out.append(_finding("BRN006", "error" if bad else "warning", "Error counters rose during the burn-in", subj,
                                [f"{label}: " + ", ".join(f"{k} +{v}" for k, v in sorted(deltas.items()))],
                                "Uncorrectable ECC, pending row remaps: drain the GPU and reset it (remap), RMA if "
                                "they recur; corrected ECC: watch the rate; NVLink CRC/replay: reseat or check the "
                                "NVLink/NVSwitch path.", {"deltas": deltas}))
    if new_xids:
        out.append(_finding("BRN007", "error", "New XID errors in the kernel log during the burn-in", None,
                            new_xids[:8], "Look the XID up in NVIDIA's XID catalogue (gpudoctor explain LOG...); "
                            "most under load mean a hardware or driver fault.", {"xids": new_xids[:32]}))
    return out


def per_gpu_summary(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per GPU: median/min GEMM TFLOP/s and copy GB/s, temperature, power, clocks and reasons over the run."""
    out = []
    gpus = {ln["i"]: ln for ln in lines if ln.get("t") == "gpu" and isinstance(ln.get("i"), int)}
    for i, g in sorted(gpus.items()):
        gm = [v for _, v in series(lines, i, "gemm")]
        cp = [v for _, v in series(lines, i, "copy")]
        s = summarize_samples([ln for ln in lines if ln.get("t") == "sample" and ln.get("i") == i],
                              g.get("static") or {})
        out.append({"gpu": i, "name": g.get("name"), "gemm_rounds": len(gm),
                    "gemm_tflops_median": round(statistics.median(gm), 1) if gm else None,
                    "gemm_tflops_min": round(min(gm), 1) if gm else None,
                    "copy_gbs_median": round(statistics.median(cp), 1) if cp else None,
                    "temp_c_max": s.temp_c_max, "slowdown_temp_c": s.slowdown_temp_c,
                    "power_w_median": s.power_w_median, "power_limit_w": s.power_limit_w,
                    "sm_mhz_median": s.sm_mhz_median, "max_sm_mhz": s.max_sm_mhz, "reasons": s.reasons,
                    "counter_deltas": counter_deltas(lines, i)})
    return out
