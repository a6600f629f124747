"""Throughput and peak memory of `gpudoctor check` on large logs (issue 14).

Generates a synthetic multi-rank NCCL_DEBUG=INFO training log of each size (INFO channel/ring/tree lines of 512
ranks on 64 hosts, training-step lines, and one instantiated catalogue error line per ~200 kB so the matcher has
real work), then runs ``python -m gpudoctor check FILE --json`` in a fresh process per size and reports wall time,
CPU seconds (user + sys, the comparable figure on a shared machine), MB/s and the child's peak RSS (os.wait4). The
child runs as an installed package does, with compiled bytecode (cached under a temporary PYTHONPYCACHEPREFIX after
one untimed warm-up run), even where PYTHONDONTWRITEBYTECODE is set. ``--no-re2`` forces the stdlib engine in the
child (google-re2 is the optional ``[fast]`` extra; CI installs only the test extras). Usage::

    PYTHONPATH=. python benchmarks/bench_check.py --sizes 10,100,1000 [--gz] [--keep DIR] [--no-re2] [--jobs N]

The engine in use (re2-set or literal-prefilter) is printed; see docs/benchmarks.md for the figures.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEMPLATES = (
    "{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d}/0 : {r}[{g}] -> {r2}[{g2}] via P2P/CUMEM/read",
    "{h}:{p}:{t} [{g}] NCCL INFO Channel {c:02d}/1 : {r}[{g}] -> {r2}[{g2}] [send] via NET/IB/{g}/GDRDMA",
    "{h}:{p}:{t} [{g}] NCCL INFO comm 0x55d{p} rank {r} nranks 512 cudaDev {g} nvmlDev {g} busId {g}c000 "
    "- Init COMPLETE",
    "{h}:{p}:{t} [{g}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    "{h}:{p}:{t} [{g}] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
    "{h}:{p}:{t} [{g}] NCCL INFO Trees [0] {r2}/-1/-1->{r}->{r3} [1] {r2}/-1/-1->{r}->{r3}",
    "[rank{r}]:[I ProcessGroupNCCL.cpp:1000] [PG 0 Rank {r}] ProcessGroupNCCL initialization options: "
    "TIMEOUT(ms): 600000",
    "step {c} loss 2.{p} lr 3e-4 grad_norm 1.0{g} throughput 1234 tokens/s",
)


def generate(path: Path, mb: int, gz: bool, seed: int = 1) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from gpudoctor.parsers.signatures import catalogue

    errors = [e["example"] for e in catalogue() if "example" in e]
    rnd = random.Random(seed)
    target = mb * 1024 * 1024
    opener = gzip.open if gz else open
    size = 0
    with opener(path, "wt") as fh:  # type: ignore[operator]
        next_err = 200_000
        while size < target:
            lines = []
            for _ in range(2000):
                lines.append(rnd.choice(TEMPLATES).format(
                    h=f"node{rnd.randrange(64):03d}", p=rnd.randrange(1000, 99999), t=rnd.randrange(1000, 99999),
                    g=rnd.randrange(8), c=rnd.randrange(32), r=rnd.randrange(512), r2=rnd.randrange(512),
                    g2=rnd.randrange(8), r3=rnd.randrange(512)))
            block = "\n".join(lines) + "\n"
            if size + len(block) >= next_err:
                block += rnd.choice(errors) + "\n"
                next_err += 200_000
            fh.write(block)
            size += len(block)


CHILD_NO_RE2 = ("import runpy, sys; import gpudoctor.parsers.signatures as S; S._re2 = None; "
                "sys.argv = ['gpudoctor'] + sys.argv[1:]; runpy.run_module('gpudoctor', run_name='__main__')")
PYC = tempfile.mkdtemp(prefix="bench_check_pyc_")


class TreeMemory:
    """Peak memory of a process and all its descendants (the check's worker processes), sampled every 200 ms:
    the sum of their RSS (counts pages forked workers share with the reader more than once: an upper bound) and
    the sum of their PSS (shared pages split between the processes sharing them: what the tree really holds)."""

    def __init__(self, pid: int):
        import threading

        import psutil

        self.proc = psutil.Process(pid)
        self.rss = self.pss = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        import psutil

        while not self.stop.is_set():
            rss = pss = 0
            try:
                procs = [self.proc] + self.proc.children(recursive=True)
            except psutil.Error:
                return
            for p in procs:
                try:
                    full = p.memory_full_info()
                    rss += full.rss
                    pss += getattr(full, "pss", full.rss)
                except psutil.Error:
                    pass
            self.rss, self.pss = max(self.rss, rss), max(self.pss, pss)
            self.stop.wait(0.2)  # reading smaps costs CPU: sampled 5 times a second

    def done(self) -> tuple[float, float]:
        self.stop.set()
        self.thread.join()
        return self.rss / 2**20, self.pss / 2**20


def run(path: Path, no_re2: bool = False, jobs: int | None = None) -> dict[str, float]:
    """One `gpudoctor check FILE --json` in a fresh process: wall and CPU seconds of it and its workers (os.wait4
    counts the reaped children), the largest single-process RSS (wait4), and the peak RSS / PSS summed over the
    process tree (TreeMemory)."""
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
               PYTHONPYCACHEPREFIX=PYC)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    head = [sys.executable, "-c", CHILD_NO_RE2] if no_re2 else [sys.executable, "-m", "gpudoctor"]
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(head + ["check", str(path), "--json"] + ([] if jobs is None else ["-j", str(jobs)]),
                                env=env, stdout=out, stderr=subprocess.DEVNULL)
        mem = TreeMemory(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        tree_rss, tree_pss = mem.done()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        raw = out.read()
    doc = json.loads(raw) if raw.strip().startswith(b"{") else {}
    fired = sorted({f["rule_id"] for f in doc.get("findings", []) if f.get("rule_id", "").startswith("SIG")})
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024,
            "tree_rss_mb": tree_rss, "tree_pss_mb": tree_pss, "signatures_fired": len(fired), "rc": proc.returncode}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,100", help="MB of (uncompressed) log per run, comma-separated")
    ap.add_argument("--gz", action="store_true", help="write the logs gzip-compressed")
    ap.add_argument("--keep", default=None, help="folder for the generated logs (default: a temporary one)")
    ap.add_argument("--no-re2", action="store_true", help="force the stdlib engine in the child")
    ap.add_argument("--jobs", type=int, default=None, help="check's -j (default: check's own, one per CPU)")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from gpudoctor.parsers.signatures import catalogue, engine_name

    engine = "literal-prefilter (forced)" if args.no_re2 else engine_name()
    print(f"engine: {engine}  signatures: {len(catalogue())}  cpus: {os.cpu_count()}  "
          f"load: {os.getloadavg()[0]:.2f}  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    folder = Path(args.keep or tempfile.mkdtemp(prefix="bench_check_"))
    folder.mkdir(parents=True, exist_ok=True)
    warm = folder / "warm-up.log"
    warm.write_text("RuntimeError: CUDA error: out of memory\n")
    run(warm, args.no_re2)  # compiles the bytecode
    for mb in (int(x) for x in args.sizes.split(",")):
        path = folder / f"train-{mb}MB.log{'.gz' if args.gz else ''}"
        if not path.exists():
            generate(path, mb, args.gz)
        r = run(path, args.no_re2, args.jobs)
        print(f"{mb:>6} MB{' (gz)' if args.gz else ''}: wall {r['wall_s']:7.2f} s ({mb / r['wall_s']:6.1f} MB/s)  "
              f"CPU {r['cpu_s']:7.2f} s ({mb / r['cpu_s']:6.1f} MB/CPU-s)  peak RSS: one process "
              f"{r['peak_rss_mb']:4.0f} MB, all processes {r['tree_rss_mb']:4.0f} MB (PSS {r['tree_pss_mb']:4.0f} MB)  "
              f"signatures fired {r['signatures_fired']}  rc {r['rc']}  load {os.getloadavg()[0]:.2f}", flush=True)
        if not args.keep:
            path.unlink()


if __name__ == "__main__":
    main()
