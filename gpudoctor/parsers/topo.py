"""Parser for `nvidia-smi topo -m` (the GPU/NIC connection matrix).

The output is a header naming the devices (GPU0.., NIC0.. or, in old drivers, NIC
device names such as mlx5_0) followed by trailing columns (``CPU Affinity``, later
``NUMA Affinity`` and ``GPU NUMA ID``), one row per device, then a ``Legend`` and,
since ~R470, a ``NIC Legend`` mapping NICn to device names.

Real outputs are messy: ANSI underline codes around the header, tab or space
separated, empty fields (``0\\t\\tN/A``), and pastes whose columns are glued together
(``NIC7NIC8``, ``SYSSYS``). Cells are therefore split on the relation keywords (X,
NV#, PIX, PXB, PHB, NODE, SYS; SOC is the pre-R384 name of SYS), never on whitespace.

The parser never guesses: text that is not a topo matrix, a row whose cells cannot be
read, a diagonal that is not X or an asymmetric matrix raises :class:`ParseError`.
A paste cut off after some rows gives a matrix with ``truncated=True`` whose missing
rows are ``None`` (the relations they hold are still known from the other rows'
columns, because the matrix is symmetric).

Relation meanings: the Legend printed by nvidia-smi (see docs/topology.md).
"""
from __future__ import annotations

import re
from typing import Literal

from gpudoctor.facts.model import TopoDeviceInfo, TopoMatrix
from gpudoctor.facts.topology import RELATION_RANK, link_class, nvlink_count

__all__ = ["ParseError", "TopoMatrix", "parse_topo_matrix", "RELATION_RANK", "link_class", "nvlink_count"]


from gpudoctor.parsers import ParseError  # noqa: E402  (one ParseError for every parser)

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|(?<![\w\]])\[[0-9;]{1,8}m")
REL = re.compile(r"X|NV\d{1,2}|PIX|PXB|PHB|NODE|SYS|SOC")
_TRAIL_RE = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID")
_LABEL = re.compile(r"GPU\d+|NIC\d+|[A-Za-z][\w.:-]*")
_GLUED = re.compile(r"(?:(?:GPU|NIC)\d+){2,}")
_CPU_LIST = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")
_NUMA = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")
_P2P_LEGEND = re.compile(r"CNS\s*=\s*Chipset not supported|GNS\s*=\s*GPU not supported")
_LEGEND_ENTRY = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")



def _norm(rel: str | None) -> str | None:
    return "SYS" if rel == "SOC" else rel


def strip_ansi(text: str) -> str:
    """Remove terminal escape codes (and bare leftovers such as '[4m' from pastes)."""
    return ANSI.sub("", text)


def _split_labels(part: str, lineno: int) -> list[str]:
    labels: list[str] = []
    for tok in part.split():
        if _GLUED.fullmatch(tok):  # 'NIC7NIC8' from a paste that lost its column gap
            labels.extend(re.findall(r"(?:GPU|NIC)\d+", tok))
        elif _LABEL.fullmatch(tok):
            labels.append(tok)
        else:
            raise ParseError(f"line {lineno}: header token {tok!r} is not a GPU or NIC name")
    return labels


def _find_header(lines: list[str]) -> tuple[int, list[str], list[str]]:
    for n, line in enumerate(lines):
        m = re.search(r"(?<![\w])GPU0(?![\d])", line)
        if not m or line[:m.start()].strip():
            continue  # the header starts with the column labels (row labels start at column 0)
        trail = _TRAIL_RE.search(line)
        devpart = line[:trail.start()] if trail else line
        columns = [" ".join(t.split()) for t in _TRAIL_RE.findall(line)] if trail else []
        if trail and line[trail.start():].strip() and _TRAIL_RE.sub("", line[trail.start():]).strip():
            raise ParseError(f"line {n + 1}: unexpected text after the matrix columns: {line.strip()[:80]!r}")
        try:
            labels = _split_labels(devpart, n + 1)
        except ParseError:
            if trail:
                raise
            continue  # prose mentioning GPU0
        if not labels or labels[0] != "GPU0" or any(REL.fullmatch(lab) for lab in labels):
            continue  # a matrix row (GPU0 X NV4 ...), not the header
        nxt = next((ln.strip() for ln in lines[n + 1:] if ln.strip()), "")
        if not re.match(r"GPU0(?![\w])", nxt):
            continue  # prose that starts with 'GPU0': the header is followed by GPU0's row
            continue
        return n, labels, columns
    raise ParseError("no `nvidia-smi topo -m` header found (a line starting with the column labels GPU0 ...)")


def _row_cells(rest: str, n: int, lineno: int) -> tuple[list[str], str, bool]:
    """Read ``n`` relation cells from the start of ``rest``; returns (cells, remainder, complete)."""
    cells: list[str] = []
    pos = 0
    while len(cells) < n:
        while pos < len(rest) and rest[pos] in " \t":
            pos += 1
        if pos >= len(rest):
            return cells, "", False
        m = REL.match(rest, pos)
        if not m and (rest[pos].isdigit() or rest.startswith("N/A", pos)):
            raise ParseError(f"line {lineno}: row has {len(cells)} cells, the header has {n} columns")
        if not m:
            raise ParseError(f"line {lineno}: cell {len(cells) + 1} {rest[pos:pos + 12].strip()!r} is not a "
                             f"topology relation (X, NV#, PIX, PXB, PHB, NODE, SYS)")
        cells.append(m.group(0))
        pos = m.end()
    return cells, rest[pos:], True


def _affinity(values: list[str], columns: list[str], label: str, warnings: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    if not values:
        return out
    if len(values) != len(columns):
        warnings.append(f"{label}: {len(values)} values for {len(columns)} affinity columns; affinity not read")
        return out
    for col, val in zip(columns, values, strict=False):
        v = None if val.upper() in ("N/A", "[N/A]") else val
        if v is not None:
            pat = _CPU_LIST if col == "CPU Affinity" else _NUMA
            if not pat.match(v):
                raise ParseError(f"{label}: {col} value {val!r} is not a CPU/NUMA list")
        out[col] = v
    return out


_PROMPT = re.compile(r"^(?:\S*[$#>%]\s|\(\S+\)\s|PS [A-Z]:\\)")  # "$ cmd", "root@h:~# cmd", "(env) ...", "PS C:\>"


def parse_topo_matrix(text: str) -> TopoMatrix:
    """Parse the text of `nvidia-smi topo -m` into a :class:`TopoMatrix`.

    Accepts driver formats from the old CPU-Affinity-only layout (NICs named mlx5_N in the
    header) to R5xx (NICn + NIC Legend, NUMA Affinity, GPU NUMA ID), tabs or spaces, ANSI
    codes and glued columns. Leading prose lines before the header are ignored.

    Raises ParseError with a one-line reason when the text is not a topo matrix (including
    `nvidia-smi topo -p2p` output), when a row cannot be read, when the diagonal is not X,
    an off-diagonal cell is X, or the matrix is not symmetric.
    """
    if not isinstance(text, str):
        raise ParseError("input is not text")
    clean = strip_ansi(text.replace("\r\n", "\n").replace("\r", "\n"))
    if _P2P_LEGEND.search(clean):
        raise ParseError("this is `nvidia-smi topo -p2p` output (OK/CNS/GNS legend), not `nvidia-smi topo -m`")
    lines = clean.split("\n")
    hdr, labels, columns = _find_header(lines)
    if len(set(labels)) != len(labels):
        raise ParseError(f"line {hdr + 1}: a column label appears twice")
    n = len(labels)
    kinds: dict[str, Literal["gpu", "nic"]] = {lab: ("gpu" if re.fullmatch(r"GPU\d+", lab) else "nic")
                                               for lab in labels}
    first_nic = next((k for k, lab in enumerate(labels) if kinds[lab] == "nic"), n)
    if any(kinds[lab] == "gpu" for lab in labels[first_nic:]):
        raise ParseError(f"line {hdr + 1}: a GPU column after a NIC column")
    matrix: list[list[str | None]] = [[None] * n for _ in range(n)]
    info = {lab: TopoDeviceInfo(name=lab, kind=kinds[lab], nic_name=lab if kinds[lab] == "nic" and not
                                re.fullmatch(r"NIC\d+", lab) else None) for lab in labels}
    warnings: list[str] = []
    seen: list[str] = []
    truncated = False
    last = hdr
    body = lines[hdr + 1:]
    for off, line in enumerate(body):
        lineno = hdr + 2 + off
        stripped = line.strip()
        if not stripped:
            if seen:
                break  # the blank line before the Legend ends the matrix
            continue
        first = stripped.split()[0]
        label = next((lab for lab in sorted(labels, key=len, reverse=True)
                      if stripped.startswith(lab) and (len(stripped) == len(lab) or not
                                                       (stripped[len(lab)].isalnum() or stripped[len(lab)] == "_"))),
                     None)
        if label is None:
            if first.startswith("Legend") or len(seen) == n:
                break  # the Legend, or whatever the paste has after the last row (the next command's output)
            if seen and _PROMPT.match(stripped):
                truncated = True  # the next command of a pasted session: the rows after this one are not in it
                warnings.append(f"the matrix stops after row {seen[-1]}: the next line is a shell prompt")
                break
            if seen:
                raise ParseError(f"line {lineno}: {first!r} is not a device of the header ({', '.join(labels)})")
            raise ParseError(f"line {lineno}: expected the row of {labels[0]}, found {stripped[:40]!r}")
        expected = labels[len(seen)] if len(seen) < n else None
        if label != expected:
            raise ParseError(f"line {lineno}: row {label} where {expected or 'the end of the matrix'} was expected")
        cells, rest, complete = _row_cells(stripped[len(label):], n, lineno)
        if not complete:
            tail = [ln for ln in body[off + 1:] if ln.strip()]
            if tail:
                raise ParseError(f"line {lineno}: row {label} has {len(cells)} cells, the header has {n}")
            truncated = True
            warnings.append(f"row {label} is cut off after {len(cells)} of {n} cells (paste ends there); ignored")
            break
        i = labels.index(label)
        matrix[i] = list(cells)
        vals = rest.split()
        aff = _affinity(vals, columns, label, warnings)
        info[label] = info[label].model_copy(update={
            "cpu_affinity": aff.get("CPU Affinity"), "numa_affinity": aff.get("NUMA Affinity"),
            "gpu_numa_id": aff.get("GPU NUMA ID")})
        seen.append(label)
        last = lineno
    if not seen:
        raise ParseError(f"line {hdr + 1}: header found but no matrix rows follow it")
    missing = labels[len(seen):]
    if missing:
        truncated = True
        tail = [ln for ln in lines[last:] if ln.strip()]
        if any(ln.strip().startswith(("Legend", "NIC Legend")) for ln in tail):
            raise ParseError(f"rows {', '.join(missing)} are missing although the Legend follows")
        warnings.append(f"rows not captured (paste cut off): {', '.join(missing)}")
    for i, a in enumerate(labels):
        if matrix[i][0] is None:
            continue
        for j, b in enumerate(labels):
            cell = matrix[i][j]
            if (i == j) != (cell == "X"):
                raise ParseError(f"row {a}, column {b}: {cell!r} " + ("on the diagonal (must be X)" if i == j else
                                                                       "is X off the diagonal"))
            other = matrix[j][i]
            if other is not None and _norm(other) != _norm(cell):
                raise ParseError(f"matrix not symmetric: {a}->{b} is {cell} but {b}->{a} is {other}")
    legend = _nic_legend(lines)
    for nic, dev in legend.items():
        if nic in info and info[nic].kind == "nic":
            info[nic] = info[nic].model_copy(update={"nic_name": dev})
    extra = sorted(set(legend) - {lab for lab in labels if kinds[lab] == "nic"})
    if extra:
        warnings.append(f"NIC Legend names {', '.join(extra)} that are not matrix columns")
    unnamed = [lab for lab in labels if kinds[lab] == "nic" and info[lab].nic_name is None]
    if unnamed and legend:
        warnings.append(f"NIC Legend does not name {', '.join(unnamed)}")
    return TopoMatrix(devices=labels, matrix=matrix, info=info, columns=columns, nic_legend=legend,
                      truncated=truncated, missing_rows=missing, warnings=warnings)


def _nic_legend(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    in_legend = False
    for line in lines:
        s = line.strip()
        if s.startswith("NIC Legend"):
            in_legend = True
            continue
        if in_legend:
            m = _LEGEND_ENTRY.match(line)
            if m:
                out[m.group(1)] = m.group(2)
            elif s:
                in_legend = False
    return out
