"""Host command outputs: ``df`` (any of -h, -H, -k, -B1) and ``ulimit -a`` (bash and dash layouts) -> facts."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gpudoctor.facts.model import MemoryFacts, NvmlFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean

_DF_HDR = re.compile(r"^Filesystem\s+(\S+(?:\s\S+)?)\s+Used\s+Avail(?:able)?\s+(?:Use%|Capacity)\s+Mounted on\s*$")


@dataclass
class DfRow:
    filesystem: str
    size_bytes: int | None
    used_bytes: int | None
    avail_bytes: int | None
    mount: str


def _df_size(v: str, unit_bytes: int | None) -> int | None:
    """df -h uses powers of 1024 (K, M, G ...); -H powers of 1000 are rare and read as 1024 (<3% off)."""
    m = re.match(r"^([0-9]+(?:[.,][0-9]+)?)([KMGTPE]?)i?B?$", v, re.IGNORECASE)
    if not m:
        return None
    num = float(m.group(1).replace(",", "."))
    if m.group(2):
        return int(num * 1024 ** ("KMGTPE".index(m.group(2).upper()) + 1))
    return int(num * (unit_bytes or 1024))


def parse_df(text: str) -> list[DfRow]:
    """Parse ``df`` output (header 'Filesystem ... Mounted on'); sizes in bytes.

    The size column header says the unit: '1K-blocks' (KiB), '1B-blocks' / '1-blocks', or 'Size'
    (human-readable, K/M/G suffixes = KiB/MiB/GiB). Raises ParseError without a df header.
    """
    rows: list[DfRow] = []
    unit: int | None = None
    found = False
    pending = ""
    for line in clean(text).split("\n"):
        h = _DF_HDR.match(line.strip())
        if h:
            found = True
            col = h.group(1)
            m = re.match(r"(\d+)([KMG]?)B?-blocks", col)
            unit = int(m.group(1)) * 1024 ** (" KMG".index(m.group(2)) if m.group(2) else 0) if m else None
            continue
        if not found or not line.strip():
            continue
        parts = (pending + " " + line).split() if pending else line.split()
        if len(parts) == 1:  # long device name: df wraps the row
            pending = parts[0]
            continue
        pending = ""
        if len(parts) < 6 or not parts[4].rstrip("%").replace("-", "").isdigit():
            continue
        rows.append(DfRow(filesystem=parts[0], size_bytes=_df_size(parts[1], unit), used_bytes=_df_size(parts[2], unit),
                          avail_bytes=_df_size(parts[3], unit), mount=" ".join(parts[5:])))
    if not found:
        raise ParseError("no df header line ('Filesystem ... Mounted on')")
    return rows


def shm_facts(rows: list[DfRow]) -> MemoryFacts | None:
    """MemoryFacts with the /dev/shm size and free space (bytes) when ``rows`` list /dev/shm."""
    for r in rows:
        if r.mount == "/dev/shm":
            m = MemoryFacts(source="df")
            if r.size_bytes is not None:
                m.shm_total_bytes = r.size_bytes
            if r.avail_bytes is not None:
                m.shm_free_bytes = r.avail_bytes
            return m
    return None


# ulimit -a: bash 'max locked memory       (kbytes, -l) 8192' (fish: '(kB, -l) 64'); dash/busybox
# 'locked memory(kbytes) unlimited'; zsh '-l: locked-in-memory size (kbytes)  64'
_BASH = re.compile(r"^(.*?)\s*\(([^)]*?),?\s*-(\w)\)\s+(\S+)\s*$")
_ZSH = re.compile(r"^-(\w):\s+(.*?)\s+(\S+)\s*$")
_DASH = re.compile(r"^([a-z][a-z ()]*?)\s+(\S+)\s*$")
Limit = int | Literal["unlimited"] | None


def _lim(v: str, kbytes: bool) -> Limit:
    if v == "unlimited":
        return "unlimited"
    if v.isdigit():
        return int(v) * (1024 if kbytes else 1)
    return None


def parse_ulimit(text: str) -> MemoryFacts:
    """Parse ``ulimit -a`` (soft limits) -> MemoryFacts with memlock (bytes) and nofile.

    ``ulimit -a`` prints soft limits; the hard ones (``ulimit -aH``) are not distinguishable by
    content, so only the ``*_soft`` fields are set. Raises ParseError when neither the locked-memory
    nor the open-files line is present.
    """
    m = MemoryFacts(source="ulimit -a")
    found = False
    for raw in clean(text).split("\n"):
        line = raw.strip()
        b = _BASH.match(line)
        if b:
            name, flag, val = b.group(1).lower(), b.group(3), b.group(4)
            if flag == "l" or "locked memory" in name:
                m.memlock_soft_bytes = _lim(val, True)
                found = True
            elif flag == "n" or "open files" in name:
                m.nofile_soft = _lim(val, False)
                found = True
            continue
        z = _ZSH.match(line)
        if z:
            flag, name, val = z.group(1), z.group(2).lower(), z.group(3)
            if flag == "l":
                m.memlock_soft_bytes = _lim(val, "kbytes" in name)
                found = True
            elif flag == "n":
                m.nofile_soft = _lim(val, False)
                found = True
            continue
        d = _DASH.match(line)
        if d:
            name, val = d.group(1).strip().lower(), d.group(2)
            if name.startswith("locked memory"):
                m.memlock_soft_bytes = _lim(val, "kbytes" in name)
                found = True
            elif name in ("nofiles", "open files"):
                m.nofile_soft = _lim(val, False)
                found = True
    if not found:
        raise ParseError("no 'locked memory' or 'open files' line of ulimit -a")
    return m


def parse_meminfo(text: str) -> MemoryFacts:
    """Parse ``/proc/meminfo`` -> MemoryFacts with RAM total and available (bytes; the file's 'kB' are KiB,
    proc(5)). Raises ParseError without a MemTotal line."""
    vals = {}
    for line in clean(text).split("\n"):
        m = re.match(r"^(\w+):\s+(\d+)\s*kB\s*$", line.strip())
        if m:
            vals[m.group(1)] = int(m.group(2)) * 1024
    if "MemTotal" not in vals:
        raise ParseError("no 'MemTotal: N kB' line of /proc/meminfo")
    mem = MemoryFacts(source="/proc/meminfo", total_bytes=vals["MemTotal"])
    if "MemAvailable" in vals:
        mem.available_bytes = vals["MemAvailable"]
    return mem


#: the first line of /proc/driver/nvidia/version, every driver branch since 3xx: "NVRM version: NVIDIA UNIX x86_64
#: Kernel Module  535.104.05  Sat Aug 19 ..." (proprietary) or "NVRM version: NVIDIA UNIX Open Kernel Module for
#: x86_64  580.159.04  Release Build ..." (open modules, R515+); the version is the driver's (nvidia-smi's)
DRIVER_VERSION_LINE = re.compile(r"^[ \t]*NVRM version: NVIDIA UNIX\b[^\n]*?Kernel Module(?: for \S+)?[ \t]+"
                                 r"(\d{3}\.\d+(?:\.\d+)?)\b[^\n]*$", re.M)


def parse_proc_driver_version(text: str) -> NvmlFacts:
    """``cat /proc/driver/nvidia/version`` -> NvmlFacts (driver_version, kernel_module); the file exists only while
    the NVIDIA kernel module is loaded. Raises ParseError without its 'NVRM version:' line."""
    m = DRIVER_VERSION_LINE.search(clean(text))
    if not m:
        raise ParseError("no 'NVRM version: NVIDIA UNIX ... Kernel Module <version>' line")
    # the kernel module answered: the driver is loaded (as collect_env's driver line, parsers/collect_env.py);
    # whether NVML initialises is for nvidia-smi's output to say
    return NvmlFacts(source="/proc/driver/nvidia/version", available=True, driver_version=m.group(1),
                     kernel_module=m.group(0).strip())
