"""``nvidia-smi`` outputs -> NvmlFacts: the default table, ``-q`` (text), ``-q -x`` (XML) and ``nvlink -s``.

Every function returns an :class:`~gpudoctor.facts.model.NvmlFacts` whose fields (and whose GPUs'
fields) are set only where the text gave them, so that ``model_fields_set`` tells which facts are
known. Units follow the model: MiB values become bytes, W stay W, °C stay °C.

Formats handled (sources: the nvidia-smi man page https://docs.nvidia.com/deploy/nvidia-smi/index.html
and real outputs in tests/fixtures):
- the table of driver 418 .. 580 (one, two or three lines per GPU, process table old and new);
- ``-q`` text with ``Clocks Throttle Reasons`` (old) or ``Clocks Event Reasons`` (new), ECC in the
  old ``Double Bit`` and the new ``DRAM/SRAM Uncorrectable`` layout, old absolute temperature
  thresholds (``GPU Slowdown Temp``) and new relative ``T.Limit`` ones (not used: they are margins);
- section-level excerpts without banner or GPU header (one GPU of unknown index is assumed: 0);
- the XML of ``-q -x`` (no entity expansion: a document declaring entities is refused).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from gpudoctor.facts.model import GpuFacts, GpuProcess, NvLinkState, NvmlFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean, na, size_bytes, to_bool, to_float, to_int
from gpudoctor.facts.clock_reasons import BY_CSV_KEY, BY_NVML, BY_Q_LABEL, BY_XML_TAG, decode

MIB = 1024 * 1024
SOURCE_TABLE = "nvidia-smi (table)"
SOURCE_Q = "nvidia-smi -q"
SOURCE_XML = "nvidia-smi -q -x"
SOURCE_NVLINK = "nvidia-smi nvlink -s"

COMPUTE_MODES = {"default": "Default", "e. process": "Exclusive_Process", "exclusive_process": "Exclusive_Process",
                 "e. thread": "Exclusive_Thread", "exclusive_thread": "Exclusive_Thread", "prohibited": "Prohibited"}
NO_DRIVER = re.compile(r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver[^\n]*"
                       r"|No devices were found|Failed to initialize NVML[^\n]*|NVML library version mismatch|"
                       r"Driver/library version mismatch", re.IGNORECASE)


def _compute_mode(v: str | None) -> str | None:
    return None if na(v) else COMPUTE_MODES.get(v.strip().lower(), v.strip())


def _pstate(v: str | None) -> int | None:
    m = re.match(r"^\s*P(\d+)", v or "")
    return int(m.group(1)) if m else None


def _finish(nv: NvmlFacts) -> NvmlFacts:
    if nv.gpus:
        nv.available = True
        nv.gpu_count = len(nv.gpus)
    return nv


# --------------------------------------------------------------------------------------------- table
_HDR = re.compile(r"NVIDIA-SMI\s+([\d.]+)?.*?Driver Version:\s*([\d.]+)(?:.*?CUDA Version:\s*([\d.]+|N/A))?")
_ROW1 = re.compile(r"^\|\s*(\d+)\s+(.+?)\s+(On|Off|N/A)\s*\|\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])"
                   r"\s+(\S+)\s*\|\s*(\S+)?\s*\|")
_ROW2 = re.compile(r"^\|\s*(\S+)\s+(\S+?)C?\s+(P\d+|N/A)\s+(?:\S+\s+)?(\S+?)W?\s*/\s*(\S+?)W?\s*\|"
                   r"\s*(\d+)MiB\s*/\s*(\d+)MiB\s*\|\s*(\S+?)%?\s+(\S+(?:\s\S+)?)\s*\|")
_ROW3 = re.compile(r"^\|\s+\|\s+\|\s+(Enabled|Disabled|N/A)\s*\|")
_PROC = re.compile(r"^\|\s+(\d+)\s+(?:(\S+)\s+(\S+)\s+)?(\d+)\s+(C\+G|C|G)\s+(.*?)\s+(\d+|N/A)(?:MiB)?\s*\|")


def parse_table(text: str) -> NvmlFacts:
    """Parse the default ``nvidia-smi`` table.

    Gives per GPU: name, bus id, persistence mode, volatile uncorrected ECC count, temperature (°C),
    performance state, power draw and enforced limit (W), memory used/total (bytes), utilisation (%),
    compute mode, MIG mode (three-line layout) and the processes (when the process table is present).
    Raises ParseError when the text holds no nvidia-smi header or GPU row.
    """
    t = clean(text)
    nv = NvmlFacts(source=SOURCE_TABLE)
    m = NO_DRIVER.search(t)
    if m and "|" not in t:
        nv.available = False
        nv.error = m.group(0).strip()
        nv.gpu_count = 0
        return nv
    h = _HDR.search(t)
    if h:
        nv.driver_version = h.group(2)
        if h.group(3) and not na(h.group(3)):
            nv.cuda_driver_version = h.group(3)
    gpus: list[GpuFacts] = []
    lines = t.split("\n")
    proc_section = False
    procs_seen = False
    for i, line in enumerate(lines):
        if re.match(r"^\|\s*Processes:", line):
            proc_section = True
            continue
        if proc_section:
            if "No running processes found" in line:
                procs_seen = True
                continue
            pm = _PROC.match(line)
            if pm:
                procs_seen = True
                idx = int(pm.group(1))
                g = next((x for x in gpus if x.index == idx), None)
                if g is not None:
                    mem = pm.group(7)
                    g.processes.append(GpuProcess(pid=int(pm.group(4)), name=pm.group(6).strip() or None,
                                                  used_memory_bytes=None if mem == "N/A" else int(mem) * MIB,
                                                  kind="graphics" if pm.group(5) == "G" else "compute"))
            continue
        r1 = _ROW1.match(line)
        if not r1:
            continue
        g = GpuFacts(index=int(r1.group(1)))
        g.name = r1.group(2).strip()
        g.persistence_mode = to_bool(r1.group(3))
        g.pci_bus_id = r1.group(4)
        ecc = r1.group(6)
        if ecc is not None and not na(ecc) and re.match(r"^\d+$", ecc):
            g.ecc_uncorrected_volatile = int(ecc)
        if i + 1 < len(lines):
            r2 = _ROW2.match(lines[i + 1])
            if r2:
                temp = to_int(r2.group(2))
                if temp is not None:
                    g.temperature_c = temp
                ps = _pstate(r2.group(3))
                if ps is not None:
                    g.pstate = ps
                draw, cap = to_float(r2.group(4)), to_float(r2.group(5))
                if draw is not None:
                    g.power_draw_w = draw
                if cap is not None:
                    g.power_limit_w = cap
                g.memory_used_bytes = int(r2.group(6)) * MIB
                g.memory_total_bytes = int(r2.group(7)) * MIB
                util = to_int(r2.group(8))
                if util is not None:
                    g.utilization_gpu_pct = util
                cm = _compute_mode(r2.group(9))
                if cm:
                    g.compute_mode = cm
        if i + 2 < len(lines):
            r3 = _ROW3.match(lines[i + 2])
            if r3 and not na(r3.group(1)):
                g.mig_mode_current = to_bool(r3.group(1))
        gpus.append(g)
    if not gpus and not h:
        raise ParseError("no nvidia-smi header or GPU row found")
    if procs_seen:
        for g in gpus:
            g.processes = list(g.processes)  # mark 'processes' as known (an empty list = none running)
    nv.gpus = gpus
    return _finish(nv)


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
        for key in ("dram uncorrectable", "sram uncorrectable", "sram uncorrectable parity", "sram uncorrectable sec-ded",
                    "double bit/total", "double bit ecc/total"):
            n = to_int(_get(d, f"ecc errors/{scope}/{key}"))
            if n is not None:
                total, seen = total + n, True
        if seen:
            setattr(g, field, total)
    put("remapped_rows_correctable", to_int(_get(d, "remapped rows/correctable error")))
    put("remapped_rows_uncorrectable", to_int(_get(d, "remapped rows/uncorrectable error")))
    put("remapped_rows_pending", to_bool(_get(d, "remapped rows/pending")))
    put("remapped_rows_failure", to_bool(_get(d, "remapped rows/remapping failure occurred")))
    put("temperature_c", to_int(_get(d, "temperature/gpu current temp")))
    put("temperature_slowdown_c", to_int(_get(d, "temperature/gpu slowdown temp")))
    put("temperature_shutdown_c", to_int(_get(d, "temperature/gpu shutdown temp")))
    put("power_draw_w", to_float(_get(d, "gpu power readings/power draw", "gpu power readings/average power draw",
                                      "power readings/power draw", "power readings/average power draw")))
    put("power_limit_w", to_float(_get(d, "gpu power readings/current power limit", "power readings/enforced power limit",
                                       "power readings/current power limit")))
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
    return _finish_gpus(nv, gpus)


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


# ------------------------------------------------------------------------------------ nvlink -s
_NVL_GPU = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*(?:\(UUID:\s*([^)]*)\))?\s*$")
_NVL_LINK = re.compile(r"^\s*Link\s+(\d+):\s*(.*?)\s*$")


def parse_nvlink_status(text: str) -> NvmlFacts:
    """Parse ``nvidia-smi nvlink -s``: per GPU, each link's state and speed (GB/s per link, as printed).

    ``Link N: <inactive>`` is an inactive link. At a truncation mark ('......') parsing stops and the GPU
    whose list it cut is dropped (its link count is unknown).
    Raises ParseError when no 'GPU n:' header with link lines is present.
    """
    gpus: list[GpuFacts] = []
    cur: GpuFacts | None = None
    for line in clean(text).split("\n"):
        s = line.strip()
        if re.fullmatch(r"(\.{3,}|…+)", s):
            # a paste cut here: the GPU being listed is incomplete, so its link count is unknown
            if cur is not None and gpus and gpus[-1] is cur:
                gpus.pop()
            break
        m = _NVL_GPU.match(s)
        if m:
            cur = GpuFacts(index=int(m.group(1)))
            if m.group(2):
                cur.name = m.group(2)
            if m.group(3) and not na(m.group(3)):
                cur.uuid = m.group(3).strip()
            cur.nvlinks = []
            gpus.append(cur)
            continue
        lm = _NVL_LINK.match(line)
        if lm and cur is not None:
            val = lm.group(2)
            inactive = "inactive" in val.lower() or na(val)
            cur.nvlinks.append(NvLinkState(link=int(lm.group(1)), active=not inactive,
                                           speed_gbps=None if inactive else to_float(val)))
    if not gpus:
        raise ParseError("no 'GPU n: ...' block of nvidia-smi nvlink -s")
    nv = NvmlFacts(source=SOURCE_NVLINK)
    nv.gpus = gpus
    return _finish(nv)


def parse_list(text: str) -> NvmlFacts:
    """Parse ``nvidia-smi -L`` ('GPU 0: NVIDIA H200 (UUID: GPU-...)'): index, name and UUID per GPU.

    MIG device lines are ignored. Raises ParseError when no 'GPU n: ... (UUID: ...)' line is present.
    """
    gpus = []
    for line in clean(text).split("\n"):
        m = _NVL_GPU.match(line.strip())
        if m and m.group(3):
            g = GpuFacts(index=int(m.group(1)), name=m.group(2) or None)
            g.uuid = m.group(3).strip()
            gpus.append(g)
    if not gpus:
        raise ParseError("no 'GPU n: NAME (UUID: ...)' line of nvidia-smi -L")
    nv = NvmlFacts(source="nvidia-smi -L")
    nv.gpus = gpus
    return _finish(nv)


# ------------------------------------------------------------------------------------- --query-gpu CSV
SOURCE_CSV = "nvidia-smi --query-gpu --format=csv"
#: query field (nvidia-smi --help-query-gpu) -> (GpuFacts field, converter). Aliases cover renamed fields
#: (clocks_throttle_reasons.* became clocks_event_reasons.* in driver 535).
_CSV_FIELDS = {
    "name": ("name", lambda v: None if na(v) else v.strip()),
    "uuid": ("uuid", lambda v: None if na(v) else v.strip()),
    "pci.bus_id": ("pci_bus_id", lambda v: None if na(v) else v.strip()),
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
}


def _csv_key(header: str) -> str:
    """'power.draw [W]' -> 'power.draw'; 'clocks_throttle_reasons.active' -> 'clocks_event_reasons.active'."""
    key = header.split(" [", 1)[0].strip().lower()
    return key.replace("clocks_throttle_reasons.", "clocks_event_reasons.")


def _csv_table(text: str, header: re.Pattern, free_text: str, what: str) -> tuple[list[str], list[list[str]], int]:
    """(keys, rows, skipped) of an nvidia-smi ``--format=csv`` table: the first line matching ``header`` (other
    text may precede it) gives the keys (units dropped, old names renamed); a repeated header is skipped; a row
    with more cells than keys has them rejoined in the ``free_text`` column (nvidia-smi does not quote, and GPU
    names and command lines can hold commas); rows with another cell count are skipped and counted.
    Raises ParseError without a header line (``what`` names the format)."""
    lines = [ln for ln in clean(text).split("\n") if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if start is None:
        raise ParseError(f"no {what} CSV header line")
    keys = [_csv_key(h) for h in lines[start].split(",")]
    free = keys.index(free_text) if free_text in keys else None
    rows, skipped = [], 0
    for line in lines[start + 1:]:
        if header.match(line):
            continue  # the header again (a sample loop may repeat it)
        cells = [c.strip() for c in line.split(",")]
        if len(cells) > len(keys) and free is not None:
            extra = len(cells) - len(keys)
            cells[free:free + extra + 1] = [", ".join(cells[free:free + extra + 1])]
        if len(cells) == len(keys):
            rows.append(cells)
        else:
            skipped += 1  # a wrapped or truncated line, or text after the table
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
        for k, v in zip(keys, cells):
            if k == "driver_version" and not na(v):
                driver = v
            elif k in _CSV_FIELDS:
                field, conv = _CSV_FIELDS[k]
                value = conv(v)
                if value is not None:
                    setattr(g, field, value)
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
    naming ``pid`` or without a data row.
    """
    from gpudoctor.parsers.detect import APPS_HEADER

    keys, rows, _ = _csv_table(text, APPS_HEADER, "process_name",
                               "--query-compute-apps (e.g. 'pid, process_name, used_gpu_memory [MiB]')")
    out = []
    for cells in rows:
        row = dict(zip(keys, cells))
        pid = to_int(row.get("pid"))
        if pid is None:
            continue
        mem = row.get("used_gpu_memory", row.get("used_memory"))
        proc = GpuProcess(pid=pid, name=None if na(row.get("process_name")) else row.get("process_name"),
                          used_memory_bytes=None if na(mem) else size_bytes(mem, "M"))
        uuid, bus = row.get("gpu_uuid"), row.get("gpu_bus_id")
        out.append((None if na(uuid) else uuid, None if na(bus) else bus, proc))
    if not out:
        raise ParseError("a --query-compute-apps CSV header without a data row")
    return out
