"""GPU health rules (family GPU): thermals, clocks, power, memory errors, modes, other processes."""
from __future__ import annotations

from gpudoctor.compat import data
from gpudoctor.facts.clock_reasons import CLOCK_EVENT_REASONS
from gpudoctor.parsers._text import int_ranges
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule

MIB = 1024 * 1024

FAULT_REASONS = {r.nvml: r.meaning for r in CLOCK_EVENT_REASONS if r.severity == "error"}
WARN_REASONS = {r.nvml: r.meaning for r in CLOCK_EVENT_REASONS if r.severity == "warning"}


def _mode(v: bool | None) -> str:
    """Enabled / Disabled / unknown (a fact the input does not have is not 'Disabled')."""
    return "unknown" if v is None else "Enabled" if v else "Disabled"


@rule("GPU001")
def temperature(ctx):
    """Compares each GPU's temperature with its NVML slowdown threshold (minus a margin)."""
    margin = data.threshold("gpu.temperature", "margin_c")
    for g in ctx.gpus_known("temperature_c", "temperature_slowdown_c"):
        if g.temperature_c >= g.temperature_slowdown_c - margin:
            sev = "error" if g.temperature_c >= g.temperature_slowdown_c else "warning"
            yield ctx.finding([f"GPU {g.index}: {g.temperature_c} °C; slowdown at {g.temperature_slowdown_c} °C, "
                               f"shutdown at {g.temperature_shutdown_c} °C"],
                              severity=sev, subject=f"GPU {g.index}",
                              data={"temperature_c": g.temperature_c, "slowdown_c": g.temperature_slowdown_c})


@rule("GPU002")
def clock_events(ctx):
    """Decodes each GPU's active clock event reasons; HW ones are errors, SW thermal a warning."""
    for g in ctx.gpus_known("clock_event_reasons_mask"):
        active = set(g.clock_event_reasons)
        hw = [FAULT_REASONS[r] for r in FAULT_REASONS if r in active]
        sw = [WARN_REASONS[r] for r in WARN_REASONS if r in active]
        ev = [
            f"GPU {g.index}: clock event reasons 0x{g.clock_event_reasons_mask:x} = "
            f"{', '.join(sorted(active)) or 'none'}"
        ]
        if hw:
            yield ctx.finding(ev + hw, subject=f"GPU {g.index}", data={"mask": g.clock_event_reasons_mask})
        elif sw:
            yield ctx.finding(ev + sw, severity="warning", subject=f"GPU {g.index}",
                              title="GPU at its software thermal limit", data={"mask": g.clock_event_reasons_mask})


@rule("GPU003")
def power_limit(ctx):
    """Compares the enforced power limit with the default power-management limit (W)."""
    frac = data.threshold("gpu.power_limit", "min_fraction_of_default")
    for g in ctx.gpus_known("power_limit_w", "power_default_limit_w"):
        if g.power_limit_w < g.power_default_limit_w * frac:
            yield ctx.finding([f"GPU {g.index}: enforced power limit {g.power_limit_w:.0f} W < default "
                               f"{g.power_default_limit_w:.0f} W"], subject=f"GPU {g.index}",
                              remedy=f"sudo nvidia-smi -i {g.index} -pl {g.power_default_limit_w:.0f}",
                              data={"limit_w": g.power_limit_w, "default_w": g.power_default_limit_w})


@rule("GPU004")
def ecc(ctx):
    """Reads volatile and aggregate uncorrected ECC counts per GPU (volatile > 0: error; aggregate only: warning)."""
    for g in ctx.gpus_known(
        "ecc_uncorrected_volatile", skip=lambda g: "ECC disabled" if g.ecc_mode_current is False else None
    ):
        known_agg = g.ecc_uncorrected_aggregate  # the GPU's history: None when the input has no such column
        vol, agg = g.ecc_uncorrected_volatile, known_agg or 0
        if vol > 0:
            yield ctx.finding(
                [f"GPU {g.index}: {vol} uncorrected ECC errors since the driver loaded "
                 + (f"(aggregate {known_agg})" if known_agg is not None else "(aggregate not in the inputs)")],
                subject=f"GPU {g.index}",
                data={"volatile": vol, "aggregate": known_agg},
            )
        elif agg > 0:
            yield ctx.finding(
                [f"GPU {g.index}: {agg} uncorrected ECC errors over the GPU's life, none since the driver loaded"],
                severity="warning",
                subject=f"GPU {g.index}",
                title="Uncorrected ECC errors in the GPU's history",
                data={"volatile": 0, "aggregate": agg},
                remedy="Watch the volatile counter; check the remapped rows (GPU005) "
                "and the kernel log for XID 48/63/64.",
            )


@rule("GPU005")
def remapped_rows(ctx):
    """Reads NVML remapped rows: failure is an error, pending a warning."""
    for g in ctx.gpus_known("remapped_rows_pending"):
        if g.remapped_rows_failure:
            yield ctx.finding([f"GPU {g.index}: row remapping failure; {g.remapped_rows_uncorrectable} rows remapped "
                               f"for uncorrectable errors"], subject=f"GPU {g.index}", data={"failure": True})
        elif g.remapped_rows_pending:
            yield ctx.finding([f"GPU {g.index}: row remapping pending ({g.remapped_rows_uncorrectable} uncorrectable, "
                               f"{g.remapped_rows_correctable} correctable rows)"], severity="warning",
                              subject=f"GPU {g.index}", title="Row remapping pending: GPU reset needed",
                              data={"pending": True})


def _retired_state(g) -> str | None:
    """Why GPU ``g``'s retired-page facts are not there: None when they are."""
    if g.retired_pages_pending is not None or g.retired_pages_dbe is not None:
        return None
    if g.remapped_rows_pending is not None or "retired_pages_sbe" in g.unsupported:
        return "uses row remapping (Ampere or later, GPU005), not page retirement"
    return "retired pages not in the inputs"


@rule("GPU010")
def retired_pages(ctx):
    """Dynamic page retirement (pre-Ampere GPUs; NVML / `nvidia-smi -q` "Retired Pages" / --query-gpu
    retired_pages.*): a retirement pending is a warning (reload the driver), the table full
    (single + double-bit pages >= [gpu.retired_pages] table_full, 62) with one pending an error, full without one a
    warning. GPUs that answer row remapping instead are not applicable."""
    full = data.load("thresholds")["gpu"]["retired_pages"]["table_full"]
    gpus = ctx.gpus()
    why = {g.index: _retired_state(g) for g in gpus}
    known = [g for g in gpus if why[g.index] is None]
    if not known:
        if all(w and w.startswith("uses row remapping") for w in why.values()):
            raise NotApplicable("every GPU uses row remapping (GPU005)")
        raise NotAssessed("retired-page facts not in the inputs (`nvidia-smi -q -d PAGE_RETIREMENT` gives them)")
    unknown = [f"GPU {i}" for i, w in why.items() if w == "retired pages not in the inputs"]
    if unknown:
        ctx.partial = "unknown on " + ", ".join(unknown)
    for g in known:
        total = (g.retired_pages_sbe or 0) + (g.retired_pages_dbe or 0)
        counts = (f"{g.retired_pages_sbe if g.retired_pages_sbe is not None else '?'} single-bit, "
                  f"{g.retired_pages_dbe if g.retired_pages_dbe is not None else '?'} double-bit pages retired")
        data_ = {"sbe": g.retired_pages_sbe, "dbe": g.retired_pages_dbe, "pending": g.retired_pages_pending,
                 "table_full": full}
        if total >= full:
            yield ctx.finding([f"GPU {g.index}: {counts} (table full at {full})" +
                               ("; a retirement is pending" if g.retired_pages_pending else "")],
                              subject=f"GPU {g.index}", data=data_,
                              severity="error" if g.retired_pages_pending else "warning",
                              title=None if g.retired_pages_pending else "Page-retirement table nearly full")
        elif g.retired_pages_pending:
            yield ctx.finding([f"GPU {g.index}: a page retirement is pending ({counts})",
                               "the bad page stays in use until the driver reloads"],
                              subject=f"GPU {g.index}", severity="warning", data=data_,
                              title="Page retirement pending: reload the driver")


@rule("GPU006")
def compute_mode(ctx):
    """Flags compute mode Prohibited (error) and Exclusive_Process / Exclusive_Thread (warning)."""
    for g in ctx.gpus_known("compute_mode"):
        if g.compute_mode == "Prohibited":
            yield ctx.finding([f"GPU {g.index}: compute mode Prohibited"], subject=f"GPU {g.index}",
                              remedy=f"sudo nvidia-smi -i {g.index} -c DEFAULT")
        elif g.compute_mode in ("Exclusive_Process", "Exclusive_Thread"):
            yield ctx.finding([f"GPU {g.index}: compute mode {g.compute_mode}"], severity="warning",
                              subject=f"GPU {g.index}", title="GPU in exclusive compute mode",
                              remedy=f"sudo nvidia-smi -i {g.index} -c DEFAULT")


@rule("GPU007")
def mig(ctx):
    """Flags GPUs whose current (or pending) MIG mode is enabled."""
    for g in ctx.gpus_known("mig_mode_current"):
        if g.mig_mode_current:
            yield ctx.finding(
                [f"GPU {g.index}: MIG mode current=Enabled, pending={_mode(g.mig_mode_pending)}"],
                subject=f"GPU {g.index}",
                remedy=f"sudo nvidia-smi -i {g.index} -mig 0 && sudo nvidia-smi -i {g.index} -r",
            )
        elif g.mig_mode_pending:
            yield ctx.finding(
                [f"GPU {g.index}: MIG mode pending=Enabled (takes effect at the next GPU reset)"],
                severity="info",
                subject=f"GPU {g.index}",
                title="MIG mode will be enabled at the next reset",
            )


@rule("GPU008")
def other_processes(ctx):
    """Lists compute and graphics processes NVML reports on each GPU, with their memory (MiB)."""
    gpus = ctx.gpus_with("processes")
    shared = _contexts_on_one_gpu(gpus)
    if shared is not None:
        hub, pids, others = shared
        yield ctx.finding(
            [f"GPU {hub}: pids {', '.join(map(str, pids))} also run on GPU(s) {', '.join(map(str, others))}: each "
             f"rank holds a CUDA context on GPU {hub} as well as on its own GPU",
             "the ranks did not select their GPU before their first CUDA call (init_process_group, barrier, a tensor "
             f"or model created on cuda / cuda:0): GPU {hub} loses memory to every rank"],
            subject=f"GPU {hub}", severity="warning",
            title=f"Every rank also holds a context on GPU {hub} (torch.cuda.set_device missing)",
            remedy="Call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) first thing in each rank, pass "
                   "device_id=torch.device('cuda', local_rank) to init_process_group, and create tensors on 'cuda' "
                   "only after that (or with an explicit cuda:{local_rank}).",
            data={"gpu": hub, "pids": pids, "also_on": others})
        return
    job = _job_itself(gpus)
    kinds: dict[str, list] = {"display": [], "job": [], "other": []}  # GPUs by what holds them, in index order
    for g in gpus:
        if not g.processes:
            continue
        used = sum(p.used_memory_bytes or 0 for p in g.processes)
        kind = ("display" if all(p.kind == "graphics" for p in g.processes) and used < DISPLAY_BYTES else
                "job" if job else "other")
        kinds[kind].append(g)
    for kind, held in kinds.items():
        if not held:
            continue
        lines = [_process_line(g, p) for g in held for p in g.processes]
        data = {"processes": [p.model_dump() | {"gpu": g.index} for g in held for p in g.processes],
                "gpus": [g.index for g in held]}
        subject = f"GPU {held[0].index}" if len(held) == 1 else f"GPUs {int_ranges([g.index for g in held])}"
        if kind == "display":
            yield ctx.finding(lines + ["only graphics processes with little memory: this GPU drives a display"],
                              subject=subject, severity="info", title="GPU drives a display",
                              remedy="Harmless for training unless memory is tight; on a workstation, train on the "
                                     "GPUs without a display or stop the desktop session for long runs.", data=data)
        elif kind == "job":
            yield ctx.finding(lines + [job], subject=subject, severity="info",
                              title="One process per GPU, the same program on each: probably the job itself",
                              remedy="Nothing to stop if these are the job's own ranks (nvidia-smi taken while it "
                                     "ran); before a new job, check that they have exited.", data=data)
        else:
            yield ctx.finding(lines, subject=subject, data=data)


def _process_line(g, p) -> str:
    """'GPU 3: pid 4242 (python), compute, 12034 MiB'."""
    mem = f"{p.used_memory_bytes / MIB:.0f} MiB" if p.used_memory_bytes is not None else "memory n/a"
    return f"GPU {g.index}: pid {p.pid} ({p.name or 'name unknown: other PID namespace?'}), {p.kind}, {mem}"


def _contexts_on_one_gpu(gpus) -> tuple[int, list[int], list[int]] | None:
    """(hub GPU, pids, their other GPUs) when the compute processes of the other GPUs also appear on one GPU (each
    rank holds a context there as well as on its own GPU: torch.cuda.set_device(local_rank) was not called before
    the first CUDA work), else None."""
    where: dict[int, set[int]] = {}
    for g in gpus:
        for p in g.processes:
            if p.kind != "graphics":
                where.setdefault(p.pid, set()).add(g.index)
    for g in gpus:
        own = {p.pid for p in g.processes if p.kind != "graphics"}
        guests = sorted(pid for pid in own if len(where[pid]) == 2)
        if len(guests) >= 2 and all(pid in own for pid, gs in where.items() if len(gs) > 1):
            return g.index, guests, sorted({i for pid in guests for i in where[pid]} - {g.index})
    return None


DISPLAY_BYTES = 1 << 30  #: a display server's graphics memory (Xorg, gnome-shell: tens to hundreds of MiB)


def _job_itself(gpus) -> str | None:
    """A note when every GPU (at least 2) holds exactly one compute process and all have the same program name:
    the ranks of one job (torchrun starts one per GPU), not a stray process."""
    procs = [g.processes for g in gpus]
    if len(gpus) < 2 or any(len(p) != 1 or p[0].kind == "graphics" for p in procs):
        return None
    names = {p[0].name for p in procs}
    if len(names) != 1 or None in names:
        return None
    return f"{len(gpus)} GPUs each run one '{names.pop()}' process: the ranks of one job"


@rule("GPU009")
def persistence(ctx):
    """Flags GPUs with persistence mode off."""
    off = [g.index for g in ctx.gpus_known("persistence_mode") if g.persistence_mode is False]
    if off:
        yield ctx.finding([f"persistence mode off on GPU(s) {', '.join(map(str, off))}"], data={"gpus": off})
