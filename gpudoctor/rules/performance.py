"""GPU performance rules (family PRF, issue 16): the self-test's GEMM and device copies, the DDP step, the
all-reduce and pinned copies judged against the SKU table (``rules/perf_sku.toml``), a fleet baseline
(``gpudoctor scan --baseline``), and the node's sibling GPUs.

Every figure is a ratio measured / expected; below the warning fraction a finding, below the error
fraction an error. The finding carries measured, expected, ratio, where the expectation comes from and
the reason read from the NVML samples taken during the run (contention, a fault, the power cap).
A figure whose expectation is unknown is never a pass: the rule says *not assessed*.
"""
from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gpudoctor.compat import data
from gpudoctor.facts.findings import Finding
from gpudoctor.facts.model import ConfirmationFacts
from gpudoctor.facts.perf import (
    BaselineModel,
    PerfBaseline,
    SelfTestFacts,
    SelfTestGpu,
    ddp_key,
    explain,
    present_reasons,
)
from gpudoctor.rules.engine import Ctx, NotApplicable, NotAssessed, rule


def table() -> dict[str, Any]:
    """The parsed ``perf_sku.toml``."""
    return data.load("perf_sku")


def verdict(section: str) -> dict[str, Any]:
    return dict(table()["verdict"][section])


def sku_for(name: str | None) -> dict[str, Any] | None:
    """The first ``[[sku]]`` row whose ``match`` pattern is found in ``name`` (case-insensitive)."""
    if not name:
        return None
    for row in table()["sku"]:
        if re.search(row["match"], name, re.IGNORECASE):
            return dict(row)
    return None


@dataclass
class Expected:
    """An expectation: value, where it comes from, and whether it may give an error (measured) or only a
    warning (derived from a datasheet figure)."""

    value: float
    source: str
    derived: bool = False


def _baseline_model(base: PerfBaseline | None, name: str | None) -> BaselineModel | None:
    if base is None or not name:
        return None
    return base.models.get(name)


def _base_label(base: PerfBaseline) -> str:
    return f"baseline {base.path or 'file'} ({base.host or 'host?'}, {base.date or 'date?'})"


def _from_baseline(base: PerfBaseline | None, name: str | None,
                   figure: Callable[[BaselineModel], float | None]) -> Expected | None:
    """The fleet baseline's figure for GPU model ``name`` (``figure`` picks it from the model's row), or None."""
    bm = _baseline_model(base, name)
    value = figure(bm) if base is not None and bm is not None else None
    return Expected(value, _base_label(base)) if base is not None and value else None


def expected_gemm(g: SelfTestGpu, base: PerfBaseline | None) -> Expected | None:
    """Baseline first, then the table's measured figure, then datasheet x fallback fraction (derived)."""
    return _from_baseline(base, g.name, lambda m: m.gemm_tflops) or _table_gemm(g)


def _table_gemm(g: SelfTestGpu) -> Expected | None:
    row = sku_for(g.name)
    if row is None or g.gemm_dtype and row.get("gemm_dtype") and g.gemm_dtype != row["gemm_dtype"]:
        return None  # no row, or the table's figure is for another dtype
    v = verdict("gemm")
    factor = float(v["burst_to_sustained"])
    if row.get("gemm_expected"):
        if row.get("gemm_method") == "selftest":
            return Expected(float(row["gemm_expected"]), f"{row['key']}: {row['gemm_expected_source']}")
        return Expected(float(row["gemm_expected"]) * factor,
                        f"{row['key']}: {factor} x burst figure {row['gemm_expected']} TFLOP/s "
                        f"({row['gemm_expected_source']}; factor: {v['burst_source']})")
    if row.get("gemm_peak") and row.get("gemm_fallback"):
        return Expected(float(row["gemm_peak"]) * float(row["gemm_fallback"]) * factor,
                        f"{row['key']}: {row['gemm_fallback']:.2f} x datasheet {row['gemm_peak']} TFLOP/s x "
                        f"{factor} sustained ({row['gemm_fallback_source']})", derived=True)
    return None


def expected_copy(g: SelfTestGpu, base: PerfBaseline | None) -> Expected | None:
    """Baseline first, then the table's measured figure, then datasheet bandwidth x fallback fraction (derived)."""
    return _from_baseline(base, g.name, lambda m: m.d2d_gbs) or _table_copy(g.name)


def _table_copy(name: str | None) -> Expected | None:
    row = sku_for(name)
    if row is None:
        return None
    if row.get("copy_expected"):
        return Expected(float(row["copy_expected"]), f"{row['key']}: {row['copy_source']}")
    if row.get("hbm_peak"):
        v = verdict("copy")
        return Expected(float(row["hbm_peak"]) * float(v["fallback"]),
                        f"{row['key']}: {v['fallback_note']}; datasheet {row['hbm_peak']} GB/s", derived=True)
    return None


def grade(ratio: float, warning: float, error: float, derived: bool) -> str | None:
    """'error', 'warning' or None for ``ratio`` = measured / expected (higher is better)."""
    if ratio < error and not derived:
        return "error"
    if ratio < warning:
        return "warning"
    return None


def _conf(ctx: Ctx) -> ConfirmationFacts:
    c = ctx.snap.confirmation
    if c is None:
        raise NotApplicable("confirmation runs not run (`gpudoctor scan` runs them)")
    if c.status in ("skipped", "not_applicable"):
        raise NotApplicable(c.reason or c.status)
    return c


def _selftest(ctx: Ctx) -> SelfTestFacts:
    c = _conf(ctx)
    st = c.selftest
    if st is None:
        if c.device == "cpu":
            raise NotApplicable("CPU run: no GPU self-test")
        raise NotAssessed("no GPU self-test in these facts (a report from before it existed, or it did not run)")
    if st.status == "error" or not st.gpus:
        raise NotAssessed(f"the GPU self-test did not run: {st.reason or st.status}")
    return st


def _gpu_label(g: SelfTestGpu) -> str:
    return f"GPU {g.index}" + (f" ({g.name})" if g.name else "")


def _judge(ctx: Ctx, metric: str, unit: str, what: str) -> Iterator[Finding]:
    """Shared body of PRF001 (gemm) and PRF002 (copy)."""
    st = _selftest(ctx)
    base = ctx.snap.confirmation.baseline if ctx.snap.confirmation else None
    v = verdict(metric)
    unknown = []
    for g in st.gpus:
        measured = g.gemm_tflops if metric == "gemm" else g.d2d_gbs
        exp = expected_gemm(g, base) if metric == "gemm" else expected_copy(g, base)
        if measured is None or exp is None:
            unknown.append(f"{_gpu_label(g)}: " + ("not measured" + (f" ({g.error})" if g.error else "")
                                                   if measured is None else "no expected figure for this SKU"))
            continue
        ratio = measured / exp.value
        sev = grade(ratio, v["warning"], v["error"], exp.derived)
        if sev is None:
            continue
        kind, reason = explain(g)
        dtype = f" {g.gemm_dtype}" if metric == "gemm" and g.gemm_dtype else ""
        yield ctx.finding(
            [f"{_gpu_label(g)}: {what}{dtype} {measured:.1f} {unit}, expected {exp.value:.1f} {unit} "
             f"-> {ratio:.0%} (warning below {v['warning']:.0%}, error below {v['error']:.0%})",
             f"expected from {exp.source}" + (" (derived: warning at most)" if exp.derived else ""),
             f"reason from the NVML samples: {reason}"],
            subject=f"GPU {g.index}", severity=sev,  # type: ignore[arg-type]
            data={"measured": measured, "expected": exp.value, "ratio": round(ratio, 3), "unit": unit,
                  "expected_source": exp.source, "derived": exp.derived, "reason": reason, "reason_kind": kind})
    if unknown:
        if len(unknown) == len(st.gpus):
            raise NotAssessed("; ".join(unknown))
        ctx.partial = "; ".join(unknown)


@rule("PRF001")
def gemm_low(ctx: Ctx) -> Iterator[Finding]:
    """Compares each GPU's self-test GEMM (median TFLOP/s over timed groups) with the fleet baseline for its
    model, else the SKU table's self-test figure, else a sourced burst figure x 0.87 (sustained), else datasheet
    peak x a documented fraction (warning only)."""
    yield from _judge(ctx, "gemm", "TFLOP/s", "GEMM")


@rule("PRF002")
def copy_low(ctx: Ctx) -> Iterator[Finding]:
    """Compares each GPU's self-test device copy (median GB/s, bytes read + written) with the baseline, else the
    table's measured figure, else 0.75 x datasheet bandwidth (warning only)."""
    yield from _judge(ctx, "copy", "GB/s", "device copy")


@rule("PRF003")
def sibling_slow(ctx: Ctx) -> Iterator[Finding]:
    """For GEMM, device copy and pinned H2D/D2H: each GPU below the sibling fraction of the median of the node's
    GPUs of the same model is a finding naming it."""
    c = _conf(ctx)
    frac = verdict("sibling")["fraction"]
    series: list[tuple[str, str, dict[int, tuple[str | None, float, SelfTestGpu | None]]]] = []
    if c.selftest is not None:
        gm = {g.index: (g.name, g.gemm_tflops, g) for g in c.selftest.gpus if g.gemm_tflops is not None}
        cp = {g.index: (g.name, g.d2d_gbs, g) for g in c.selftest.gpus if g.d2d_gbs is not None}
        series += [("GEMM", "TFLOP/s", gm), ("device copy", "GB/s", cp)]  # type: ignore[list-item]
    names = {d.index: d.name for d in c.devices}
    series.append(("pinned H2D", "GB/s", {x.device_index: (names.get(x.device_index), x.h2d_gbs.median, None)
                                           for x in c.copies}))
    series.append(("pinned D2H", "GB/s", {x.device_index: (names.get(x.device_index), x.d2h_gbs.median, None)
                                           for x in c.copies}))
    most = max((len(s[2]) for s in series), default=0)
    if most == 0:
        raise NotAssessed("no per-GPU figures measured")
    if most < 2:
        raise NotApplicable("one GPU: no siblings to compare with")
    for what, unit, vals in series:
        by_model: dict[str | None, list[int]] = {}
        for i, (name, _, _) in vals.items():
            by_model.setdefault(name, []).append(i)
        for name, idx in by_model.items():
            if len(idx) < 2:
                continue
            med = statistics.median(vals[i][1] for i in idx)
            for i in idx:
                v = vals[i][1]
                if med > 0 and v < frac * med:
                    g = vals[i][2]
                    reason = explain(g)[1] if g is not None else "no samples for this measurement"
                    yield ctx.finding(
                        [f"GPU {i}{f' ({name})' if name else ''}: {what} {v:.1f} {unit}, median of its {len(idx)} "
                         f"siblings {med:.1f} {unit} -> {v / med:.0%} (finding below {frac:.0%})",
                         f"reason from the NVML samples: {reason}"],
                        subject=f"GPU {i}",
                        data={"metric": what, "measured": v, "expected": med, "ratio": round(v / med, 3),
                              "unit": unit, "expected_source": "median of the node's GPUs", "reason": reason})


def _ddp_expected(c: ConfirmationFacts, name: str | None, key: str) -> Expected | None:
    found = _from_baseline(c.baseline, name, lambda m: m.ddp_step_ms.get(key))
    if found:
        return found
    row = sku_for(name)
    if row and key in (row.get("ddp_step_ms") or {}):
        return Expected(float(row["ddp_step_ms"][key]), f"{row['key']}: {row['ddp_source']}")
    return None


@rule("PRF004")
def ddp_slow(ctx: Ctx) -> Iterator[Finding]:
    """Compares the DDP step's median time with the baseline or the SKU table for the same world size, batch,
    sequence length and precision (batch >= 64 only: smaller batches are launch-bound), and names the GPU
    figures that explain it."""
    c = _conf(ctx)
    if "ddp" not in c.tasks:
        raise NotApplicable("this run did not include the DDP step")
    d = c.ddp
    if d is None:
        raise NotAssessed("the DDP step did not run or did not finish")
    v = verdict("ddp")
    if d.per_rank_batch < v["min_batch"]:
        raise NotAssessed(f"batch {d.per_rank_batch} < {v['min_batch']}: the step is launch-bound, too noisy to judge")
    name = c.devices[0].name if c.devices else None
    key = ddp_key(d.world_size, d.per_rank_batch, d.seq_len, d.precision)
    exp = _ddp_expected(c, name, key)
    if exp is None:
        raise NotAssessed(f"no expected step time for {name or 'this GPU'} at {key} (record one: `gpudoctor "
                          "baseline save`)")
    ms = d.step.step_s.median * 1000.0
    ratio = ms / exp.value
    sev = "error" if ratio > v["error"] else "warning" if ratio > v["warning"] else None
    if sev is None:
        return
    ev = [f"step {ms:.1f} ms, expected {exp.value:.1f} ms -> {ratio:.2f}x (warning above {v['warning']}x, "
          f"error above {v['error']}x) at {key}, {name or 'GPU?'}", f"expected from {exp.source}"]
    gpu_note = "GPU figures not measured"
    if c.selftest is not None and c.selftest.gpus:
        parts = []
        for g in c.selftest.gpus:
            e = expected_gemm(g, c.baseline)
            r = f"{g.gemm_tflops / e.value:.0%} of expected" if e and g.gemm_tflops else "expected unknown"
            parts.append(f"GPU {g.index} GEMM {g.gemm_tflops or 0:.0f} TFLOP/s ({r}); {explain(g)[1]}")
        gpu_note = "; ".join(parts)
        low = [g for g in c.selftest.gpus if (e := expected_gemm(g, c.baseline)) and g.gemm_tflops
               and g.gemm_tflops / e.value < verdict("gemm")["warning"]]
        ev.append("the GPU figures explain it: " + gpu_note if low else
                  "the GPU figures are normal, so the host (CPU, launch path, NUMA) is the suspect: " + gpu_note)
    else:
        ev.append(gpu_note)
    yield ctx.finding(ev, severity=sev, subject=name,  # type: ignore[arg-type]
                      data={"measured": round(ms, 2), "expected": exp.value, "ratio": round(ratio, 3), "unit": "ms",
                            "expected_source": exp.source, "key": key, "reason": gpu_note})


def _low(g: SelfTestGpu, base: PerfBaseline | None) -> bool:
    """True when the GPU's GEMM or copy is below the warning fraction of its expected figure, or unknown."""
    pairs = ((g.gemm_tflops, expected_gemm(g, base), "gemm"), (g.d2d_gbs, expected_copy(g, base), "copy"))
    known = [(m, e, k) for m, e, k in pairs if m is not None and e is not None]
    if not known:
        return True
    return any(m / e.value < verdict(k)["warning"] for m, e, k in known)


@rule("PRF005")
def throttled(ctx: Ctx) -> Iterator[Finding]:
    """Reads the NVML samples taken during the self-test's timed part: fault reasons (error), a temperature
    within 5 °C of the GPU's slowdown threshold (warning), other processes with a compute context on the GPU
    (warning when its figures are low or unknown, info when they are normal)."""
    st = _selftest(ctx)
    no_samples = []
    for g in st.gpus:
        s = g.samples
        if s is None or s.n == 0:
            no_samples.append(f"GPU {g.index}")
            continue
        kind, reason = explain(g)
        if kind in ("fault", "contention", "hot"):
            sev = "error" if kind == "fault" else "warning"
            if kind == "contention" and not _low(g, ctx.snap.confirmation.baseline if ctx.snap.confirmation else None):
                # a process holding a context but leaving the figures normal is idle (GPU008 reports it)
                sev = "info"
                reason += "; the figures were normal, so it was not computing much"
            yield ctx.finding([f"{_gpu_label(g)}: {reason}",
                               f"{s.n} samples: SM clock median {s.sm_mhz_median} MHz (max {s.max_sm_mhz}), power "
                               f"{s.power_w_median} W (limit {s.power_limit_w}), up to {s.temp_c_max} °C, "
                               f"reasons {present_reasons(s) or 'none'}"],
                              subject=f"GPU {g.index}", severity=sev,  # type: ignore[arg-type]
                              data={"reason_kind": kind, "reason": reason, "reasons": s.reasons,
                                    "others": [o.model_dump() for o in s.others]})
    if no_samples:
        if len(no_samples) == len(st.gpus):
            raise NotAssessed("no NVML samples during the self-test (pynvml missing in the target interpreter?)")
        ctx.partial = "no NVML samples for " + ", ".join(no_samples)


@rule("PRF006")
def below_baseline(ctx: Ctx) -> Iterator[Finding]:
    """With `scan --baseline`: the best all-reduce busbw at >= 256 MiB (same world size) and each GPU's pinned
    H2D/D2H against the baseline's figures for the GPU model."""
    c = _conf(ctx)
    base = c.baseline
    if base is None:
        raise NotApplicable("no fleet baseline given (`gpudoctor scan --baseline FILE`)")
    v = verdict("baseline")
    names = {d.index: d.name for d in c.devices}
    judged = 0
    name0 = c.devices[0].name if c.devices else None
    bm0 = _baseline_model(base, name0)
    big = [a.busbw_gbs for a in c.allreduce if a.busbw_gbs and a.size_bytes >= 256 * 2**20]
    if big and bm0 is not None and str(c.world_size) in bm0.busbw_gbs:
        judged += 1
        exp_bw = bm0.busbw_gbs[str(c.world_size)]
        got = max(big)
        sev = grade(got / exp_bw, v["busbw_warning"], v["busbw_error"], False)
        if sev:
            yield ctx.finding([f"all-reduce busbw {got:.1f} GB/s on {c.world_size} GPUs, baseline {exp_bw:.1f} GB/s "
                               f"-> {got / exp_bw:.0%}", f"expected from {_base_label(base)}"],
                              severity=sev,  # type: ignore[arg-type]
                              data={"measured": got, "expected": exp_bw, "ratio": round(got / exp_bw, 3),
                                    "unit": "GB/s"})
    for cp in c.copies:
        bm = _baseline_model(base, names.get(cp.device_index))
        if bm is None:
            continue
        for label, got, exp in (("H2D", cp.h2d_gbs.median, bm.h2d_gbs), ("D2H", cp.d2h_gbs.median, bm.d2h_gbs)):
            if not exp:
                continue
            judged += 1
            sev = grade(got / exp, v["pinned_warning"], v["pinned_error"], False)
            if sev:
                yield ctx.finding([f"GPU {cp.device_index}: pinned {label} {got:.1f} GB/s, baseline {exp:.1f} GB/s "
                                   f"-> {got / exp:.0%}", f"expected from {_base_label(base)}"],
                                  subject=f"GPU {cp.device_index}", severity=sev,  # type: ignore[arg-type]
                                  data={"measured": got, "expected": exp, "ratio": round(got / exp, 3), "unit": "GB/s"})
    if judged == 0:
        raise NotAssessed("the baseline has no all-reduce or pinned-copy figures for this GPU model and world size")
