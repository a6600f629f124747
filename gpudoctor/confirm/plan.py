"""What a confirmation run does: the plan both sides agree on (stdlib only).

gpudoctor's own process builds a plan (:func:`make_spec`) and writes it as JSON; the
worker (:mod:`gpudoctor.confirm.worker`), run by the *target* interpreter, reads it.
This module must stay importable with the standard library alone: the target
interpreter may have torch but not pydantic, rich or typer.

Sizes are bytes. ``MiB`` = 2**20 bytes (nccl-tests sizes are powers of two).
"""
from __future__ import annotations

import re
from typing import Any

from gpudoctor.facts.units import GiB, MiB, fmt_size  # noqa: F401 (fmt_size re-exported for the worker)

#: the largest message size accepted (--sizes)
MAX_SIZE = 256 * GiB

#: BERT-base (BertForMaskedLM, 109,514,298 parameters, counted on the H200 host with
#: transformers; tests/fixtures/confirm/bert-base-step.txt) gradients in fp32 = 438,057,192 bytes.
BERT_BASE_PARAMS = 109_514_298
BERT_BASE_GRAD_BYTES = BERT_BASE_PARAMS * 4

#: GPU all-reduce sweep: 1 MiB .. 1 GiB in x4 steps, plus the BERT-base gradient size (checklist C1, C7).
GPU_SIZES = sorted([MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB, GiB, BERT_BASE_GRAD_BYTES])
#: CPU (gloo) sweep: small enough for 2 cores in a few seconds.
CPU_SIZES = [64 * 1024, MiB, 4 * MiB]
DTYPES = ["bfloat16", "float32"]

#: Model configurations of the DDP smoke step. ``bert-base`` is BERT-base (Devlin et al. 2018,
#: https://arxiv.org/abs/1810.04805, Table/§3: L=12, H=768, A=12, FFN 4H, WordPiece vocabulary 30522);
#: ``tiny`` is the same architecture shrunk for the CPU path.
MODELS: dict[str, dict[str, int]] = {
    "bert-base": {"vocab": 30522, "hidden": 768, "layers": 12, "heads": 12, "ffn": 3072, "max_pos": 512},
    "tiny": {"vocab": 1024, "hidden": 64, "layers": 2, "heads": 2, "ffn": 256, "max_pos": 128},
}

TASKS = ("copy", "allreduce", "ddp")

#: GPU default per-rank batch ("auto"): the largest of these whose estimated peak memory fits
#: AUTO_MEMORY_FRACTION of the free memory of the smallest GPU. 32 x 128 tokens leaves an H200 waiting on
#: the host (kernel launches): 4x the tokens took only 1.3x the time, and windows of the same loop varied by
#: 7.5 %; at 128 x 128 they varied by 0.1 % (docs/examples/h200-1gpu-2026-11-29/confirm-compare.txt).
AUTO_BATCHES = (128, 64, 32, 16, 8)
AUTO_MEMORY_FRACTION = 0.4
#: ... and at most this many tokens per rank: 128 x 128 already keeps an H200 busy (56 ms a step); more only
#: lengthens the run.
AUTO_MAX_TOKENS = 128 * 128
#: BERT-base DDP step peak memory model, bytes = fixed + per_token * batch * seq: fitted to the H200
#: measurements (bf16 autocast, fused AdamW): 5.2 GB at 32 x 128, 14.6 GB at 128 x 128 and at 32 x 512.
BERT_BASE_FIXED_BYTES = 2.1e9
BERT_BASE_BYTES_PER_TOKEN = 0.8e6

#: Test-only fault injection understood by the worker: ``RANK:KIND:AT[:unless=VAR]`` with KIND in
#: hang/exit/raise and AT in init/copy/allreduce/ddp. Never set it outside tests.
FAULT_ENV = "GPUDOCTOR_CONFIRM_FAULT"
#: Marks every process of one run (launcher and ranks) so leftovers can be found and killed.
RUN_ENV = "GPUDOCTOR_CONFIRM_RUN"

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgKMG]?)(i?[bB]?)\s*$")


def parse_size(text: str) -> int:
    """'1M' / '1MiB' / '64k' / '1G' / '4096' -> bytes (binary multiples). Raises ValueError."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (examples: 4096, 64K, 1M, 1G)")
    mult = {"": 1, "k": 1024, "m": MiB, "g": GiB}[m.group(2).lower()]
    val = int(float(m.group(1)) * mult)
    if val <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    if val > MAX_SIZE:
        raise ValueError(f"size {text!r} is above {fmt_size(MAX_SIZE)}, more than any GPU holds")
    return val


def normalize_dtype(name: str) -> str:
    """'bf16' / 'bfloat16' / 'fp32' / 'float32' / 'fp16' -> torch dtype name. Raises ValueError."""
    key = name.strip().lower()
    table = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp32": "float32", "float32": "float32",
             "float": "float32", "fp16": "float16", "float16": "float16", "half": "float16"}
    if key not in table:
        raise ValueError(f"unknown dtype {name!r} (bf16, fp16, fp32)")
    return table[key]


def auto_batch(free_bytes: float, seq: int) -> tuple[int, float]:
    """(per-rank batch, its estimated peak bytes) for the BERT-base step at sequence length ``seq``
    on a GPU with ``free_bytes`` free: the largest of AUTO_BATCHES with batch * seq <= AUTO_MAX_TOKENS
    whose estimate (BERT_BASE_FIXED_BYTES + BERT_BASE_BYTES_PER_TOKEN * batch * seq) is at most
    AUTO_MEMORY_FRACTION * free_bytes; the smallest of them when none fits."""
    for b in AUTO_BATCHES:
        if b * seq > AUTO_MAX_TOKENS and b != AUTO_BATCHES[-1]:
            continue
        est = BERT_BASE_FIXED_BYTES + BERT_BASE_BYTES_PER_TOKEN * b * seq
        if est <= AUTO_MEMORY_FRACTION * free_bytes:
            return b, est
    b = AUTO_BATCHES[-1]
    return b, BERT_BASE_FIXED_BYTES + BERT_BASE_BYTES_PER_TOKEN * b * seq


def make_spec(*, cpu: bool, nproc: int, tasks: list[str], timeout_s: float,
              sizes: list[int] | None = None, dtypes: list[str] | None = None,
              ar_warmup: int | None = None, ar_iters: int | None = None,
              model: str | None = None, batch: int | None = None, seq: int | None = None,
              warmup_steps: int | None = None, steps: int | None = None,
              scaling: str = "weak", baseline: bool = True) -> dict[str, Any]:
    """The JSON plan of one run. ``nproc`` 0 = one process per GPU the target torch sees. ``model``: 'builtin'
    (BERT-base built with torch alone), 'hf' (transformers BertForMaskedLM(BertConfig())) or 'tiny' (the CPU default).

    Raises ValueError on an unknown task, model or scaling mode, nproc < 0, a ``seq`` beyond the model's
    positions, or (strong scaling, nproc known) a global batch that is not a multiple of nproc.
    """
    if nproc < 0:
        raise ValueError("nproc must be at least 1 (0 = one process per GPU)")
    for t in tasks:
        if t not in TASKS:
            raise ValueError(f"unknown task {t!r}")
    if scaling not in ("weak", "strong"):
        raise ValueError("scaling must be 'weak' or 'strong'")
    model = model or ("tiny" if cpu else "builtin")
    if model not in ("builtin", "hf", "tiny"):
        raise ValueError(f"unknown model {model!r} (builtin, hf, tiny)")
    small = model == "tiny"
    config = MODELS["tiny" if small else "bert-base"]
    if seq is not None and seq > config["max_pos"]:
        raise ValueError(f"--seq {seq}: the {model} model has {config['max_pos']} positions (at most --seq "
                         f"{config['max_pos']})")
    if scaling == "strong" and batch is not None and nproc > 0 and batch % nproc:
        raise ValueError(f"--scaling strong splits the global batch over the ranks: --batch {batch} is not a "
                         f"multiple of {nproc} ranks")
    sizes = list(dict.fromkeys(sizes)) if sizes else None  # a repeated size or dtype would run twice
    dtypes = list(dict.fromkeys(normalize_dtype(d) for d in dtypes)) if dtypes else None
    return {
        "version": 1,
        "device": "cpu" if cpu else "cuda",
        "backend": "gloo" if cpu else "nccl",
        "nproc": nproc,
        "tasks": [t for t in TASKS if t in tasks and not (cpu and t == "copy")],
        "timeout_s": float(timeout_s),
        "start_method": "spawn",
        "allreduce": {
            "sizes": list(sizes or (CPU_SIZES if cpu else GPU_SIZES)),
            "dtypes": dtypes or list(DTYPES),
            "warmup": ar_warmup if ar_warmup is not None else (2 if cpu else 5),
            "iters": ar_iters if ar_iters is not None else (5 if cpu else 20),
        },
        "copy": {"size_bytes": 256 * MiB, "warmup": 2, "iters": 10},
        "ddp": {
            "model": model,
            "config": config,
            "batch": batch or (4 if small else "auto"),
            "batch_given": batch is not None,
            "seq": seq or (32 if small else 128),
            "warmup": warmup_steps if warmup_steps is not None else (2 if cpu else 5),
            "steps": steps or (6 if cpu else 20),
            "scaling": scaling,
            "baseline": bool(baseline),
            "lr": 1e-4,
        },
    }


def retry_spec(spec: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """The shorter plan of a transport re-run: same tasks minus the host copies (they use no NCCL
    transport), fewer iterations, no single-GPU baseline."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in spec.items()}
    out["tasks"] = [t for t in spec["tasks"] if t != "copy"]
    out["timeout_s"] = float(timeout_s)
    out["allreduce"].update(warmup=1, iters=3)
    out["ddp"].update(warmup=1, steps=2, baseline=False)
    return out


def parse_fault(text: str | None, env: dict | None = None) -> dict[str, Any] | None:
    """Decode the test-only ``GPUDOCTOR_CONFIRM_FAULT`` value; None when unset, malformed or
    disarmed by its ``unless=VAR`` clause (VAR set to a non-empty value in ``env``)."""
    if not text:
        return None
    parts = text.split(":")
    if len(parts) < 3 or not parts[0].isdigit() or parts[1] not in ("hang", "exit", "raise"):
        return None
    fault = {"rank": int(parts[0]), "kind": parts[1], "at": parts[2]}
    for extra in parts[3:]:
        if extra.startswith("unless="):
            var = extra[len("unless="):]
            if (env or {}).get(var):
                return None
    return fault
