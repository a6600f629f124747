"""Torch pins for ``gpudoctor cuda-version-check``: from ``--torch 2.5.1+cu124`` or read from a
requirements file, pyproject.toml or a lock file (uv.lock, poetry.lock, pdm.lock).

A pin is an exact version; its CUDA variant is the local suffix (``+cu124``), else the PyTorch index
the file installs from (``--index-url https://download.pytorch.org/whl/cu124``, a uv / Poetry / PDM
source), else None = the PyPI wheel with that release's default CUDA. Any problem is a
:class:`PinError` (the CLI prints it on one line and exits 2).
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from urllib.parse import unquote

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COMPANIONS = ("torchvision", "torchaudio")
_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/|test/)?(cu\d+|cpu|rocm[\d.]+|xpu)\b")
_VERSION = re.compile(r"^\d+(?:\.\d+){1,3}(?:(?:a|b|rc|\.dev|\.post)\d+)*(?:\+[A-Za-z0-9.]+)?$")
MAX_BYTES = 8 * 1024 * 1024


class PinError(Exception):
    """Bad input: unparseable or inexact pin, missing or unreadable file, no torch in the file."""


@dataclass
class TorchPin:
    """One torch build to check. ``variant``: 'cu124', 'cpu', 'rocm6.2' or None (PyPI default)."""

    version: str
    variant: str | None = None
    origin: str = "--torch"
    file: str | None = None
    line: int | None = None
    companions: dict = field(default_factory=dict)   # torchvision / torchaudio -> version

    @property
    def public(self) -> str:
        return self.version.split("+", 1)[0]

    @property
    def label(self) -> str:
        return f"torch {self.public}+{self.variant}" if self.variant else f"torch {self.public} (PyPI)"


def variant_from_index(url: str | None) -> str | None:
    """'https://download.pytorch.org/whl/cu124' -> 'cu124'; other URLs -> None."""
    m = _INDEX.search(url or "")
    return m.group(1) if m else None


def _split_local(version: str) -> tuple[str, str | None]:
    pub, _, local = version.partition("+")
    return pub, (local or None)


def parse_pin(text: str, origin: str = "--torch") -> TorchPin:
    """'2.5.1+cu124', '2.5.1', 'torch==2.5.1+cu124' -> TorchPin. Raises PinError when not an exact version."""
    s = text.strip()
    m = re.match(r"^torch\s*(===?)\s*(\S+)$", s, re.I)
    if m:
        s = m.group(2)
    if not _VERSION.match(s):
        raise PinError(f"{origin}: cannot read a torch version from {text!r} (expected e.g. 2.5.1 or 2.5.1+cu124)")
    pub, local = _split_local(s)
    _check_variant(local, text, origin)
    return TorchPin(version=s, variant=local.lower() if local else None, origin=origin)


def _check_variant(local: str | None, text: str, origin: str) -> None:
    """A '+cuXYZ' suffix must name a CUDA major that exists (10-13 today, from rules/compat_cuda.toml)."""
    m = re.fullmatch(r"cu(\d{2,3})", (local or "").lower())
    if not m:
        return
    from gpudoctor.compat.tables import toolkits

    digits = m.group(1)
    major = int(digits[:-1])
    known = sorted({int(str(t.version).split(".")[0]) for t in toolkits()})
    if major not in known:
        raise PinError(f"{origin}: {text!r}: no CUDA {major}.x exists (CUDA majors in gpudoctor's table: "
                       f"{', '.join(map(str, known))}); expected e.g. +cu124 or +cu130")


def _exact(req, where: str) -> str:
    """The version of an exact specifier (==X / ===X, no wildcard); PinError otherwise."""
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    if req.url:
        m = re.search(r"/(torch|torchvision|torchaudio)-([^-/]+)-", unquote(req.url))
        if m:
            return m.group(2)
    raise PinError(f"{where}: {req.name} is not pinned to one version ({str(req)!r}); "
                   f"pin it exactly (==) or check a lock file")


def _requirement(text: str):
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _read(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise PinError(f"{path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES or b"\x00" in raw[:8192]:
        raise PinError(f"{path}: not a requirements / project / lock file")
    return raw.decode("utf-8", "replace")


def _from_requirements(path: str, seen: set, state: dict) -> None:
    if os.path.abspath(path) in seen:
        return
    seen.add(os.path.abspath(path))
    text = _read(path)
    logical: list[tuple[int, str]] = []
    buf, start = "", 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not buf:
            start = no
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            logical.append((start, buf.strip()))
        buf = ""
    for no, line in logical:
        opt = re.match(r"^(-r|--requirement|-c|--constraint)\s*=?\s*(\S+)", line)
        if opt:
            _from_requirements(os.path.join(os.path.dirname(path), opt.group(2)), seen, state)
            continue
        opt = re.match(r"^(-i|--index-url|--extra-index-url|-f|--find-links)\s*=?\s*(\S+)", line)
        if opt:
            v = variant_from_index(opt.group(2))
            if v:
                state["index_variant"] = v
            continue
        if line.startswith("-"):
            continue
        req = _requirement(line)
        if req is None:
            continue
        name = req.name.lower()
        if name == "torch" or name in COMPANIONS:
            state["found"].append((name, _exact(req, f"{path}:{no}"), path, no))


def _pep508_list(items, where: str, state: dict, path: str) -> None:
    for item in items or []:
        if not isinstance(item, str):
            continue
        req = _requirement(item)
        if req is not None and (req.name.lower() == "torch" or req.name.lower() in COMPANIONS):
            state["found"].append((req.name.lower(), _exact(req, f"{path} {where}"), path, None))


def _poetry_version(spec, where: str) -> tuple[str | None, str | None]:
    """(exact version, source name) of a Poetry dependency spec."""
    if isinstance(spec, list):
        for s in spec:
            v, src = _poetry_version(s, where)
            if v:
                return v, src
        return None, None
    src = None
    if isinstance(spec, dict):
        src = spec.get("source")
        spec = spec.get("version")
    if not isinstance(spec, str):
        return None, src
    s = spec.strip()
    s = s[2:].strip() if s.startswith("==") else s
    if not _VERSION.match(s):
        raise PinError(f"{where}: torch is not pinned to one version ({spec!r}); pin it exactly or check poetry.lock")
    return s, src


def _from_pyproject(path: str, state: dict) -> None:
    try:
        doc = tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError as exc:
        raise PinError(f"{path}: not valid TOML ({exc})") from None
    proj = doc.get("project", {})
    _pep508_list(proj.get("dependencies"), "[project.dependencies]", state, path)
    for group, items in (proj.get("optional-dependencies") or {}).items():
        _pep508_list(items, f"[project.optional-dependencies.{group}]", state, path)
    for group, items in (doc.get("dependency-groups") or {}).items():
        _pep508_list(items, f"[dependency-groups.{group}]", state, path)
    tool = doc.get("tool", {})
    uv = tool.get("uv", {})
    uv_index = {i.get("name"): i.get("url") for i in uv.get("index", []) if isinstance(i, dict)}
    src = (uv.get("sources") or {}).get("torch")
    for s in (src if isinstance(src, list) else [src] if src else []):
        v = variant_from_index(uv_index.get(s.get("index"))) if isinstance(s, dict) else None
        if v:
            state["index_variant"] = v
            break
    poetry = tool.get("poetry", {})
    sources = {s.get("name"): s.get("url") for s in poetry.get("source", []) if isinstance(s, dict)}
    sources.update({s.get("name"): s.get("url") for s in tool.get("pdm", {}).get("source", []) if isinstance(s, dict)})
    deps = [("tool.poetry.dependencies", poetry.get("dependencies", {}))]
    for g, body in (poetry.get("group") or {}).items():
        deps.append((f"tool.poetry.group.{g}.dependencies", body.get("dependencies", {})))
    for where, table in deps:
        for name, spec in table.items():
            if name.lower() == "torch" or name.lower() in COMPANIONS:
                v, src_name = _poetry_version(spec, f"{path} [{where}]")
                if v:
                    state["found"].append((name.lower(), v, path, None))
                    iv = variant_from_index(sources.get(src_name))
                    if iv and name.lower() == "torch":
                        state["index_variant"] = iv
    if not state["index_variant"]:
        for url in list(sources.values()) + list(uv_index.values()):
            v = variant_from_index(url)
            if v:
                state["index_variant"] = v


def _from_lock(path: str, state: dict) -> None:
    try:
        doc = tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError as exc:
        raise PinError(f"{path}: not valid TOML ({exc})") from None
    for pkg in doc.get("package", []):
        name = str(pkg.get("name", "")).lower()
        if name != "torch" and name not in COMPANIONS:
            continue
        version = str(pkg.get("version", ""))
        src = pkg.get("source", {}) or {}
        url = src.get("registry") or src.get("url") or src.get("reference") or ""
        variant = variant_from_index(url)
        if "+" not in version:
            for f in pkg.get("files", []) or pkg.get("wheels", []) or []:
                fname = unquote(str(f.get("file") or f.get("url") or f.get("filename") or ""))
                m = re.search(rf"{name}-{re.escape(version)}\+([A-Za-z0-9.]+)-", fname)
                if m:
                    version = f"{version}+{m.group(1)}"
                    break
        if not _VERSION.match(version):
            raise PinError(f"{path}: cannot read the {name} version {version!r}")
        if variant and "+" not in version:
            version = f"{version}+{variant}"
        state["found"].append((name, version, path, None))


def pins_from_file(path: str) -> list[TorchPin]:
    """Every torch pin in ``path`` (one per distinct torch version; lock files can hold several), with the
    torchvision / torchaudio versions found next to it. Raises PinError (missing file, no torch, inexact pin)."""
    if not os.path.isfile(path):
        raise PinError(f"{path}: no such file")
    base = os.path.basename(path).lower()
    state: dict = {"found": [], "index_variant": None}
    if base.endswith(".lock"):
        _from_lock(path, state)
    elif base.endswith(".toml"):
        _from_pyproject(path, state)
    else:
        _from_requirements(path, set(), state)
    torches = [(v, p, n) for name, v, p, n in state["found"] if name == "torch"]
    if not torches:
        raise PinError(f"{path}: no torch requirement found")
    comps: dict[str, str] = {}
    for name, v, _, _ in state["found"]:
        if name in COMPANIONS:
            comps.setdefault(name, v)
    out: list[TorchPin] = []
    for v, p, n in torches:
        pin = parse_pin(v, origin=f"{p}:{n}" if n else p)
        if pin.variant is None and state["index_variant"]:
            pin.variant = state["index_variant"]
        pin.file, pin.line, pin.companions = p, n, dict(comps)
        if all(x.version != pin.version or x.variant != pin.variant for x in out):
            out.append(pin)
    return out
