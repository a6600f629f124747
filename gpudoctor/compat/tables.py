"""Typed access to the compatibility tables in ``rules/compat_cuda.toml``, ``compat_gpus.toml`` and
``compat_torch.toml`` (sources: the ``[sources]`` table of each file; research notes in
docs/compat-data.md). Versions are strings ("12.4", "550.54.14"); compute capabilities "major.minor".

Every row keeps its ``status`` ("verified", "secondary", "unverified", "derived"): callers show it
next to any verdict that rests on a row that is not "verified".
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from gpudoctor.compat import data
from gpudoctor.compat.versions import cc_tuple, vtuple, vtuple_req


def sources(file: str, keys) -> list[str]:
    """The URLs (or ``repo:`` paths) of the source keys of one row of ``file``.

    Raises KeyError for a key missing from the file's [sources] table (a broken data file; a test
    checks every key resolves).
    """
    table = data.load(file).get("sources", {})
    if isinstance(keys, str):
        keys = [keys]
    return [table[k] for k in keys]


# ----------------------------------------------------------------------------------------------- CUDA
@dataclass(frozen=True)
class ToolkitRow:
    version: str            # "12.4"
    update: str             # "GA", "Update 1"
    min_driver: str | None
    branch: str | None
    status: str
    sources: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class MvcRow:
    major: int
    min_driver: str
    status: str
    sources: tuple[str, ...]


@functools.cache
def toolkits() -> tuple[ToolkitRow, ...]:
    rows = data.load("compat_cuda").get("toolkit", [])
    return tuple(ToolkitRow(version=r["version"], update=r.get("update", "GA"), min_driver=r.get("min_driver"),
                            branch=r.get("branch"), status=r.get("status", "unverified"),
                            sources=tuple(sources("compat_cuda", r.get("source", []))), note=r.get("note", ""))
                 for r in rows)


def minor_of(version: str | None) -> tuple[int, int] | None:
    """'12.4.131' -> (12, 4); '12' -> (12, 0); None/garbage -> None."""
    t = vtuple(version)
    if not t:
        return None
    return (t[0], t[1] if len(t) > 1 else 0)


def minor_req(version: str | None) -> tuple[int, int]:
    """minor_of of a value that must parse (table data, or a version already checked): ValueError otherwise."""
    m = minor_of(version)
    if m is None:
        raise ValueError(f"not a version: {version!r}")
    return m


def toolkit_rows(cuda: str) -> list[ToolkitRow]:
    """Rows of the toolkit minor release ``cuda`` ("12.4" or "12.4.131")."""
    m = minor_of(cuda)
    return [r for r in toolkits() if minor_of(r.version) == m]


def toolkit_min_driver(cuda: str) -> ToolkitRow | None:
    """The row with the lowest Linux x86_64 driver of the minor release ``cuda`` (GA, usually);
    None when the release has no driver row (unknown, or 13.4+ where only a branch is named)."""
    rows = [r for r in toolkit_rows(cuda) if r.min_driver]
    return min(rows, key=lambda r: vtuple_req(r.min_driver)) if rows else None


def driver_max_cuda(driver: str) -> str | None:
    """Highest CUDA minor release ("12.2") whose toolkit driver is <= ``driver`` ("535.274.02").

    This is what the driver supports natively (nvidia-smi's "CUDA Version"), from the toolkit table.
    None when the driver is older than every row.
    """
    d = vtuple(driver)
    if not d:
        return None
    best: tuple[int, int] | None = None
    for r in toolkits():
        if r.min_driver and vtuple_req(r.min_driver) <= d:
            m = minor_req(r.version)
            if best is None or m > best:
                best = m
    return f"{best[0]}.{best[1]}" if best else None


@functools.cache
def driver_branches() -> dict[str, str]:
    """Every driver branch the CUDA table names ("580") -> its lowest release in the table ("580.65.06").

    Releases come from the toolkit rows' ``min_driver`` and the minor-version-compatibility floors
    (rules/compat_cuda.toml); a branch named only by a ``branch = "R615"`` field has no release and is
    absent. A branch ("R580") means "any driver of that branch", so a verdict on it must hold for the
    branch's lowest release: callers judge a branch by this value (issue 15 item 1).
    """
    out: dict[str, str] = {}
    rels = [r.min_driver for r in toolkits() if r.min_driver]
    rels += [str(r.get("min_driver")) for r in data.load("compat_cuda").get("mvc", []) if r.get("min_driver")]
    for rel in rels:
        b = rel.split(".", 1)[0]
        if b not in out or vtuple_req(rel) < vtuple_req(out[b]):
            out[b] = rel
    return out


def branch_floor(branch: str) -> str | None:
    """The lowest release of driver branch ``branch`` ("580" or "R580") in the tables; None if none."""
    return driver_branches().get(branch.strip().lstrip("Rr"))


@functools.cache
def _mvc() -> dict[int, MvcRow]:
    return {
        int(r["major"]): MvcRow(
            major=int(r["major"]),
            min_driver=r["min_driver"],
            status=r.get("status", "unverified"),
            sources=tuple(sources("compat_cuda", r.get("source", []))),
        )
        for r in data.load("compat_cuda").get("mvc", [])
    }


def mvc(major: int) -> MvcRow | None:
    """Minor-version-compatibility floor of a CUDA major (None below CUDA 11: no MVC)."""
    return _mvc().get(int(major))


def mvc_limitations() -> list[dict[str, Any]]:
    return list(data.load("compat_cuda").get("mvc_limitation", []))


def cuda_url(key: str) -> str:
    return sources("compat_cuda", [key])[0]


# ----------------------------------------------------------------------------------------------- GPUs
@dataclass(frozen=True)
class GpuModel:
    name: str
    cc: str
    segment: str
    status: str
    sources: tuple[str, ...]
    alias: str = ""          # the alias that matched
    note: str = ""


@dataclass(frozen=True)
class CcRow:
    cc: str
    arch: str
    first: str | None
    last: str | None
    status: str
    sources: tuple[str, ...]
    note: str = ""


_DROP = {"nvidia", "geforce", "tesla", "quadro"}


def normalize_gpu_name(name: str) -> str:
    """'NVIDIA GeForce RTX 4090' -> 'rtx 4090'; 'A100-SXM4-80GB' -> 'a100 sxm4 80gb'; 'RTX4090' -> 'rtx 4090'."""
    s = re.sub(r"[-_/,()]+", " ", name.lower())
    s = re.sub(r"\b(rtx|gtx)(\d)", r"\1 \2", s)
    words = [w for w in s.split() if w not in _DROP]
    return " ".join(words)


@functools.cache
def _gpu_rows() -> tuple[tuple[str, dict], ...]:
    out = []
    for r in data.load("compat_gpus").get("gpu", []):
        for a in r.get("aliases", []):
            out.append((normalize_gpu_name(a), r))
    return tuple(out)


def gpu_cc(compute_capability: str | None, name: str | None) -> str | None:
    """A GPU's compute capability: NVML's when known, else the GPU table's for its model name (collect_env and
    nvidia-smi tables give only the name); None when neither knows it."""
    if compute_capability:
        return compute_capability
    m = find_gpu(name) if name else None
    return m.cc if m else None


def find_gpu(name: str) -> GpuModel | None:
    """The table's GPU model for ``name`` (an NVML/nvidia-smi name or a user spelling), or None.

    The longest alias whose words begin the normalized name wins, so 'RTX 6000 Ada Generation'
    is the Ada card (8.9) and 'Quadro RTX 6000' the Turing one (7.5).
    """
    words = normalize_gpu_name(name).split()
    if not words:
        return None
    best: tuple[int, str, dict] | None = None
    for alias, row in _gpu_rows():
        aw = alias.split()
        if words[:len(aw)] == aw and (best is None or len(aw) > best[0]):
            best = (len(aw), alias, row)
    if best is None:
        return None
    _, alias, r = best
    return GpuModel(
        name=r["name"],
        cc=r["cc"],
        segment=r.get("segment", "unknown"),
        status=r.get("status", "unverified"),
        sources=tuple(sources("compat_gpus", r.get("source", []))),
        alias=alias,
        note=r.get("note", ""),
    )


@functools.cache
def _cc_rows() -> dict[tuple[int, int], CcRow]:
    out = {}
    for r in data.load("compat_gpus").get("cc", []):
        out[minor_req(r["cc"])] = CcRow(
            cc=r["cc"],
            arch=r.get("arch", ""),
            first=r.get("first"),
            last=r.get("last"),
            status=r.get("status", "unverified"),
            sources=tuple(sources("compat_gpus", r.get("source", []))),
            note=r.get("note", ""),
        )
    return out


def cc_row(cc: str) -> CcRow | None:
    t = cc_tuple(cc)
    return _cc_rows().get(t) if t is not None else None


# ---------------------------------------------------------------------------------------------- torch
@dataclass(frozen=True)
class TorchRelease:
    release: str
    variants: tuple[str, ...]
    experimental: tuple[str, ...]
    unverified_variants: tuple[str, ...]
    pypi_default: str | None
    pypi_default_status: str
    cudnn: dict = field(hash=False, compare=False, default_factory=dict)
    nccl: dict = field(hash=False, compare=False, default_factory=dict)
    nccl_status: str = "unverified"
    torchvision: str | None = None
    torchaudio: str | None = None
    python: str = ""
    status: str = "unverified"
    sources: tuple[str, ...] = ()
    note: str = ""


def variant_cuda(variant: str | None) -> str | None:
    """'cu124' -> '12.4', 'cu118' -> '11.8', 'cu102' -> '10.2', 'cu92' -> '9.2'; other -> None."""
    m = re.fullmatch(r"cu(\d{2,4})", (variant or "").strip().lower())
    if not m:
        return None
    d = m.group(1)
    return f"{int(d[:-1])}.{d[-1]}"


def cuda_variant(cuda: str | None) -> str | None:
    """'12.4' / '12.4.131' -> 'cu124'; None -> None."""
    m = minor_of(cuda)
    return f"cu{m[0]}{m[1]}" if m else None


def release_of(version: str | None) -> str | None:
    """'2.5.1+cu124' -> '2.5'; '2.11.0a0+git' -> '2.11'."""
    m = minor_of(version)
    return f"{m[0]}.{m[1]}" if m else None


@functools.cache
def _releases() -> dict[str, TorchRelease]:
    out = {}
    for r in data.load("compat_torch").get("release", []):
        out[r["release"]] = TorchRelease(
            release=r["release"], variants=tuple(r.get("variants", [])), experimental=tuple(r.get("experimental", [])),
            unverified_variants=tuple(r.get("unverified_variants", [])), pypi_default=r.get("pypi_default"),
            pypi_default_status=r.get("pypi_default_status") or r.get("status", "unverified"),
            cudnn=dict(r.get("cudnn", {})), nccl=dict(r.get("nccl", {})),
            nccl_status=r.get("nccl_status") or r.get("status", "unverified"),
            torchvision=r.get("torchvision"), torchaudio=r.get("torchaudio"), python=r.get("python", ""),
            status=r.get("status", "unverified"), sources=tuple(sources("compat_torch", r.get("source", []))),
            note=r.get("note", ""))
    return out


def torch_release(version: str | None) -> TorchRelease | None:
    """The table row of a torch version ('2.5.1+cu124' -> the 2.5 row), or None when not in the table."""
    rel = release_of(version)
    return _releases().get(rel) if rel else None


@dataclass(frozen=True)
class WheelArch:
    variant: str
    release: str
    arch_list: tuple[str, ...]      # torch.cuda.get_arch_list() spelling: sm_80 ..., compute_120
    status: str
    sources: tuple[str, ...]
    note: str = ""


def _sm(cc: str) -> str:
    t = minor_req(cc)
    return f"{t[0]}{t[1]}"


def wheel_arch(version: str | None, variant: str | None) -> WheelArch | None:
    """Arch list of the official Linux x86_64 wheel ``version`` + ``variant`` (cu126 ...), or None."""
    rel = release_of(version)
    if not rel or not variant:
        return None
    for r in data.load("compat_torch").get("wheel_arch", []):
        if r["variant"] == variant and rel in r.get("releases", []):
            lst = [f"sm_{_sm(c)}" for c in r.get("arch", [])] + [f"compute_{_sm(c)}" for c in r.get("ptx", [])]
            return WheelArch(variant=variant, release=rel, arch_list=tuple(lst), status=r.get("status", "unverified"),
                             sources=tuple(sources("compat_torch", r.get("source", []))), note=r.get("note", ""))
    return None


def torchaudio_stable_abi_since() -> str | None:
    return data.load("compat_torch").get("torchaudio_stable_abi", {}).get("since")


def torch_url(key: str) -> str:
    return sources("compat_torch", [key])[0]


def suggest_variant(driver: str | None = None, driver_cuda: str | None = None,
                    ccs: tuple[str, ...] = (), keep: str | None = None) -> tuple[str, str, str] | None:
    """(release, variant, mode) of the newest table torch wheel that runs on this driver, where mode is
    "native" or "mvc" (minor-version compatibility); within a release a native variant is preferred.
    Experimental variants are skipped, and so are those whose wheel arch list (``wheel_arch``) does not cover one of
    the GPUs' compute capabilities ``ccs`` ("8.0": a cu102 wheel has no sm_80 for an A100). None when no wheel fits or
    the driver is unknown. ``keep``: the installed torch version ("2.2.0+cpu"): its release is tried first, so the fix
    swaps the build variant and leaves the user's pins (torchvision, checkpoints) alone."""
    from gpudoctor.compat.check import CAVEAT, FAIL, PASS, arch_vs_cc, runtime_vs_driver

    def runs_on_gpus(release: str, variant: str) -> bool:
        row = wheel_arch(release, variant)  # not in the table: whether its CUDA toolkit can target the GPU at all
        arch = list(row.arch_list) if row is not None else []
        return not any(arch_vs_cc(arch, cc, variant_cuda(variant)).status == FAIL for cc in ccs)

    if not driver and not driver_cuda:
        return None
    rels = sorted(_releases().values(), key=lambda r: minor_req(r.release), reverse=True)
    if keep:
        mine = [r for r in rels if minor_req(r.release) == minor_req(keep.split("+", 1)[0])]
        rels = mine + [r for r in rels if r not in mine]
    for rel in rels:
        native: list[str] = []
        viaminor: list[str] = []
        for v in rel.variants:
            if v in rel.experimental or not runs_on_gpus(rel.release, v):
                continue
            st = runtime_vs_driver(variant_cuda(v), driver, driver_cuda).status
            (native if st == PASS else viaminor if st == CAVEAT else []).append(v)
        key = lambda v: minor_req(variant_cuda(v))  # noqa: E731
        if native:
            return rel.release, max(native, key=key), "native"
        if viaminor:
            return rel.release, max(viaminor, key=key), "mvc"
    return None
