"""Parsers for `nvidia-smi --query-gpu=... --format=csv` and `--query-compute-apps=... --format=csv`."""
from __future__ import annotations

import re

from gpudoctor.facts.clock_reasons import BY_CSV_KEY, decode
from gpudoctor.facts.model import GpuFacts, GpuProcess, NvmlFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean, na, size_bytes, to_bool, to_float, to_int
from gpudoctor.parsers.smi_common import (
    _compute_mode,
    _finish,
    _pstate,
)

# ------------------------------------------------------------------------------------- --query-gpu CSV
SOURCE_CSV = "nvidia-smi --query-gpu --format=csv"
#: query field (nvidia-smi --help-query-gpu) -> (GpuFacts field, converter). Aliases cover renamed fields
#: (clocks_throttle_reasons.* became clocks_event_reasons.* in driver 535).
_CSV_FIELDS = {
    "name": ("name", lambda v: None if v is None or na(v) else v.strip()),
    "uuid": ("uuid", lambda v: None if v is None or na(v) else v.strip()),
    "pci.bus_id": ("pci_bus_id", lambda v: None if v is None or na(v) else v.strip()),
    "memory.total": ("memory_total_bytes", lambda v: size_bytes(v, "M") if not na(v) else None),
    "memory.used": ("memory_used_bytes", lambda v: size_bytes(v, "M") if not na(v) else None),
    "temperature.gpu": ("temperature_c", to_int),
    "power.draw": ("power_draw_w", to_float),
    "power.draw.instant": ("power_draw_w", to_float),
    "power.draw.average": ("power_draw_w", to_float),
    "power.limit": ("power_limit_w", to_float),
    "enforced.power.limit": ("power_limit_w", to_float),
    "power.default_limit": ("power_default_limit_w", to_float),
    "pcie.link.gen.current": ("pcie_gen_current", to_int),
    "pcie.link.gen.max": ("pcie_gen_max", to_int),
    "pcie.link.gen.gpumax": ("pcie_gen_gpu_max", to_int),
    "pcie.link.width.current": ("pcie_width_current", to_int),
    "pcie.link.width.max": ("pcie_width_max", to_int),
    "utilization.gpu": ("utilization_gpu_pct", to_int),
    "pstate": ("pstate", _pstate),
    "persistence_mode": ("persistence_mode", to_bool),
    "compute_mode": ("compute_mode", _compute_mode),
    "mig.mode.current": ("mig_mode_current", to_bool),
    "mig.mode.pending": ("mig_mode_pending", to_bool),
    "ecc.mode.current": ("ecc_mode_current", to_bool),
    "ecc.errors.uncorrected.volatile.total": ("ecc_uncorrected_volatile", to_int),
    "ecc.errors.uncorrected.aggregate.total": ("ecc_uncorrected_aggregate", to_int),
    "remapped_rows.correctable": ("remapped_rows_correctable", to_int),
    "remapped_rows.uncorrectable": ("remapped_rows_uncorrectable", to_int),
    "remapped_rows.pending": ("remapped_rows_pending", to_bool),
    "remapped_rows.failure": ("remapped_rows_failure", to_bool),
    "retired_pages.single_bit_ecc.count": ("retired_pages_sbe", to_int),
    "retired_pages.sbe": ("retired_pages_sbe", to_int),
    "retired_pages.double_bit.count": ("retired_pages_dbe", to_int),
    "retired_pages.dbe": ("retired_pages_dbe", to_int),
    "retired_pages.pending": ("retired_pages_pending", to_bool),
}


def _csv_key(header: str) -> str:
    """'power.draw [W]' -> 'power.draw'; 'clocks_throttle_reasons.active' -> 'clocks_event_reasons.active'."""
    key = header.split(" [", 1)[0].strip().lower()
    return key.replace("clocks_throttle_reasons.", "clocks_event_reasons.")


#: the shape of the cells that identify a row (nvidia-smi --help-query-gpu / --help-query-compute-apps): a line
#: whose cell in one of these columns has another shape is text after the table, not a row ("N/A" is a value)
_ROW_SHAPE = {
    "index": re.compile(r"\d+\Z"),
    "pid": re.compile(r"\d+\Z"),
    "uuid": re.compile(r"(?:GPU|MIG)-[0-9A-Za-z/-]+\Z"),
    "gpu_uuid": re.compile(r"(?:GPU|MIG)-[0-9A-Za-z/-]+\Z"),
    "pci.bus_id": re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\Z"),
    "gpu_bus_id": re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\Z"),
    "memory.used": re.compile(r"\d+(?: MiB)?\Z"),
    "memory.total": re.compile(r"\d+(?: MiB)?\Z"),
    "used_gpu_memory": re.compile(r"\d+(?: MiB)?\Z"),
    "used_memory": re.compile(r"\d+(?: MiB)?\Z"),
    "timestamp": re.compile(r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?\Z"),
}


def _row(line: str, keys: list[str], free: int | None) -> list[str] | None:
    """The cells of ``line`` when it is a row of the table of ``keys`` (cell count and identifying cells' shapes),
    else None; cells past the count are rejoined in column ``free`` (nvidia-smi does not quote)."""
    cells = [c.strip() for c in line.split(",")]
    if len(cells) > len(keys) and free is not None:
        extra = len(cells) - len(keys)
        cells[free:free + extra + 1] = [", ".join(cells[free:free + extra + 1])]
    if len(cells) != len(keys):
        return None
    for k, c in zip(keys, cells, strict=True):
        shape = _ROW_SHAPE.get(k)
        if shape is not None and not na(c) and not shape.match(c):
            return None
    return cells


def _csv_table(text: str, header: re.Pattern, free_text: str, what: str) -> tuple[list[str], list[list[str]], int]:
    """(keys, rows, skipped) of an nvidia-smi ``--format=csv`` table: the first line matching ``header`` (other
    text may precede it) gives the keys (units dropped, old names renamed); a repeated header is skipped (a sample
    loop repeats it; a second capture of the command starts a table again); a row with more cells than keys has them
    rejoined in the ``free_text`` column (GPU names and command lines can hold commas). The table ends at the first
    line that is not a row (:func:`_row`), so the log pasted after it is never read as rows; a non-row line with a
    row right after it (a wrapped or cut line inside the table) is skipped and counted.
    Raises ParseError without a header line (``what`` names the format)."""
    lines = [ln for ln in clean(text).split("\n") if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if start is None:
        raise ParseError(f"no {what} CSV header line")
    keys = [_csv_key(h) for h in lines[start].split(",")]
    free = keys.index(free_text) if free_text in keys else None
    rows, skipped, in_table = [], 0, True
    body = lines[start + 1:]
    for i, line in enumerate(body):
        if header.match(line):
            in_table = [_csv_key(h) for h in line.split(",")] == keys
            continue
        if not in_table:
            continue
        cells = _row(line, keys, free)
        if cells is not None:
            rows.append(cells)
        elif i + 1 < len(body) and _row(body[i + 1], keys, free) is not None:
            skipped += 1
        else:
            in_table = False  # the table ended: what follows is other text
    return keys, rows, skipped


def parse_query_csv(text: str) -> NvmlFacts:
    """Parse ``nvidia-smi --query-gpu=FIELDS --format=csv`` output (with its header line; ``nounits`` too).

    Fields known to :data:`_CSV_FIELDS` fill the GPU facts (MiB -> bytes, W, °C); ``driver_version``
    fills the driver; unknown fields are ignored. A GPU is keyed by ``index``, else ``uuid``, else
    ``pci.bus_id``, else its position in the sample (rows sharing a ``timestamp``: nvidia-smi stamps the time
    of the query; rows stamped apart would be read as samples of one GPU). Several samples per GPU
    (``-l``/``-lms`` loops): every value is the last sample's, except the clock event reasons, which are the
    union over all samples (an intermittent HW slowdown must not vanish because the last sample was clean).
    Header search, repeated headers, commas in GPU names: :func:`_csv_table`.
    Raises ParseError when there is no header line of query fields or no data row.
    """
    from gpudoctor.parsers.detect import CSV_HEADER

    keys, rows, skipped = _csv_table(text, CSV_HEADER, "name", "--query-gpu (e.g. 'index, name, pci.bus_id')")
    key_col = next((keys.index(k) for k in ("index", "uuid", "pci.bus_id") if k in keys), None)
    by_key: dict[str, GpuFacts] = {}
    masks: dict[str, int] = {}
    driver: str | None = None
    ts_col = keys.index("timestamp") if "timestamp" in keys else None
    prev_ts, pos = None, -1
    for cells in rows:
        # without an id column: the n-th row of one sample (rows sharing a timestamp) is GPU n; without a
        # timestamp either, every row is another GPU
        same_sample = ts_col is not None and cells[ts_col] == prev_ts
        pos = pos + 1 if ts_col is None or same_sample else 0
        prev_ts = cells[ts_col] if ts_col is not None else None
        ident = cells[key_col] if key_col is not None else str(pos)
        g = by_key.get(ident)
        if g is None:
            idx = to_int(cells[keys.index("index")]) if "index" in keys else None
            g = by_key[ident] = GpuFacts(index=idx if idx is not None else len(by_key))
        for k, v in zip(keys, cells, strict=False):
            if k == "driver_version" and not na(v):
                driver = v
            elif k in _CSV_FIELDS:
                field, conv = _CSV_FIELDS[k]
                value = conv(v)
                if value is not None:
                    setattr(g, field, value)
                elif field == "retired_pages_sbe" and na(v) and field not in g.unsupported:
                    g.unsupported.append(field)  # [N/A]: no dynamic page retirement on this GPU (Ampere+)
            elif k == "clocks_event_reasons.active":
                m = to_int(v)
                if m is not None:
                    masks[ident] = masks.get(ident, 0) | m
            elif k.startswith("clocks_event_reasons."):
                reason = BY_CSV_KEY.get(k.split(".", 1)[1])
                name = reason.nvml if reason else None
                if reason and to_bool(v):
                    masks[ident] = masks.get(ident, 0) | reason.bit
                elif name and to_bool(v) is False:
                    masks.setdefault(ident, 0)
    if not rows:
        raise ParseError(f"a --query-gpu CSV header ({len(keys)} fields) without a data row of {len(keys)} fields"
                         + (f" ({skipped} line(s) with another count)" if skipped else ""))
    for ident, mask in masks.items():
        g = by_key[ident]
        g.clock_event_reasons_mask = mask
        g.clock_event_reasons = sorted(decode(mask))
    nv = NvmlFacts(source=SOURCE_CSV)
    if driver:
        nv.driver_version = driver
    nv.gpus = sorted(by_key.values(), key=lambda g: g.index)
    return _finish(nv)


# ------------------------------------------------------------------------------ --query-compute-apps CSV
def parse_compute_apps_csv(text: str) -> list[tuple[str | None, str | None, GpuProcess]]:
    """Parse ``nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory[,gpu_uuid,gpu_bus_id] --format=csv``.

    Returns (gpu_uuid, gpu_bus_id, process) per row; the GPU columns are None when not queried (the caller
    attaches such rows only when one GPU is known). MiB become bytes. Raises ParseError without a header line
    naming ``pid``. A header with no row is what nvidia-smi prints when no compute process runs: [] (the GPUs'
    process lists stay unknown, since a paste cut after the header reads the same).
    """
    from gpudoctor.parsers.detect import APPS_HEADER

    keys, rows, _ = _csv_table(text, APPS_HEADER, "process_name",
                               "--query-compute-apps (e.g. 'pid, process_name, used_gpu_memory [MiB]')")
    out = []
    for cells in rows:
        row = dict(zip(keys, cells, strict=False))
        pid = to_int(row.get("pid"))
        if pid is None:
            continue
        mem = row.get("used_gpu_memory", row.get("used_memory"))
        proc = GpuProcess(pid=pid, name=None if na(row.get("process_name")) else row.get("process_name"),
                          used_memory_bytes=None if na(mem) else size_bytes(mem, "M"))
        uuid, bus = row.get("gpu_uuid"), row.get("gpu_bus_id")
        out.append((None if na(uuid) else uuid, None if na(bus) else bus, proc))
    return out
