"""Confirmation-run rules (family CNF): what the short real runs showed (checklist C1-C8).

The runs themselves live in :mod:`gpudoctor.confirm`; these rules judge their facts
(``snapshot.confirmation``) against the link classes of ``rules/confirm.toml``.
"""
from __future__ import annotations

from gpudoctor.compat import data
from gpudoctor.facts.confirmation import TRANSPORT_SENTENCES, attribute_loss, fmt_size
from gpudoctor.facts.topology import nvlink_generation
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule


def _conf(ctx, need_ok: bool = False):
    """The confirmation facts; NotApplicable when the runs were not run, NotAssessed when they could
    not start (``need_ok``: also when the main run did not complete)."""
    c = ctx.snap.confirmation
    if c is None:
        raise NotApplicable("confirmation runs not run (`gpudoctor scan` runs them; `smoke`, `bench allreduce`)")
    if c.status in ("skipped", "not_applicable"):
        raise NotApplicable(c.reason or c.status)
    if c.status == "error":
        raise NotAssessed(f"confirmation run could not start: {c.reason}")
    if need_ok and c.status == "interrupted":
        raise NotAssessed(c.reason or "the confirmation run was interrupted")
    if need_ok and c.status != "ok":
        raise NotAssessed(f"the confirmation run {c.status} (see CNF001)")
    return c


def _task(c, task: str) -> None:
    if task not in c.tasks:
        raise NotApplicable(f"this run did not include the {task} task")


def _ddp(c):
    """The DDP step's result; NotApplicable when the run did not include it, NotAssessed when it did not finish."""
    _task(c, "ddp")
    if c.ddp is None:
        raise NotAssessed("the DDP step did not run or did not finish")
    return c.ddp


def _cfg(section: str) -> dict:
    return data.load("confirm")[section]


def _nvml_gpu(ctx, uuid: str | None, bus: str | None, index: int, world: int):
    """The NVML GPU a torch device is: by UUID, else PCI bus id, else index when nothing is hidden."""
    nv = ctx.snap.nvml
    if nv is None or not nv.available or not nv.gpus:
        return None

    def norm_uuid(u):
        return u.lower().removeprefix("gpu-") if u else None

    for g in nv.gpus:
        if uuid and norm_uuid(g.uuid) == norm_uuid(uuid):
            return g
    for g in nv.gpus:
        if bus and g.pci_bus_id and g.pci_bus_id.lower().lstrip("0") == bus.lower().lstrip("0"):
            return g
    env = ctx.snap.env.variables if ctx.snap.env else {}
    if "CUDA_VISIBLE_DEVICES" not in env and len(nv.gpus) >= world and index < len(nv.gpus):
        return nv.gpus[index]
    return None


def pcie_line_gbs(gen: int | None, width: int | None) -> float | None:
    """PCIe line rate in GB/s, one direction, for a generation and lane count (rules/confirm.toml)."""
    if not gen or not width:
        return None
    per_lane = _cfg("pcie")["per_lane_gbs"].get(str(gen))
    return per_lane * width if per_lane else None


def nvlink_gbs(g) -> tuple[float, int, int | None]:
    """(GB/s one direction over the GPU's active NVLinks, active link count, NVLink generation). An unknown
    generation counts 25 GB/s per link (rules/confirm.toml [nvlink.per_link_gbs] default), never 0."""
    cfg = _cfg("nvlink")
    active = [link for link in g.nvlinks if link.active]
    if not active:
        return 0.0, 0, None
    by_name = {k: v for k, v in cfg["per_link_gbs_by_name"].items() if k != "source"}
    override = next((v for k, v in by_name.items() if g.name and k.lower() in g.name.lower()), None)
    total, gen = 0.0, None
    for link in active:
        g_link = nvlink_generation(link.version)  # NVML reports an enum (6 = NVLink 4.0), the table is by generation
        gen = g_link or gen
        total += override or cfg["per_link_gbs"].get(str(g_link), cfg["per_link_gbs"].get("default", 25.0))
    return total, len(active), gen


def link_class(ctx, c) -> tuple[str, float, float]:
    """(label, expected line rate GB/s one direction, min fraction) of the GPUs in the run.

    NVLink when every GPU has active NVLinks (and, beyond two ranks, more than the bridge count);
    else the slowest GPU's PCIe link (gen max x width max, as NVML reports them).
    Raises NotAssessed when the GPUs cannot be matched with NVML or their links are unknown.
    """
    cfg = _cfg("allreduce")
    world = c.world_size or 0
    gpus = [_nvml_gpu(ctx, d.uuid, d.pci_bus_id, d.index, world) for d in c.devices]
    if not gpus or any(g is None for g in gpus):
        raise NotAssessed("cannot match the run's GPUs with NVML's (no UUID / bus id; CUDA_VISIBLE_DEVICES set?)")
    nvl = [nvlink_gbs(g) for g in gpus]
    if all(n[1] > 0 for n in nvl) and (world <= 2 or min(n[1] for n in nvl) > cfg["bridge_max_links"]):
        worst = min(nvl, key=lambda n: n[0])
        return (f"NVLink{worst[2] or ''} x{worst[1]} ({worst[0]:.0f} GB/s per direction)", worst[0],
                cfg["nvlink_min_fraction"])
    rates = [(pcie_line_gbs(g.pcie_gen_max, g.pcie_width_max), g) for g in gpus]
    if any(r is None for r, _ in rates):
        raise NotAssessed("PCIe generation or width unknown for a GPU of the run")
    rate, g = min(((r, g) for r, g in rates if r is not None), key=lambda x: x[0])  # all of them (checked above)
    return (
        f"PCIe Gen{g.pcie_gen_max} x{g.pcie_width_max} ({rate:.1f} GB/s per direction)",
        rate,
        cfg["pcie_min_fraction"],
    )


# --------------------------------------------------------------------------------------------------
@rule("CNF001")
def run_failed(ctx):
    """Reports a confirmation run that failed or hung: which rank, which collective or phase, its last NCCL
    warnings, and which transport the re-runs with NCCL_P2P_DISABLE=1 / NCCL_SHM_DISABLE=1 blame."""
    c = _conf(ctx)
    if c.status == "ok":
        return
    if c.status == "interrupted":  # stopped by the user, not failed: nothing to blame
        raise NotAssessed(c.reason or "the confirmation run was interrupted")
    main = c.runs[0] if c.runs else None
    ev = [f"{c.backend or '?'} run, world size {c.world_size or '?'}: {c.reason or c.status}"]
    if main:
        for r in main.ranks:
            if r.error and (main.culprit_rank is None or r.rank == main.culprit_rank):
                ev.append(f"rank {r.rank}: {r.error}")
        warns = [f"rank {r.rank}: {w}" for r in main.ranks for w in r.nccl_warnings]
        if warns:
            ev.append("last NCCL warnings:")
            ev.extend("  " + w for w in warns[-6:])
        if main.orphans_killed:
            ev.append(f"{main.orphans_killed} process(es) of the run were still alive after it ended and were killed")
        if main.log_dir:
            ev.append(f"per-rank logs: {main.log_dir}")
        if c.status == "hung":
            ev.append("a run that is only slow (big --batch, many ranks on few cores) looks the same: a larger "
                      "--timeout / --confirm-timeout tells them apart")
    remedy = None
    causes = _known_causes(ctx, main) if main else []
    for entry, lines in causes:
        ev.append(f"known cause ({entry['id']}): {entry['title']}")
        ev.extend("  " + line for line in lines)
    if causes:
        remedy = causes[0][0]["remedy"]
    for run in c.runs[1:]:
        ev.append(
            f"re-run with {run.name}: {run.status}"
            + (f" ({run.message})" if run.message and run.status != "ok" else "")
        )
    if c.transport_verdict and len(c.runs) >= 3:
        verdict = c.transport_verdict  # recorded by the runner (gpudoctor.facts.confirmation.transport_verdict)
        ev.append(f"verdict: {TRANSPORT_SENTENCES[verdict]}")
        if verdict == "p2p":
            remedy = ("Fix peer-to-peer: on PCIe hosts disable ACS on the bridges above the GPUs and IOMMU redirection "
                      "(BIOS, or `setpci`, or iommu=pt), see the NCCL troubleshooting guide 'PCI Access Control "
                      "Services'; on NVLink/NVSwitch hosts check `nvidia-smi nvlink -s` and Fabric Manager. "
                      "NCCL_P2P_DISABLE=1 works around it at a large bandwidth cost.")
        elif verdict == "shm":
            remedy = ("Fix the SHM transport: give the container a larger /dev/shm (--shm-size=1g or more, or "
                      "--ipc=host) and check the memlock ulimit; NCCL_SHM_DISABLE=1 works around it.")
    yield ctx.finding(ev, subject=f"rank {main.culprit_rank}" if main and main.culprit_rank is not None else None,
                      title="Confirmation run hung" if c.status == "hung" else None, remedy=remedy,
                      data={"status": c.status, "verdict": c.transport_verdict,
                            "culprit_rank": main.culprit_rank if main else None,
                            "signatures": [e["id"] for e, _ in causes]})


def _known_causes(ctx, run) -> list[tuple[dict, list[str]]]:
    """The error catalogue (rules/signatures.toml) read over the failed ranks' errors, NCCL warnings and log tails:
    the same diagnosis `gpudoctor check` gives for those lines, with this host's facts."""
    from gpudoctor.rules.logs import known_causes

    text = "\n".join([r.error or "" for r in run.ranks] + [w for r in run.ranks for w in r.nccl_warnings]
                     + [line for r in run.ranks for line in r.log_tail])
    return known_causes(text, ctx.snap) if text.strip() else []


@rule("CNF002")
def allreduce_wrong(ctx):
    """Checks that every all-reduce of the sweep gave the exact sum on every rank (rank r contributes (r+1) x a
    1,2,3,4 pattern; exact in every dtype for small world sizes, within rounding otherwise)."""
    c = _conf(ctx)
    _task(c, "allreduce")
    checked = [a for a in c.allreduce if a.correct is not None]
    if not checked:
        raise NotAssessed("no all-reduce result was checked")
    for a in checked:
        if not a.correct:
            yield ctx.finding([f"all-reduce {a.dtype} {fmt_size(a.size_bytes)}: max |error| {a.max_abs_error:g} "
                               f"over world size {c.world_size}"],
                              subject=f"{a.dtype} {fmt_size(a.size_bytes)}",
                              data={"dtype": a.dtype, "size_bytes": a.size_bytes, "max_abs_error": a.max_abs_error})


@rule("CNF003")
def busbw_low(ctx):
    """Compares the best all-reduce busbw at messages of 256 MiB and more with the link class of the run's GPUs
    (NVLink generation x active links, else the slowest PCIe gen x width) times a documented fraction."""
    c = _conf(ctx)
    _task(c, "allreduce")
    if c.device != "cuda":
        raise NotApplicable("CPU (gloo) run: no GPU link to compare with")
    if (c.world_size or 0) < 2:
        raise NotApplicable("one rank: the all-reduce moves no data between GPUs")
    min_size = _cfg("allreduce")["judge_min_size_bytes"]
    big = [
        a for a in c.allreduce if a.size_bytes >= min_size and a.busbw_gbs and a.correct is not False and not a.error
    ]
    if not big:
        raise NotAssessed(f"no correct all-reduce of {fmt_size(min_size)} or more was timed")
    label, expected, fraction = link_class(ctx, c)
    best = max(big, key=lambda a: a.busbw_gbs)
    if best.busbw_gbs < fraction * expected:
        yield ctx.finding(
            [
                f"best busbw {best.busbw_gbs:.1f} GB/s (all-reduce {best.dtype} {fmt_size(best.size_bytes)}, "
                f"algbw {best.algbw_gbs:.1f} GB/s, {c.world_size} ranks)",
                f"link class {label}: expected at least {fraction:.0%} = {fraction * expected:.1f} GB/s",
            ],
            subject=f"{c.world_size} GPUs",
            data={
                "busbw_gbs": best.busbw_gbs,
                "expected_gbs": expected,
                "fraction": fraction,
                "link": label,
                "size_bytes": best.size_bytes,
                "dtype": best.dtype,
            },
        )


@rule("CNF004")
def copy_low(ctx):
    """Compares each GPU's pinned host->device and device->host copy bandwidth (256 MiB copies, median) with its
    PCIe line rate (NVML max generation x max width) times a documented fraction."""
    c = _conf(ctx)
    if not c.copies:
        raise NotApplicable("no host<->device copies measured (CPU run or task not selected)")
    fraction = _cfg("copy")["min_fraction"]
    unknown = []
    for cp in c.copies:
        g = _nvml_gpu(ctx, cp.uuid, cp.pci_bus_id, cp.device_index, c.world_size or 1)
        rate = pcie_line_gbs(g.pcie_gen_max, g.pcie_width_max) if g else None
        if rate is None:
            unknown.append(f"GPU {cp.device_index}")
            continue
        low = min(cp.h2d_gbs.median, cp.d2h_gbs.median)
        if low < fraction * rate:
            yield ctx.finding(
                [
                    f"GPU {g.index}{f' ({g.pci_bus_id})' if g.pci_bus_id else ''}: "
                    f"pinned H2D {cp.h2d_gbs.median:.1f} GB/s, "
                    f"D2H {cp.d2h_gbs.median:.1f} GB/s ({fmt_size(cp.size_bytes)} copies)",
                    f"NVML link PCIe Gen{g.pcie_gen_max} x{g.pcie_width_max} = {rate:.1f} GB/s per direction; "
                    f"expected at least {fraction:.0%} = {fraction * rate:.1f} GB/s",
                ],
                subject=f"GPU {g.index}",
                data={
                    "h2d_gbs": cp.h2d_gbs.median,
                    "d2h_gbs": cp.d2h_gbs.median,
                    "line_gbs": rate,
                    "fraction": fraction,
                },
            )
    if unknown and len(unknown) == len(c.copies):
        raise NotAssessed("PCIe link of " + ", ".join(unknown) + " unknown (NVML facts missing or unmatched)")


@rule("CNF005")
def ddp_broken(ctx):
    """Checks the DDP BERT smoke step: every loss finite, parameters identical on all ranks afterwards."""
    c = _conf(ctx)
    d = _ddp(c)
    if not d.loss_finite:
        yield ctx.finding([f"loss not finite: first {d.loss_first}, last {d.loss_last} ({d.precision}, {d.model})"],
                          title="DDP smoke step: loss not finite", data={"loss_last": d.loss_last})
    if d.world_size > 1 and d.params_max_abs_diff is not None and d.params_max_abs_diff > 0:
        yield ctx.finding([f"parameters differ across {d.world_size} ranks after {d.warmup_steps + d.timed_steps} "
                           f"steps: max |difference| {d.params_max_abs_diff:g}"],
                          title="DDP smoke step: ranks out of sync", data={"max_abs_diff": d.params_max_abs_diff})


COMM_FIX = ("Communication-bound: fix the interconnect first (CNF003, `nvidia-smi topo -m`, NCCL variables left "
            "set), then raise the per-GPU batch so backward hides the gradient all-reduce.")
CPU_FIX = ("Nothing to fix on this host: a gloo run on shared CPU cores shows the method, not the GPUs' interconnect "
           "or compute; run `gpudoctor smoke` (without --cpu) on the GPU host for the efficiency that matters.")
COMP_FIX = ("Computation-bound: each rank computes slower than one GPU alone. Give each rank its own CPU cores and "
            "its GPU's NUMA node, check clocks, power and temperature (GPU rules) and data loading (> 5 ms/step is a "
            "red flag).")


@rule("CNF006")
def scaling_low(ctx):
    """Fires when the DDP step's scaling efficiency E (median; weak scaling unless strong was asked) is below the
    documented minimum, and attributes the loss to communication or computation (checklist C8)."""
    c = _conf(ctx)
    d = _ddp(c)
    if d.world_size < 2:
        raise NotApplicable("world size 1: nothing to scale")
    if d.efficiency is None or d.single is None:
        raise NotAssessed("no single-device baseline in this run")
    floor = _cfg("scaling")["min_efficiency"]
    if d.efficiency >= floor:
        return
    ms = 1e3
    ev = [f"E = {d.efficiency:.2f} (range {d.efficiency_low:.2f}-{d.efficiency_high:.2f}), {d.scaling} scaling, "
          f"{d.world_size} ranks, {d.model} {d.precision}",
          f"step {d.step.step_s.median * ms:.1f} ms at batch {d.per_rank_batch}/rank vs "
          f"{d.single.step_s.median * ms:.1f} ms on one device at batch {d.single.batch}"]
    att = attribute_loss(d)
    dominant = None
    if att:
        dominant = att["dominant"]
        ev.append(f"communication {att['communication_s'] * ms:.1f} ms/step (DDP step minus the same step under "
                  f"no_sync), computation {att['computation_s'] * ms:.1f} ms/step (no_sync step minus one device's)")
        if att["grad_allreduce_s"] is not None:
            ev.append(f"one all-reduce of the {fmt_size(d.grad_bytes)} gradient takes "
                      f"{att['grad_allreduce_s'] * ms:.1f} ms")
        ev.append(f"the loss is mostly {dominant}")
    severity = None
    remedy = {"communication": COMM_FIX, "computation": COMP_FIX}.get(dominant or "")
    bound = f", {dominant}-bound" if dominant else ""
    if c.device != "cuda":
        # the GPU advice (interconnect, NCCL, per-GPU batch, NUMA of the GPU) means nothing for gloo on CPU
        severity, remedy = "info", CPU_FIX
        bound = f", mostly {dominant} on CPU" if dominant else ""
        ev.append("CPU (gloo) run on shared cores: it shows the method, not this host's GPUs")
    yield ctx.finding(ev, severity=severity, subject=f"{d.world_size} ranks", remedy=remedy,
                      title=f"Scaling efficiency {d.efficiency:.0%} (below {floor:.0%}){bound}",
                      data={"efficiency": d.efficiency, "low": d.efficiency_low, "high": d.efficiency_high,
                            "scaling": d.scaling, **(att or {})})
