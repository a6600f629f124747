"""``nvidia-smi`` outputs -> NvmlFacts: the default table, ``-q`` (text), ``-q -x`` (XML) and ``nvlink -s``
(-q and XML: :mod:`gpudoctor.parsers.smi_query`; --query-gpu CSV: :mod:`gpudoctor.parsers.smi_csv`; re-exported here).

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

from gpudoctor.facts.model import GpuFacts, GpuProcess, NvLink, NvmlFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean, na, to_bool, to_float, to_int
from gpudoctor.parsers.smi_common import (
    MIB,
    NO_DEVICES,
    NO_DRIVER,
    SOURCE_NVLINK,
    SOURCE_TABLE,
    WHOLE_MESSAGE,  # noqa: F401 (parsers/detect.py reads it from here)
    _compute_mode,
    _finish,
    _pstate,
)
from gpudoctor.parsers.smi_csv import SOURCE_CSV, parse_compute_apps_csv, parse_query_csv  # noqa: F401
from gpudoctor.parsers.smi_query import MAX_XML_CHARS, XML_MAP, parse_query, parse_xml  # noqa: F401

# --------------------------------------------------------------------------------------------- table
_HDR = re.compile(r"NVIDIA-SMI\s+([\d.]+)?.*?Driver Version:\s*([\d.]+)(?:.*?CUDA Version:\s*([\d.]+|N/A))?")
# the column after the name: Persistence-M (On/Off) on Linux, Driver-Model (WDDM/TCC/MCDM) on Windows
_ROW1 = re.compile(r"^\|\s*(\d+)\s+(.+?)\s+(On|Off|N/A|WDDM|TCC|MCDM)\s*\|"
                   r"\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])"
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
    if m and not _HDR.search(t) and not any(_ROW1.match(x) for x in t.split("\n")):  # the message, no table
        nv.error = m.group(0).strip()
        nv.gpu_count = 0
        if NO_DEVICES.fullmatch(nv.error):  # NVML initialised (so the driver is loaded) and listed no GPU: known
            nv.available, nv.gpus = True, []
            nv.error = None
        else:
            nv.available = False
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
                                                  kind="graphics" if "G" in pm.group(5) else "compute"))
            continue
        r1 = _ROW1.match(line)
        if not r1:
            continue
        g = GpuFacts(index=int(r1.group(1)))
        g.name = r1.group(2).strip()
        if r1.group(3) in ("On", "Off"):  # Windows' Driver-Model column says nothing about persistence
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
    if h:
        nv.available = True  # the header's driver version: the driver answered
    if gpus or proc_section:
        # the GPU list is known when rows were read, or the paste reaches the process table (after every GPU row);
        # a paste cut after the header leaves it unknown (not "no GPU")
        nv.gpus = gpus
    return _finish(nv)


# ------------------------------------------------------------------------------------ nvlink -s
_NVL_GPU = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*(?:\(UUID:\s*([^)]*)\))?\s*$")
_NVL_LINK = re.compile(r"^\s*Link\s+(\d+):\s*(.*?)\s*$")
_NVL_SPEED = re.compile(r"[\d.]+\s*GB/s", re.IGNORECASE)  #: a link state of `nvlink -s`: its speed


def parse_nvlink_status(text: str) -> NvmlFacts:
    """Parse ``nvidia-smi nvlink -s``: per GPU, each link's state and speed (GB/s per link, as printed).

    ``Link N: <inactive>`` is an inactive link. Lines of other ``nvlink`` outputs under the same headers (``-e``
    error counters "Link 3: CRC Errors: 48213", ``-c`` capabilities) are not link states: a GPU with none of its
    own keeps its links unknown (``nvlinks`` not set). At a truncation mark ('......') parsing stops and the GPU
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
            gpus.append(cur)
            continue
        lm = _NVL_LINK.match(line)
        if lm and cur is not None:
            val = lm.group(2)
            inactive = "inactive" in val.lower() or na(val)
            if not inactive and not _NVL_SPEED.fullmatch(val):
                continue  # `nvlink -e` counters ("Link 3: CRC Errors: 48213"), `-c` capabilities: not a link state
            if "nvlinks" not in cur.model_fields_set:
                cur.nvlinks = []  # a GPU listed with no state line (an `-e` paste): its links stay unknown
            cur.nvlinks.append(NvLink(link=int(lm.group(1)), active=not inactive,
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
