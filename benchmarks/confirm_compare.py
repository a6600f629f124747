"""gpudoctor's confirmation runs vs plain hand-written loops, side by side in one call (GPU host).

1. All-reduce: gpudoctor's sweep (``collectives.time_allreduce``: groups of back-to-back calls, each
   group timed with one CUDA event pair, median over groups) vs a plain
   ``torch.distributed.all_reduce`` loop timed with one event pair around all ``iters`` calls (the
   nccl-tests way), same sizes, dtypes, warm-up and world size: once from the separate runs, then
   ``--paired`` rounds in one process (alternating). On GPU also a harness check: the same two timings
   of a device-bound kernel (``t.mul_(1)``, 64 MiB-1 GiB) standing in for the collective, which shows
   how they agree when the device, not the host, sets the pace (at world size 1 NCCL moves nothing).
2. DDP step, two ways:
   a. separate processes (``--repeat``): gpudoctor's whole confirmation run (its launcher and
      worker) vs a plain DDP script with the same model, batch, sequence length, bf16 autocast, fused
      AdamW and gradient_as_bucket_view, timed with one event pair around the timed steps; alternated.
   b. paired windows in one process (``--paired``): on one DDP model, gpudoctor's own step loop
      (``worker._train_steps``, its ``window_step_s``) and the plain loop alternate (ABAB, the side
      that goes first alternates too), for each ``--settings`` batch x seq. Host and clock drift
      hit both sides of a round alike, so the per-round ratio gpudoctor / plain is compared: its
      median and a seeded bootstrap 95 % interval. "Within 5 %" is claimed only when that whole
      interval lies inside [0.95, 1.05].

Prints the figures and ratios, and writes ``compare.json`` into ``$OUT`` when set.
Usage (repo root, GPU host):

    PYTHONPATH=. python3 benchmarks/confirm_compare.py [--nproc N] [--batch 128] [--seq 128]
        [--repeat 2] [--paired 10] [--settings 128x128,32x128,32x512] [--steps 40]
    PYTHONPATH=. python3 benchmarks/confirm_compare.py --cpu   # gloo, world size 2, tiny model
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import time

SIZES = [1 << 20, 64 << 20, 256 << 20, 438_057_192, 1 << 30]
CPU_SIZES = [64 << 10, 1 << 20]  # --cpu: a dry run of this script with gloo and the tiny model
DTYPES = ["bfloat16", "float32"]
WARMUP, ITERS = 5, 20
STEPS_WARMUP, STEPS = 10, 60  # the separate-process comparison: many steps, compare window means


def bootstrap_median_ci(values: list, reps: int = 2000, seed: int = 0) -> tuple:
    """(median, low, high): the median of ``values`` and a percentile-bootstrap 95 % interval for it."""
    import random
    import statistics

    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(reps))
    return statistics.median(values), meds[int(0.025 * reps)], meds[int(0.975 * reps) - 1]


def alternate(rounds: int, gpudoctor, plain) -> tuple:
    """(gpudoctor values, plain values): each callable run ``rounds`` times, the one that goes first alternating
    (AB BA AB ...) so that drift within the process hits both sides alike."""
    gd, pl = [], []
    for r in range(rounds):
        order = ((gpudoctor, gd), (plain, pl)) if r % 2 == 0 else ((plain, pl), (gpudoctor, gd))
        for fn, out in order:
            out.append(fn())
    return gd, pl


def parse_settings(text: str) -> list:
    """'32x128,128x128' -> [(32, 128), (128, 128)] (per-rank batch x sequence length). Raises ValueError."""
    out = []
    for part in text.split(","):
        b, _, q = part.strip().lower().partition("x")
        b, q = int(b), int(q)
        if b < 1 or not 8 <= q <= 512:
            raise ValueError(part)
        out.append((b, q))
    return out


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be at least 1")
    return v


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Clock:
    """One timer pair: CUDA events on GPU, perf_counter on CPU (the --cpu dry run)."""

    def __init__(self, torch, cuda: bool):
        self.torch, self.cuda = torch, cuda
        self.a = self.b = None

    def start(self):
        if self.cuda:
            self.a = self.torch.cuda.Event(enable_timing=True)
            self.a.record()
        else:
            self.a = time.perf_counter()

    def stop(self) -> float:
        if self.cuda:
            self.b = self.torch.cuda.Event(enable_timing=True)
            self.b.record()
            self.torch.cuda.synchronize()
            return self.a.elapsed_time(self.b) / 1e3
        return time.perf_counter() - self.a


def plain_rank(rank: int, n: int, port: int, batch: int, seq: int, out: str, cpu: bool, paired: int = 0,
               settings: tuple = (), steps: int = 40) -> None:
    """A hand-written loop: what an engineer would type to measure the same two things."""
    import contextlib
    import datetime

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gpudoctor.confirm import bert
    from gpudoctor.confirm.plan import MODELS

    device = "cpu" if cpu else "cuda"
    if not cpu:
        torch.cuda.set_device(rank)
    else:  # as gpudoctor's worker does: share the cores between the ranks
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // n))
    dist.init_process_group("gloo" if cpu else "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=300))
    clock = _Clock(torch, not cpu)
    res = {"allreduce": [], "ddp": None, "allreduce_paired": []}

    def plain_allreduce(t, iters):
        for _ in range(WARMUP):
            dist.all_reduce(t)
        if not cpu:
            torch.cuda.synchronize()
        clock.start()
        for _ in range(iters):
            dist.all_reduce(t)
        return clock.stop() / iters

    for dname in DTYPES:
        dtype = getattr(torch, dname)
        for size in (CPU_SIZES if cpu else SIZES):
            t = torch.zeros(size // torch.tensor([], dtype=dtype).element_size(), dtype=dtype, device=device)
            iters = ITERS if size < 256 << 20 else ITERS // 2
            res["allreduce"].append({"dtype": dname, "size_bytes": t.numel() * t.element_size(),
                                     "time_s": plain_allreduce(t, iters)})
            if paired:
                # same process, same tensor: gpudoctor's timing (collectives.time_allreduce, median over
                # groups) and the plain loop alternate, so drift hits both sides of a round alike
                import statistics

                from gpudoctor.confirm.collectives import time_allreduce

                # the callables run inside this iteration; default args bind this round's tensor and count
                gd, pl = alternate(
                    paired,
                    lambda t=t, iters=iters: statistics.median(time_allreduce(dist, t, iters=iters, warmup=WARMUP)),
                    lambda t=t, iters=iters: plain_allreduce(t, iters),
                )
                res["allreduce_paired"].append({"dtype": dname, "size_bytes": t.numel() * t.element_size(),
                                                "gpudoctor_s": gd, "plain_s": pl})
            del t
    if paired and not cpu:
        # Harness check without NCCL: a device-bound in-place kernel (t.mul_(1): reads and writes S bytes of HBM)
        # stands in for the collective, timed by collectives.time_allreduce and by the plain one-pair loop.
        # At world size 1 the real all-reduce is a no-op, so only this shows how the two timings agree when
        # the device, not the host, sets the pace.
        import statistics

        from gpudoctor.confirm.collectives import time_allreduce

        class _Kernel:
            @staticmethod
            def all_reduce(x, group=None):
                x.mul_(1)

            @staticmethod
            def barrier(group=None):
                torch.cuda.synchronize()

        res["kernel_paired"] = []
        for size in (64 << 20, 256 << 20, 1 << 30):
            t = torch.ones(size // 2, dtype=torch.bfloat16, device=device)

            def plain_kernel(t=t):
                for _ in range(WARMUP):
                    t.mul_(1)
                torch.cuda.synchronize()
                clock.start()
                for _ in range(ITERS):
                    t.mul_(1)
                return clock.stop() / ITERS

            def gd_kernel(t=t):
                return statistics.median(time_allreduce(_Kernel, t, iters=ITERS, warmup=WARMUP))

            gd, pl = alternate(paired, gd_kernel, plain_kernel)
            res["kernel_paired"].append({"dtype": "bfloat16", "size_bytes": size, "gpudoctor_s": gd, "plain_s": pl})
            del t
    name = "tiny" if cpu else "bert-base"
    torch.manual_seed(1234 + rank)
    model, loss_fn = bert.build("tiny" if cpu else "builtin", MODELS[name], device)
    ddp = DDP(model, device_ids=None if cpu else [rank], gradient_as_bucket_view=True)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4, fused=True)
    ids, labels = bert.synthetic_batch(batch, seq, MODELS[name]["vocab"], device, seed=100 + rank)
    autocast = contextlib.nullcontext if cpu else (lambda: torch.autocast("cuda", dtype=torch.bfloat16))
    for i in range(STEPS_WARMUP + STEPS):
        if i == STEPS_WARMUP:
            clock.start()
        with autocast():
            loss = loss_fn(ddp, ids, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    res["ddp"] = {"step_s": clock.stop() / STEPS, "loss": float(loss.item())}
    if paired:
        # Same process, same DDP model, same GPU state: per setting, alternate the plain timed window with
        # gpudoctor's own step loop (gpudoctor.confirm.ddp_task._train_steps, its window_step_s).
        from gpudoctor.confirm.ddp_task import _train_steps
        from gpudoctor.confirm.tasks import Marks

        marks = Marks(torch, not cpu)

        def plain_window(ids, labels):
            clock.start()
            for _ in range(steps):
                with autocast():
                    loss = loss_fn(ddp, ids, labels)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            return clock.stop() / steps

        res["paired"] = []
        for b, q in settings:
            ids, labels = bert.synthetic_batch(b, q, MODELS[name]["vocab"], device, seed=100 + rank)
            _train_steps(torch, ddp, loss_fn, opt, None, autocast, ids, labels, marks, 0, STEPS_WARMUP)  # warm-up
            if not cpu:
                torch.cuda.reset_peak_memory_stats()
            # the callables run inside this iteration; default args bind this round's batch
            gd, pl = alternate(
                paired,
                lambda ids=ids, labels=labels: _train_steps(torch, ddp, loss_fn, opt, None, autocast, ids, labels,
                                                            marks, 0, steps)["window_step_s"],
                lambda ids=ids, labels=labels: plain_window(ids, labels),
            )
            res["paired"].append({"batch": b, "seq": q, "steps_per_window": steps, "plain_step_s": pl,
                                  "gpudoctor_step_s": gd,
                                  "peak_allocated_bytes": None if cpu else torch.cuda.max_memory_allocated()})
            del ids, labels
    if rank == 0:
        with open(out, "w") as fh:
            json.dump(res, fh)
    dist.barrier()  # no rank tears the group down while a peer still waits on its last collective
    dist.destroy_process_group()


def main() -> int:
    import statistics

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--nproc", type=int, default=0, help="ranks (default: every GPU torch sees)")
    ap.add_argument("--batch", type=int, default=None,
                    help="per-rank batch (default 128, what smoke's auto batch picks on an H200; --cpu: 4)")
    ap.add_argument("--seq", type=int, default=None, help="sequence length (default 128; --cpu: 32)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--repeat", type=_positive, default=2, help="alternate gpudoctor / plain runs this many times")
    ap.add_argument("--paired", type=_positive, default=10,
                    help="rounds of paired windows (gpudoctor loop, plain loop) inside one process, per DDP "
                         "setting and per all-reduce size")
    ap.add_argument("--settings", default="",
                    help="per-rank batch x seq list for the paired windows (default: --batch x --seq, 32x128, 32x512;"
                         " --cpu: 4x32)")
    ap.add_argument("--steps", type=_positive, default=40, help="steps per paired window")
    ap.add_argument("--cpu", action="store_true", help="dry run on CPU (gloo, tiny model): checks the script")
    args = ap.parse_args()

    import torch
    import torch.multiprocessing as mp

    from gpudoctor.confirm.plan import fmt_size
    from gpudoctor.confirm.runner import confirm

    n = args.nproc or (2 if args.cpu else torch.cuda.device_count())
    args.batch = args.batch or (4 if args.cpu else 128)
    args.seq = args.seq or (32 if args.cpu else 128)
    if args.settings:
        try:
            settings = parse_settings(args.settings)
        except ValueError:
            ap.error(f"--settings {args.settings!r}: expected BATCHxSEQ[,BATCHxSEQ...], e.g. 128x128,32x512")
    elif args.cpu:
        settings = [(4, 32)]
    else:
        settings = [(args.batch, args.seq), (32, 128), (32, 512)]
    # GPU step times drift between runs (clocks, other tenants): alternate the two sides --repeat times
    # and compare the median of each side's per-run means.
    gd_runs, plain_runs, t_gd, t_plain = [], [], 0.0, 0.0
    for _ in range(args.repeat):
        t0 = time.monotonic()
        facts = confirm(
            python=sys.executable,
            cpu=args.cpu,
            nproc=n,
            tasks=["allreduce", "ddp"],
            timeout_s=args.timeout,
            sizes=CPU_SIZES if args.cpu else SIZES,
            dtypes=DTYPES,
            model="tiny" if args.cpu else "builtin",
            ar_warmup=WARMUP,
            ar_iters=ITERS,
            batch=args.batch,
            seq=args.seq,
            warmup_steps=STEPS_WARMUP,
            steps=STEPS,
            baseline=False,
        )
        t_gd += time.monotonic() - t0
        if facts.status != "ok":
            print(f"gpudoctor run {facts.status}: {facts.reason}")
            return 1
        gd_runs.append(facts)
        out = os.path.join(tempfile.mkdtemp(prefix="gpudoctor-plain-"), "plain.json")
        t0 = time.monotonic()
        mp.start_processes(plain_rank, args=(n, _port(), args.batch, args.seq, out, args.cpu,
                                                 args.paired if len(plain_runs) == args.repeat - 1 else 0,
                                                 tuple(settings), args.steps),
                           nprocs=n, join=True,
                           start_method="spawn")
        t_plain += time.monotonic() - t0
        with open(out) as fh:
            plain_runs.append(json.load(fh))
        shutil.rmtree(os.path.dirname(out), ignore_errors=True)
    facts, plain = gd_runs[-1], plain_runs[-1]
    gd_step_means = [f.ddp.step.window_step_s or f.ddp.step.step_s.mean for f in gd_runs]
    plain_step_means = [p["ddp"]["step_s"] for p in plain_runs]
    plain = dict(plain, ddp=dict(plain["ddp"], step_s=statistics.median(plain_step_means)))

    rows = []
    print(f"world size {n}, torch {facts.torch_version}, NCCL {facts.nccl_version}; gpudoctor run {t_gd:.1f} s, "
          f"plain run {t_plain:.1f} s")
    print(f"{'all-reduce':<22}{'gpudoctor ms':>14}{'plain ms':>12}{'ratio':>8}{'busbw GB/s':>12}")
    if n < 2:
        print("(world size 1: all-reduce is a local no-op; the figures below only compare call latency)")
    for a in facts.allreduce:
        p = next(x for x in plain["allreduce"] if x["dtype"] == a.dtype and x["size_bytes"] == a.size_bytes)
        ratio = a.time_s.median / p["time_s"] if p["time_s"] > 0 else float("nan")
        rows.append({"dtype": a.dtype, "size_bytes": a.size_bytes, "gpudoctor_s": a.time_s.median,
                     "gpudoctor_p25_s": a.time_s.p25, "gpudoctor_p75_s": a.time_s.p75, "plain_s": p["time_s"],
                     "ratio": ratio, "busbw_gbs": a.busbw_gbs, "correct": a.correct})
        print(f"{a.dtype + ' ' + fmt_size(a.size_bytes):<22}{a.time_s.median * 1e3:>14.3f}"
              f"{p['time_s'] * 1e3:>12.3f}{ratio:>8.3f}{(a.busbw_gbs or 0):>12.1f}")
    ar_paired = []
    for p in plain_runs[-1].get("allreduce_paired") or []:
        ratios = [g / q for g, q in zip(p["gpudoctor_s"], p["plain_s"], strict=False) if q > 0]
        if not ratios:
            continue
        med, lo, hi = bootstrap_median_ci(ratios)
        ar_paired.append(dict(p, ratio_median=med, ratio_ci95=[lo, hi]))
        print(
            f"  paired ({len(ratios)} rounds) {p['dtype']} {fmt_size(p['size_bytes'])}: gpudoctor "
            f"{statistics.median(p['gpudoctor_s']) * 1e3:.3f} ms, plain {statistics.median(p['plain_s']) * 1e3:.3f} ms,"
            f" per-round ratio median {med:.3f} [{lo:.3f}, {hi:.3f}]"
        )
    for p in plain_runs[-1].get("kernel_paired") or []:
        ratios = [g / q for g, q in zip(p["gpudoctor_s"], p["plain_s"], strict=False) if q > 0]
        med, lo, hi = bootstrap_median_ci(ratios)
        p.update(ratio_median=med, ratio_ci95=[lo, hi])
        print(
            f"  harness check, device-bound kernel t.mul_(1) ({len(ratios)} rounds) bf16 {fmt_size(p['size_bytes'])}: "
            f"gpudoctor timing {statistics.median(p['gpudoctor_s']) * 1e3:.3f} ms, plain "
            f"{statistics.median(p['plain_s']) * 1e3:.3f} ms, per-round ratio median {med:.3f} [{lo:.3f}, {hi:.3f}]"
        )
    d = facts.ddp
    # like for like: the plain loop times all steps end to end (a mean), so compare gpudoctor's mean step
    gd_mean = statistics.median(gd_step_means)
    ddp_ratio = gd_mean / plain["ddp"]["step_s"]
    print(
        f"DDP {d.model} step (batch {args.batch}/rank x seq {args.seq}, {d.precision}, {d.optimizer}): gpudoctor "
        f"window mean {gd_mean * 1e3:.2f} ms, per-step median {d.step.step_s.median * 1e3:.2f} ms "
        f"(p25-p75 {d.step.step_s.p25 * 1e3:.2f}-{d.step.step_s.p75 * 1e3:.2f}; "
        f"fwd {d.step.forward_s.median * 1e3:.2f} / bwd {d.step.backward_s.median * 1e3:.2f} / "
        f"opt {d.step.optimizer_s.median * 1e3:.2f}), plain {plain['ddp']['step_s'] * 1e3:.2f} ms, "
        f"ratio {ddp_ratio:.3f} ({'within' if abs(ddp_ratio - 1) <= 0.05 else 'OUTSIDE'} 5 %); "
        f"per-run means gpudoctor {[round(x * 1e3, 2) for x in gd_step_means]} ms, "
        f"plain {[round(x * 1e3, 2) for x in plain_step_means]} ms (medians compared)"
    )
    paired = []
    for p in plain_runs[-1].get("paired") or []:
        ratios = [g / q for g, q in zip(p["gpudoctor_step_s"], p["plain_step_s"], strict=False)]
        med, lo, hi = bootstrap_median_ci(ratios)
        # noise floor: how much two consecutive windows of the same plain loop differ (|1 - ratio|)
        pl = p["plain_step_s"]
        floor = statistics.median([abs(pl[i + 1] / pl[i] - 1) for i in range(len(pl) - 1)]) if len(pl) > 1 else None
        verdict = "within 5 %" if lo >= 0.95 and hi <= 1.05 else "NOT established within 5 %"
        peak_txt = f"{p['peak_allocated_bytes'] / 1e9:.1f} GB" if p["peak_allocated_bytes"] else "n/a"
        paired.append(dict(p, ratios=ratios, ratio_median=med, ratio_ci95=[lo, hi], plain_window_noise=floor,
                           verdict=verdict))
        print(
            f"paired windows, batch {p['batch']}/rank x seq {p['seq']} ({len(ratios)} rounds x {p['steps_per_window']}"
            f" steps per side): gpudoctor {statistics.median(p['gpudoctor_step_s']) * 1e3:.2f} ms, plain "
            f"{statistics.median(pl) * 1e3:.2f} ms (medians); per-round ratio median {med:.3f}, bootstrap 95 % "
            f"[{lo:.3f}, {hi:.3f}] -> {verdict}; consecutive plain windows differ by {(floor or 0) * 100:.1f} % "
            f"(median); peak {peak_txt}; "
            f"ratios {[round(r, 3) for r in ratios]}"
        )
    peak = d.memory[0].peak_allocated_bytes if d.memory else None
    print(f"peak memory rank 0: {f'{peak / 1e9:.2f} GB' if peak else 'n/a (CPU)'}; params {d.params:,}")
    if facts.copies:
        print("pinned copies: " + ", ".join(f"GPU {c.device_index} H2D {c.h2d_gbs.median:.1f} / D2H "
                                            f"{c.d2h_gbs.median:.1f} GB/s" for c in facts.copies))
    doc = {
        "world_size": n,
        "torch": facts.torch_version,
        "nccl": facts.nccl_version,
        "allreduce": rows,
        "ddp": {
            "gpudoctor_step_s": gd_mean,
            "gpudoctor_median_s": d.step.step_s.median,
            "gpudoctor_p25_s": d.step.step_s.p25,
            "gpudoctor_p75_s": d.step.step_s.p75,
            "plain_step_s": plain["ddp"]["step_s"],
            "ratio": ddp_ratio,
            "batch": args.batch,
            "seq": args.seq,
            "precision": d.precision,
            "optimizer": d.optimizer,
            "params": d.params,
            "gpudoctor_run_means_s": gd_step_means,
            "plain_run_means_s": plain_step_means,
            "repeat": args.repeat,
        },
        "paired": paired,
        "allreduce_paired": ar_paired,
        "kernel_paired": plain_runs[-1].get("kernel_paired"),
    }
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "compare.json"), "w") as fh:
            json.dump(doc, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
