"""The DDP smoke step a confirmation rank runs: batch choice, timed train steps, the no_sync and single-device
runs (standard library + torch only; raw times in seconds)."""
from __future__ import annotations

from typing import Any, cast

from gpudoctor.confirm.collectives import time_allreduce
from gpudoctor.confirm.plan import (
    AUTO_BATCHES,
    AUTO_MAX_TOKENS,
    AUTO_MEMORY_FRACTION,
    BERT_BASE_BYTES_PER_TOKEN,
    BERT_BASE_FIXED_BYTES,
    auto_batch,
    fmt_size,
)
from gpudoctor.confirm.protocol import DdpCfg
from gpudoctor.confirm.tasks import Marks, State, _maybe_fault


def _optimizer(torch, params, lr: float, cuda: bool):
    try:
        return torch.optim.AdamW(params, lr=lr, fused=True), "AdamW(fused)"
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(params, lr=lr, foreach=cuda), "AdamW(foreach)" if cuda else "AdamW"


def _train_steps(torch, model, loss_fn, opt, scaler, autocast, ids, labels, marks: Marks, warmup: int, steps: int,
                 no_sync=None) -> dict:
    """Warm-up then timed steps; returns per-step forward/backward/optimizer/step seconds and losses."""
    import contextlib

    rows, losses = [], []
    for i in range(warmup + steps):
        ctx = no_sync() if no_sync is not None else contextlib.nullcontext()
        with ctx:
            a = marks.mark()
            with autocast():
                loss = loss_fn(model, ids, labels)
            b = marks.mark()
            (scaler.scale(loss) if scaler else loss).backward()
            c = marks.mark()
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        d = marks.mark()
        losses.append(loss.detach())
        if i >= warmup:
            rows.append((a, b, c, d))
    marks.sync()
    # the timed window end to end (gaps between steps included): what a loop timed with one event pair
    # gives, and what throughput follows from
    window = marks.seconds(rows[0][0], rows[-1][3]) / len(rows) if rows else None
    return {"window_step_s": window,
            "forward_s": [marks.seconds(a, b) for a, b, _, _ in rows],
            "backward_s": [marks.seconds(b, c) for _, b, c, _ in rows],
            "optimizer_s": [marks.seconds(c, d) for _, _, c, d in rows],
            "step_s": [marks.seconds(a, d) for a, _, _, d in rows],
            "losses": [float(x.float().item()) for x in losses]}


def _resolve_batch(torch, dist, cfg: DdpCfg, cuda: bool) -> tuple[int, str]:
    """The step's batch (per rank, or global under strong scaling) and how it was chosen. "auto" (the GPU
    default): :func:`plan.auto_batch` on this rank's free memory, then the minimum over ranks (an
    all-reduce), so every rank runs the same batch."""
    if cfg["batch"] != "auto":
        return int(cfg["batch"]), ("given (--batch)" if cfg.get("batch_given") else "default of the tiny model")
    if not cuda:
        return 4, "default of the tiny model"
    free, _total = torch.cuda.mem_get_info()
    mine, _est = auto_batch(free, cfg["seq"])
    t = torch.tensor([mine], dtype=torch.int64, device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    batch = int(t.item())
    est = BERT_BASE_FIXED_BYTES + BERT_BASE_BYTES_PER_TOKEN * batch * cfg["seq"]
    if est > AUTO_MEMORY_FRACTION * free:
        return batch, (f"auto: even the smallest batch ({batch}) is estimated at {est / 1e9:.1f} GB, more than "
                       f"{AUTO_MEMORY_FRACTION:.0%} of the {free / 1e9:.1f} GB free on rank {dist.get_rank()}: "
                       f"free GPU memory (other processes?) or pass a smaller --seq")
    return batch, (
        f"auto: the largest of {'/'.join(map(str, AUTO_BATCHES))} with at most {AUTO_MAX_TOKENS} tokens "
        f"whose estimated peak ({est / 1e9:.1f} GB) fits {AUTO_MEMORY_FRACTION:.0%} of every GPU's free memory "
        f"(rank {dist.get_rank()}: {free / 1e9:.0f} GB free)"
    )


def task_ddp(torch, dist, rank: int, n: int, device: str, cfg: DdpCfg, state: State, fault) -> dict:
    """DDP BERT smoke step (checklist C2-C5, C8); returns raw timings and checks."""
    import contextlib

    from torch.nn.parallel import DistributedDataParallel as DDP

    from gpudoctor.confirm import bert

    cuda = device == "cuda"
    marks = Marks(torch, cuda)
    strong = cfg["scaling"] == "strong"
    batch, batch_choice = _resolve_batch(torch, dist, cfg, cuda)
    per_rank = max(1, batch // n) if strong else batch
    if strong and per_rank * n != batch:  # one rank per GPU, GPU count not known when the plan was made
        batch_choice += f"; global batch {batch} is not a multiple of {n} ranks: {per_rank * n} used"
    state.set("ddp", f"DDP: building {cfg['model']} model")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        major, _ = torch.cuda.get_device_capability()
        dtype = torch.bfloat16 if major >= 8 else torch.float16
        precision = "bf16 autocast" if major >= 8 else "fp16 autocast + GradScaler"
    else:
        dtype, precision = None, "fp32"

    def autocast():
        return torch.autocast("cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()

    def make_scaler():
        if not cuda or dtype is not torch.float16:
            return None
        try:
            return torch.amp.GradScaler("cuda")
        except (AttributeError, TypeError):
            return torch.cuda.amp.GradScaler()

    torch.manual_seed(1234 + rank)  # different init per rank: DDP must broadcast rank 0's parameters
    model, loss_fn = bert.build(cfg["model"], cfg["config"], device)
    vocab = cast(Any, model).config.vocab_size if cfg["model"] == "hf" else cfg["config"]["vocab"]
    params = sum(p.numel() for p in model.parameters())
    ddp = DDP(model, device_ids=[torch.cuda.current_device()] if cuda else None, gradient_as_bucket_view=True)
    opt, opt_name = _optimizer(torch, ddp.parameters(), cfg["lr"], cuda)
    ids, labels = bert.synthetic_batch(per_rank, cfg["seq"], vocab, device, seed=100 + rank)
    state.set(
        "ddp", f"DDP: {cfg['warmup']} warm-up + {cfg['steps']} timed steps, batch {per_rank}/rank x seq {cfg['seq']}"
    )
    _maybe_fault(fault, "ddp", state)
    main = _train_steps(
        torch, ddp, loss_fn, opt, make_scaler(), autocast, ids, labels, marks, cfg["warmup"], cfg["steps"]
    )
    out = {"model": cfg["model"], "params": params, "grad_bytes": params * 4, "precision": precision,
           "optimizer": opt_name, "per_rank_batch": per_rank, "global_batch": per_rank * n, "seq": cfg["seq"],
           "warmup": cfg["warmup"], "steps": cfg["steps"], "scaling": cfg["scaling"], "batch_choice": batch_choice,
           "ddp": main}

    state.set("ddp-check", "DDP: comparing parameters across ranks")
    flat = torch.cat([p.detach().float().reshape(-1) for p in model.parameters()])
    hi, lo = flat.clone(), flat.clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    out["params_max_abs_diff"] = float((hi - lo).abs().max().item())
    del hi, lo, flat

    state.set("ddp-allreduce", f"all-reduce of the gradient size ({fmt_size(params * 4)} fp32)")
    buf = torch.zeros(params, dtype=torch.float32, device=device)
    out["grad_allreduce_s"] = time_allreduce(dist, buf, iters=5 if cuda else 3, warmup=2 if cuda else 1)
    del buf

    if n > 1:
        state.set("ddp-nosync", "DDP: timed steps without gradient all-reduce (no_sync)")
        out["nosync"] = _train_steps(torch, ddp, loss_fn, opt, make_scaler(), autocast, ids, labels, marks, 1,
                                     cfg["steps"], no_sync=ddp.no_sync)
    if cuda:
        out["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    dist.barrier()
    if n > 1 and cfg["baseline"] and rank == 0:
        # T1: the same model and settings on this one device, no DDP, no other rank involved (C2)
        batch1 = per_rank * n if strong else per_rank
        state.set("baseline", f"single-device baseline: {cfg['steps']} timed steps, batch {batch1}")
        del ddp, opt, model
        if cuda:
            torch.cuda.empty_cache()
        torch.manual_seed(1234)
        model1, loss_fn1 = bert.build(cfg["model"], cfg["config"], device)
        opt1, _ = _optimizer(torch, model1.parameters(), cfg["lr"], cuda)
        ids1, labels1 = bert.synthetic_batch(batch1, cfg["seq"], vocab, device, seed=100)
        out["baseline"] = _train_steps(torch, model1, loss_fn1, opt1, make_scaler(), autocast, ids1, labels1, marks,
                                       cfg["warmup"], cfg["steps"])
        out["baseline"]["batch"] = batch1
    return out
