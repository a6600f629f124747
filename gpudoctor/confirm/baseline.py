"""Fleet baseline files (``gpudoctor baseline save FILE``, ``gpudoctor scan --baseline FILE``).

A small JSON file: the host and date it was recorded on, and per GPU model the medians of its GPUs'
figures: GEMM (TFLOP/s), device copy and pinned copies (GB/s = 1e9 B/s), the best all-reduce busbw at
>= 256 MiB per world size (GB/s), and the DDP step per setting (ms).
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from gpudoctor.facts.model import ConfirmationFacts
from gpudoctor.facts.perf import BaselineModel, PerfBaseline, ddp_key


class BaselineError(ValueError):
    """The file is missing, unreadable or not a gpudoctor baseline."""


def _med(vals: list[float]) -> float | None:
    return round(statistics.median(vals), 2) if vals else None


def from_confirmation(c: ConfirmationFacts, host: str | None, date: str | None) -> PerfBaseline:
    """The baseline a run's figures give (GPU models named as NVML/torch name them)."""
    names = {d.index: d.name or "unknown GPU" for d in c.devices}
    if c.selftest is not None:
        for g in c.selftest.gpus:
            names.setdefault(g.index, g.name or "unknown GPU")
    models: dict[str, BaselineModel] = {}
    for name in sorted(set(names.values())):
        idx = {i for i, n in names.items() if n == name}
        st = [g for g in (c.selftest.gpus if c.selftest else []) if g.index in idx]
        cps = [x for x in c.copies if x.device_index in idx]
        bm = BaselineModel(gemm_tflops=_med([g.gemm_tflops for g in st if g.gemm_tflops]),
                           d2d_gbs=_med([g.d2d_gbs for g in st if g.d2d_gbs]),
                           h2d_gbs=_med([x.h2d_gbs.median for x in cps]), d2h_gbs=_med([x.d2h_gbs.median for x in cps]))
        big = [a.busbw_gbs for a in c.allreduce if a.busbw_gbs and a.size_bytes >= 256 * 2**20]
        if big and c.world_size and c.world_size > 1 and len(set(names.values())) == 1:
            bm.busbw_gbs[str(c.world_size)] = round(max(big), 2)
        d = c.ddp
        if d is not None and len(set(names.values())) == 1:
            bm.ddp_step_ms[ddp_key(d.world_size, d.per_rank_batch, d.seq_len, d.precision)] = \
                round(d.step.step_s.median * 1000.0, 2)
        models[name] = bm
    return PerfBaseline(host=host, date=date, models=models, path=None)


def save(b: PerfBaseline, path: str) -> None:
    """Write ``b`` as indented JSON (atomically: a temporary file renamed)."""
    doc = b.model_dump(exclude={"path"}, exclude_none=True)
    tmp = Path(path + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def load(path: str) -> PerfBaseline:
    """Read a baseline file; raises BaselineError with a one-line reason."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise BaselineError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise BaselineError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(doc, dict) or "gpudoctor_baseline" not in doc:
        raise BaselineError(f"{path}: not a gpudoctor baseline (no 'gpudoctor_baseline' key)")
    try:
        b = PerfBaseline.model_validate(doc)
    except ValueError as exc:
        raise BaselineError(f"{path}: {exc}".splitlines()[0]) from exc
    b.path = path
    return b
