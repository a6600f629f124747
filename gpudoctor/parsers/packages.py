"""Package lists -> the torch facts they give: ``pip list`` (columns, with or without its header, e.g. through
``| grep torch``), ``pip freeze`` (``name==version``) and ``conda list`` (``# Name  Version  Build  Channel``).

Read: torch's version, its CUDA variant when the list shows it (pip's local version ``2.4.0+cu121`` -> 12.1; conda's
build string ``py3.10_cuda11.8_cudnn8.7.0_0`` -> 11.8, ``cpu_...`` -> a CPU build), torchvision's and torchaudio's
versions. A pip wheel without a local version (the default index's) leaves the CUDA variant unknown.
"""
from __future__ import annotations

import re

from gpudoctor.facts.model import TorchFacts
from gpudoctor.parsers import ParseError

#: a `pip list` / `conda list` / `pip freeze` command line (a prompt optional) or the header of the list
MARK = re.compile(r"^[^\n]*?(?:\$|#|>)?\s*(?:python3? -m )?(?:pip3?|conda|mamba|micromamba) (?:list|freeze)\b"
                  r"|^Package\s+Version\s*$|^# Name\s+Version\s+Build\s+Channel", re.M)
_COLS = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)[ \t]{2,}(\d[^\s]*)(?:[ \t]+(\S+))?(?:[ \t]+(\S+))?[ \t]*$")
_FREEZE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)(?:\[[^\]]*\])?[ \t]*===?[ \t]*(\S+)[ \t]*$")
_TAG = re.compile(r"^\[(?:pip3?|conda)\]\s+")
_CONDA_ROW = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)[ \t]+(\d[^\s]*)(?:[ \t]+(\S+))?(?:[ \t]+(\S+))?[ \t]*$")
SOURCE = "package list (pip list / pip freeze / conda list)"


def package_rows(text: str) -> dict[str, tuple[str, str | None]]:
    """name (lower case, '_' -> '-') -> (version, conda build string or None), for every row of the list."""
    out: dict[str, tuple[str, str | None]] = {}
    for line in text.replace("\r", "").split("\n"):
        s = _TAG.sub("", line.strip())  # collect_env's "[pip3] torch==2.5.1" / "[conda] torch 2.5.1 py3.11_cuda12.1"
        m = _FREEZE.match(s) or _COLS.match(s) or (_CONDA_ROW.match(s) if s != line.strip() else None)
        if m:
            build = m.group(3) if m.re is _COLS and m.lastindex and m.lastindex >= 3 else None
            out.setdefault(m.group(1).lower().replace("_", "-"), (m.group(2), build))
    return out


def looks_like_package_list(text: str) -> bool:
    """A package list: its command line or header, or mostly rows of one (at least 3), among them torch."""
    rows = package_rows(text)
    if MARK.search(text):
        return bool(rows)
    lines = [x for x in text.split("\n") if x.strip()]
    if len(rows) >= 2 and sum(bool(_TAG.match(x.strip())) for x in lines) >= 2:
        return True  # collect_env's "Versions of relevant libraries" block on its own
    return len(rows) >= 3 and len(rows) >= 0.7 * len(lines) and bool({"torch", "pytorch"} & set(rows))


def _cuda_of(version: str, build: str | None) -> tuple[bool, str | None]:
    """(known, CUDA release or None for a CPU build) from a pip local version or a conda build string."""
    m = re.search(r"\+cu(\d+)(\d)\b", version)
    if m:
        return True, f"{m.group(1)}.{m.group(2)}"
    if re.search(r"\+cpu\b", version):
        return True, None
    if build:
        m = re.search(r"cuda(\d+\.\d+)", build)
        if m:
            return True, m.group(1)
        if build.startswith("cpu") or "_cpu_" in build:
            return True, None
    return False, None


def parse_packages(text: str) -> TorchFacts | None:
    """The torch facts of a package list; None when it has no torch (or pytorch) row (a `pip list | grep cudnn`:
    torch's presence is then unknown, not absent). Raises ParseError when the text holds no package row."""
    rows = package_rows(text)
    if not rows:
        raise ParseError("no package rows")
    row = rows.get("torch") or rows.get("pytorch")
    wheels = {k: v[0] for k, v in rows.items() if k.startswith("nvidia-")}
    if row is None:
        if wheels:  # torch itself unknown (a `pip list | grep nvidia`), its CUDA libraries known
            return TorchFacts(source=SOURCE, interpreter="(the environment the package list came from)",
                              nvidia_wheels=wheels)
        return None
    t = TorchFacts(source=SOURCE, interpreter="(the environment the package list came from)")
    t.installed = True
    t.version = row[0]
    known, cuda = _cuda_of(*row)
    if known:
        t.cuda = cuda
    for name in ("torchvision", "torchaudio"):
        if name in rows:
            setattr(t, f"{name}_version", rows[name][0])
    t.nvidia_wheels = wheels
    return t
