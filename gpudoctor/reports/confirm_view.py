"""Terminal view of the confirmation runs' measurements (all-reduce sweep, copies, DDP step).

Rendering only: it reads :class:`~gpudoctor.facts.model.ConfirmationFacts`; findings are the rules' job.
"""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpudoctor.facts.confirmation import fmt_size
from gpudoctor.facts.model import ConfirmationFacts, Stat

MS = 1e3
GB = 1e9


def _ms(s: Stat) -> str:
    return f"{s.median * MS:.2f}"


def _spread(s: Stat) -> str:
    return f"{s.p25 * MS:.2f}-{s.p75 * MS:.2f}"


def render_confirmation(c: ConfirmationFacts, console: Console) -> None:
    """Print what the runs measured; nothing when they did not run."""
    if c.status in ("skipped", "not_applicable", "error") and not c.runs:
        return
    console.print()
    if c.tasks == ["selftest"]:  # `gpudoctor selftest`: nothing else ran
        from gpudoctor.reports.perf_view import render_selftest

        if c.selftest is not None:
            render_selftest(c.selftest, console)
        return
    head = (f"[bold]Confirmation runs[/] · {c.backend} on {c.device}, world size {c.world_size or '?'} · "
            f"torch {c.torch_version or '?'}" + (f" (NCCL {c.nccl_version})" if c.nccl_version else "") +
            f" · {c.seconds or 0:.1f} s")
    console.print(head, highlight=False)
    if c.allreduce and (c.world_size or 0) < 2:
        console.print("all-reduce: world size 1, nothing crosses a link (a 1-rank all-reduce is a local no-op); "
                      "run on 2+ GPUs to measure busbw", highlight=False)
    elif c.allreduce:
        t = Table(title="all-reduce (rank 0; GB/s = 1e9 B/s; busbw = algbw·2(n-1)/n, nccl-tests)",
                  title_justify="left", show_edge=False)
        for col in ("size", "dtype", "calls", "time ms (median)", "p25-p75 ms", "algbw GB/s", "busbw GB/s", "result"):
            t.add_column(col, justify="right" if col not in ("dtype", "result") else "left")
        for a in c.allreduce:
            if a.error:
                t.add_row(fmt_size(a.size_bytes), a.dtype, "-", "-", "-", "-", "-", escape(a.error[:60]))
                continue
            check = "ok" if a.correct else ("WRONG" if a.correct is False else "?")
            t.add_row(fmt_size(a.size_bytes), a.dtype, str(a.iters) if a.iters else "?",
                      _ms(a.time_s) if a.time_s else "-",
                      _spread(a.time_s) if a.time_s else "-",
                      f"{a.algbw_gbs:.2f}" if a.algbw_gbs is not None else "-",
                      f"{a.busbw_gbs:.2f}" if a.busbw_gbs is not None else "-", check)
        console.print(t)
    if c.copies:
        t = Table(title="pinned host<->device copies (median, GB/s)", title_justify="left", show_edge=False)
        for col in ("GPU", "bus id", "size", "H2D", "D2H"):
            t.add_column(col)
        for cp in c.copies:
            t.add_row(str(cp.device_index), cp.pci_bus_id or "?", fmt_size(cp.size_bytes), f"{cp.h2d_gbs.median:.1f}",
                      f"{cp.d2h_gbs.median:.1f}")
        console.print(t)
    d = c.ddp
    if d is not None:
        console.print(
            f"[bold]DDP smoke step[/] · {d.model} ({d.params / 1e6:.1f} M params), {d.precision}, "
            f"{d.optimizer}, batch {d.per_rank_batch}/rank"
            f"{' (auto)' if (d.batch_choice or '').startswith('auto') else ''}"
            f" x seq {d.seq_len}, {d.world_size} rank(s), "
            f"{d.warmup_steps} warm-up + {d.timed_steps} timed steps",
            highlight=False,
        )
        t = Table(show_edge=False, title_justify="left")
        for col in ("", "step ms", "p25-p75", "forward", "backward (+all-reduce)", "optimizer"):
            t.add_column(col, justify="right" if col else "left")
        t.add_row(f"{d.world_size} rank(s)", _ms(d.step.step_s), _spread(d.step.step_s), _ms(d.step.forward_s),
                  _ms(d.step.backward_s), _ms(d.step.optimizer_s))
        if d.nosync_step_s:
            t.add_row("no_sync", _ms(d.nosync_step_s), _spread(d.nosync_step_s), "", "", "")
        if d.single:
            t.add_row(f"1 device, batch {d.single.batch}", _ms(d.single.step_s), _spread(d.single.step_s),
                      _ms(d.single.forward_s), _ms(d.single.backward_s), _ms(d.single.optimizer_s))
        console.print(t)
        parts = []
        if d.samples_per_s:
            parts.append(f"{d.samples_per_s:.0f} samples/s")
        if d.efficiency is not None:
            parts.append(f"scaling efficiency E = {d.efficiency:.2f} ({d.efficiency_low:.2f}-{d.efficiency_high:.2f}, "
                         f"{d.scaling})")
        if d.grad_allreduce_s and d.world_size > 1:  # at world size 1 the all-reduce moves nothing
            parts.append(f"gradient all-reduce {_ms(d.grad_allreduce_s)} ms ({fmt_size(d.grad_bytes)})")
        if d.loss_first is not None:
            parts.append(f"loss {d.loss_first:.3f} -> {d.loss_last:.3f}")
        if d.params_max_abs_diff is not None and d.world_size > 1:
            parts.append("parameters identical on all ranks" if d.params_max_abs_diff == 0
                         else f"parameters DIFFER (max {d.params_max_abs_diff:g})")
        mem = [f"rank {m.rank} {m.peak_allocated_bytes / GB:.1f} GB" for m in d.memory if m.peak_allocated_bytes]
        if mem:
            parts.append("peak memory " + ", ".join(mem))
        console.print("  " + " · ".join(parts), highlight=False)
        if d.batch_choice and d.batch_choice.startswith("auto"):
            console.print(f"  batch {escape(d.batch_choice)}; --batch sets it", highlight=False, style="dim")
    for run in c.runs:
        if run.status != "ok" or len(c.runs) > 1:
            console.print(f"  run {escape(run.name)}: {run.status} in {run.seconds:.1f} s"
                          + (f" — {escape(run.message)}" if run.message else ""), highlight=False)
    if c.selftest is not None:  # issue 16
        from gpudoctor.reports.perf_view import render_selftest

        render_selftest(c.selftest, console)
    kept = [run.log_dir for run in c.runs if run.status == "ok" and run.log_dir]
    if kept:  # --keep-logs on a run that went well (failed runs name their logs in the CNF001 finding)
        console.print(f"  per-rank logs kept in {escape(kept[0])}", highlight=False)
