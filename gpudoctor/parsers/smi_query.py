"""Parsers for `nvidia-smi -q` text and `nvidia-smi -q -x` XML (whole outputs, -d selections, excerpts)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from gpudoctor.facts.clock_reasons import BY_NVML, BY_Q_LABEL, BY_XML_TAG
from gpudoctor.facts.model import GpuFacts, GpuProcess, NvmlFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean, na, size_bytes, to_bool, to_float, to_int
from gpudoctor.parsers.smi_common import (
    SOURCE_Q,
    SOURCE_XML,
    _compute_mode,
    _finish,
    _pstate,
)

# ------------------------------------------------------------------------------------ -q (text)
_KV = re.compile(r"^(\s*)(\S.*?)\s+:(?:\s+(.*?))?\s*$")
_HEADER = re.compile(r"^(\s*)(\S.*?)\s*$")
_GPU_HDR = re.compile(r"^\s*GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")


def _q_blocks(text: str) -> tuple[dict[str, str], list[tuple[str | None, dict[str, str]]]]:
    """Split ``-q`` text into top-level key/values and per-GPU {path: value} (path = 'Section/Sub/Key')."""
    top: dict[str, str] = {}
    gpus: list[tuple[str | None, dict[str, str]]] = []
    cur: dict[str, str] | None = None
    stack: list[tuple[int, str]] = []
    gpu_indent = -1
    for raw in clean(text).split("\n"):
        line = raw.expandtabs(4)
        if not line.strip() or line.strip().startswith(("====", "nvidia-smi")):
            continue
        g = _GPU_HDR.match(line)
        if g:
            cur = {}
            gpus.append((g.group(1), cur))
            stack = []
            gpu_indent = len(line) - len(line.lstrip())
            continue
        kv = _KV.match(line)
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if kv:
            key = kv.group(2).strip()
            value = (kv.group(3) or "").strip()
            path = "/".join([s for _, s in stack] + [key]).lower()
            if cur is None and indent <= 0 and not stack:
                top[key.lower()] = value
                continue
            if cur is None:  # a section-level excerpt without the GPU header
                cur = {}
                gpus.append((None, cur))
            if path.startswith("processes/"):  # repeated per process: keep them all, in order
                cur[path] = cur[path] + "\x1f" + value if path in cur else value
            else:
                cur.setdefault(path, value)
            if not value:  # 'MIG Mode' followed by indented keys: a section written as 'Key :'
                stack.append((indent, key))
        else:
            h = _HEADER.match(line)
            if h and indent > gpu_indent or (h and cur is None):
                if cur is None and indent > 0:
                    cur = {}
                    gpus.append((None, cur))
                stack.append((indent, h.group(2)))
                if cur is not None:
                    cur.setdefault("/".join(n for _, n in stack).lower(), "")
    return top, gpus


def _get(d: dict[str, str], *paths: str) -> str | None:
    for p in paths:
        v = d.get(p.lower())
        if v is not None:
            return v
    return None


def _fill_gpu(g: GpuFacts, d: dict[str, str]) -> None:
    """Set the GpuFacts fields that ``d`` (path -> value, from -q text or XML) gives."""

    def put(field: str, value) -> None:
        if value is not None:
            setattr(g, field, value)

    v = _get(d, "product name")
    put("name", None if na(v) else v)
    v = _get(d, "gpu uuid")
    put("uuid", None if na(v) else v)
    put("persistence_mode", to_bool(_get(d, "persistence mode")))
    put("mig_mode_current", to_bool(_get(d, "mig mode/current")))
    put("mig_mode_pending", to_bool(_get(d, "mig mode/pending")))
    v = _get(d, "pci/bus id")
    put("pci_bus_id", None if na(v) else v)
    put("pcie_gen_max", to_int(_get(d, "pci/gpu link info/pcie generation/max")))
    put("pcie_gen_current", to_int(_get(d, "pci/gpu link info/pcie generation/current")))
    put("pcie_gen_gpu_max", to_int(_get(d, "pci/gpu link info/pcie generation/device max")))
    put("pcie_width_max", to_int(_get(d, "pci/gpu link info/link width/max")))
    put("pcie_width_current", to_int(_get(d, "pci/gpu link info/link width/current")))
    put("pcie_replay_counter", to_int(_get(d, "pci/replays since reset", "pci/replays since reset ")))
    put("pstate", _pstate(_get(d, "performance state")))
    reasons = {}
    for sec in ("clocks event reasons", "clocks throttle reasons", "clocks_throttle_reasons"):
        for path, value in d.items():
            if path.startswith(sec + "/"):
                label = path.split("/")[-1]
                name = BY_Q_LABEL[label].nvml if label in BY_Q_LABEL else None
                active = to_bool(value)
                if name and active is not None:
                    reasons[name] = active
    if reasons:
        g.clock_event_reasons = sorted(n for n, a in reasons.items() if a)
        g.clock_event_reasons_mask = sum(BY_NVML[n].bit for n, a in reasons.items() if a)
    put("memory_total_bytes", size_bytes(_get(d, "fb memory usage/total")))
    put("memory_used_bytes", size_bytes(_get(d, "fb memory usage/used")))
    put("compute_mode", _compute_mode(_get(d, "compute mode")))
    put("utilization_gpu_pct", to_int(_get(d, "utilization/gpu")))
    put("ecc_mode_current", to_bool(_get(d, "ecc mode/current")))
    for scope, field in (("volatile", "ecc_uncorrected_volatile"), ("aggregate", "ecc_uncorrected_aggregate")):
        total, seen = 0, False
        for key in (
            "dram uncorrectable",
            "sram uncorrectable",
            "sram uncorrectable parity",
            "sram uncorrectable sec-ded",
            "double bit/total",
            "double bit ecc/total",
        ):
            n = to_int(_get(d, f"ecc errors/{scope}/{key}"))
            if n is not None:
                total, seen = total + n, True
        if seen:
            setattr(g, field, total)
    put("remapped_rows_correctable", to_int(_get(d, "remapped rows/correctable error")))
    put("remapped_rows_uncorrectable", to_int(_get(d, "remapped rows/uncorrectable error")))
    put("remapped_rows_pending", to_bool(_get(d, "remapped rows/pending")))
    put("remapped_rows_failure", to_bool(_get(d, "remapped rows/remapping failure occurred")))
    sbe = _get(d, "retired pages/single bit ecc")
    if sbe is not None and na(sbe):  # N/A: this GPU has no dynamic page retirement (Ampere+: row remapping)
        g.unsupported.append("retired_pages_sbe")
    put("retired_pages_sbe", to_int(_get(d, "retired pages/single bit ecc", "retired pages/single bit ecc/count")))
    put("retired_pages_dbe", to_int(_get(d, "retired pages/double bit ecc", "retired pages/double bit ecc/count")))
    put("retired_pages_pending", to_bool(_get(d, "retired pages/pending page blacklist",
                                              "retired pages/pending page retirement")))
    put("temperature_c", to_int(_get(d, "temperature/gpu current temp")))
    put("temperature_slowdown_c", to_int(_get(d, "temperature/gpu slowdown temp")))
    put("temperature_shutdown_c", to_int(_get(d, "temperature/gpu shutdown temp")))
    put("power_draw_w", to_float(_get(d, "gpu power readings/power draw", "gpu power readings/average power draw",
                                      "power readings/power draw", "power readings/average power draw")))
    put(
        "power_limit_w",
        to_float(
            _get(
                d,
                "gpu power readings/current power limit",
                "power readings/enforced power limit",
                "power readings/current power limit",
            )
        ),
    )
    put("power_default_limit_w", to_float(_get(d, "gpu power readings/default power limit",
                                               "power readings/default power limit")))


def _finish_gpus(nv: NvmlFacts, gpus: list) -> NvmlFacts:
    nv.gpus = gpus
    return _finish(nv)


def parse_query(text: str) -> NvmlFacts:
    """Parse ``nvidia-smi -q`` text (whole, ``-d`` selections, or a section-level excerpt).

    GPU indices follow the order of the GPU blocks (nvidia-smi lists GPUs in index order); an
    excerpt without a GPU header is taken as one GPU of index 0. Raises ParseError when no
    ``Key : value`` line of nvidia-smi's layout is present.
    """
    top, blocks = _q_blocks(text)
    if not top and not any(d for _, d in blocks):
        raise ParseError("no 'Key : value' lines of nvidia-smi -q")
    nv = NvmlFacts(source=SOURCE_Q)
    v = top.get("driver version")
    if v and not na(v):
        nv.driver_version = v
    v = top.get("cuda version")
    if v and not na(v):
        nv.cuda_driver_version = v
    gpus = []
    for i, (bus, d) in enumerate(blocks):
        g = GpuFacts(index=i)
        if bus:
            g.pci_bus_id = bus
        _fill_gpu(g, d)
        procs = _q_processes(d)
        if procs is not None:
            g.processes = procs
        gpus.append(g)
    attached = to_int(top.get("attached gpus"))
    if not gpus and not attached:
        # a header without GPU blocks: "Attached GPUs : 0" lists none; without that line the paste was cut
        if attached == 0:
            nv.gpus, nv.gpu_count, nv.available = [], 0, True
        return nv
    nv = _finish_gpus(nv, gpus)
    if attached and attached > len(gpus):  # a paste cut before the last GPU blocks: the others are unseen
        nv.gpu_count = attached
    if nv.driver_version and attached:
        nv.available = True  # nvidia-smi printed the driver's version and its GPU count: NVML initialised
    return nv


def _q_processes(d: dict[str, str]) -> list[GpuProcess] | None:
    """The processes of one GPU block; None when the block has no Processes section (not known)."""
    if "processes" not in d and not any(p.startswith("processes/") for p in d):
        return None
    pids = [to_int(x) for x in d.get("processes/process id", "").split("\x1f")]
    types = d.get("processes/type", "").split("\x1f")
    names = d.get("processes/name", "").split("\x1f")
    mems = d.get("processes/used gpu memory", "").split("\x1f")
    out = []
    for i, pid in enumerate(pids):
        if pid is None:
            continue
        typ = types[i].strip() if i < len(types) else "C"
        out.append(GpuProcess(pid=pid, name=(names[i].strip() or None) if i < len(names) else None,
                              used_memory_bytes=size_bytes(mems[i]) if i < len(mems) else None,
                              kind="graphics" if typ == "G" else "compute"))
    return out


# ------------------------------------------------------------------------------------ -q -x (XML)
XML_MAP = {  # XML element path (below <gpu>) -> the -q text path _fill_gpu reads
    "product_name": "product name", "uuid": "gpu uuid", "persistence_mode": "persistence mode",
    "mig_mode/current_mig": "mig mode/current", "mig_mode/pending_mig": "mig mode/pending",
    "pci/pci_bus_id": "pci/bus id",
    "pci/pci_gpu_link_info/pcie_gen/max_link_gen": "pci/gpu link info/pcie generation/max",
    "pci/pci_gpu_link_info/pcie_gen/current_link_gen": "pci/gpu link info/pcie generation/current",
    "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen": "pci/gpu link info/pcie generation/device max",
    "pci/pci_gpu_link_info/link_widths/max_link_width": "pci/gpu link info/link width/max",
    "pci/pci_gpu_link_info/link_widths/current_link_width": "pci/gpu link info/link width/current",
    "pci/replay_counter": "pci/replays since reset", "performance_state": "performance state",
    "fb_memory_usage/total": "fb memory usage/total", "fb_memory_usage/used": "fb memory usage/used",
    "compute_mode": "compute mode", "utilization/gpu_util": "utilization/gpu",
    "ecc_mode/current_ecc": "ecc mode/current",
    "ecc_errors/volatile/dram_uncorrectable": "ecc errors/volatile/dram uncorrectable",
    "ecc_errors/volatile/sram_uncorrectable": "ecc errors/volatile/sram uncorrectable",
    "ecc_errors/volatile/sram_uncorrectable_parity": "ecc errors/volatile/sram uncorrectable parity",
    "ecc_errors/volatile/sram_uncorrectable_secded": "ecc errors/volatile/sram uncorrectable sec-ded",
    "ecc_errors/volatile/double_bit/total": "ecc errors/volatile/double bit/total",
    "ecc_errors/aggregate/dram_uncorrectable": "ecc errors/aggregate/dram uncorrectable",
    "ecc_errors/aggregate/sram_uncorrectable": "ecc errors/aggregate/sram uncorrectable",
    "ecc_errors/aggregate/sram_uncorrectable_parity": "ecc errors/aggregate/sram uncorrectable parity",
    "ecc_errors/aggregate/sram_uncorrectable_secded": "ecc errors/aggregate/sram uncorrectable sec-ded",
    "ecc_errors/aggregate/double_bit/total": "ecc errors/aggregate/double bit/total",
    "remapped_rows/remapped_row_corr": "remapped rows/correctable error",
    "remapped_rows/remapped_row_unc": "remapped rows/uncorrectable error",
    "remapped_rows/remapped_row_pending": "remapped rows/pending",
    "remapped_rows/remapped_row_failure": "remapped rows/remapping failure occurred",
    "retired_pages/multiple_single_bit_retirement/retired_count": "retired pages/single bit ecc",
    "retired_pages/double_bit_retirement/retired_count": "retired pages/double bit ecc",
    "retired_pages/pending_blacklist": "retired pages/pending page blacklist",
    "retired_pages/pending_retirement": "retired pages/pending page retirement",
    "temperature/gpu_temp": "temperature/gpu current temp",
    "temperature/gpu_temp_slow_threshold": "temperature/gpu slowdown temp",
    "temperature/gpu_temp_max_threshold": "temperature/gpu shutdown temp",
    "gpu_power_readings/power_draw": "gpu power readings/power draw",
    "gpu_power_readings/average_power_draw": "gpu power readings/average power draw",
    "gpu_power_readings/current_power_limit": "gpu power readings/current power limit",
    "gpu_power_readings/default_power_limit": "gpu power readings/default power limit",
    "power_readings/power_draw": "power readings/power draw",
    "power_readings/enforced_power_limit": "power readings/enforced power limit",
    "power_readings/default_power_limit": "power readings/default power limit",
}
MAX_XML_CHARS = 16 * 1024 * 1024


def parse_xml(text: str) -> NvmlFacts:
    """Parse ``nvidia-smi -q -x``.

    Safety: the stdlib parser never fetches external DTDs; a document that declares entities
    (``<!ENTITY``, the billion-laughs vector) or exceeds 16 MiB is refused with ParseError.
    Raises ParseError for malformed XML (a truncated paste) or a root other than <nvidia_smi_log>.
    """
    if len(text) > MAX_XML_CHARS:
        raise ParseError("XML larger than 16 MiB")
    if re.search(r"<!ENTITY", text, re.IGNORECASE):
        raise ParseError("XML declares entities; refused (nvidia-smi never writes them)")
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise ParseError(f"malformed XML ({exc})") from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"XML root <{root.tag}> is not <nvidia_smi_log>")
    nv = NvmlFacts(source=SOURCE_XML)
    v = root.findtext("driver_version")
    if v and not na(v):
        nv.driver_version = v.strip()
    v = root.findtext("cuda_version")
    if v and not na(v):
        nv.cuda_driver_version = v.strip()
    gpus = []
    for i, el in enumerate(root.findall("gpu")):
        d: dict[str, str] = {}
        for xpath, qpath in XML_MAP.items():
            found = el.findtext(xpath)
            if found is not None:
                d.setdefault(qpath, found.strip())
        for sec in ("clocks_event_reasons", "clocks_throttle_reasons"):
            for child in el.findall(sec + "/*"):
                label = BY_XML_TAG[child.tag].q_labels[0] if child.tag in BY_XML_TAG else None
                if label and child.text:
                    d[f"clocks event reasons/{label}"] = child.text.strip()
        g = GpuFacts(index=i)
        bus = el.get("id")
        if bus:
            g.pci_bus_id = bus
        _fill_gpu(g, d)
        procs_el = el.find("processes")
        if procs_el is not None:
            procs = []
            for p in procs_el.findall("process_info"):
                pid = to_int(p.findtext("pid"))
                if pid is None:
                    continue
                procs.append(GpuProcess(pid=pid, name=(p.findtext("process_name") or "").strip() or None,
                                        used_memory_bytes=size_bytes(p.findtext("used_memory")),
                                        kind="graphics" if (p.findtext("type") or "").strip() == "G" else "compute"))
            g.processes = procs
        gpus.append(g)
    return _finish_gpus(nv, gpus)


