"""Version helpers shared by rules: driver versions, CUDA versions, compute capabilities."""
from __future__ import annotations

import re


def vtuple(text: str | None) -> tuple[int, ...] | None:
    """'580.159.04' -> (580, 159, 4); '12.4' -> (12, 4); None/garbage -> None."""
    if not text:
        return None
    m = re.match(r"^\s*(\d+(?:\.\d+)*)", str(text))
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def vtuple_req(text: str | None) -> tuple[int, ...]:
    """vtuple of a value that must parse (the compat tables' own data, already-parsed versions):
    raises ValueError instead of returning None (a broken data file; tests load every row)."""
    t = vtuple(text)
    if t is None:
        raise ValueError(f"not a version: {text!r}")
    return t


def cc_tuple(cc: str | None) -> tuple[int, int] | None:
    t = vtuple(cc)
    return (t[0], t[1] if len(t) > 1 else 0) if t else None


def arch_covers(arch_list: list[str], cc: tuple[int, int]) -> tuple[str, str | None]:
    """How a torch build's arch list serves a GPU of compute capability ``cc``.

    Returns (verdict, entry): 'native' (a cubin for this GPU or an older minor of the
    same major, which is binary compatible), 'ptx' (only PTX of an equal or lower
    arch: works after JIT compilation, slow first start), or 'none' ("no kernel
    image is available for execution on the device").
    Source: CUDA C++ Programming Guide, "Binary Compatibility" / "PTX Compatibility";
    arch-specific 'a' cubins run only on that exact arch; family 'f' cubins run on
    later minors of the same major (CUDA 12.9 features).
    """
    major, minor = cc
    best_sm: tuple[tuple[int, int], str] | None = None
    best_ptx: tuple[tuple[int, int], str] | None = None
    for entry in arch_list:
        m = re.match(r"^(sm|compute)_(\d+)(\d)([af]?)$", entry.strip())
        if not m:
            continue
        kind, emaj, emin, suffix = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        key = (emaj, emin)
        if kind == "sm":
            fits = (key == (major, minor)) if suffix == "a" else (emaj == major and emin <= minor)
            if fits and (best_sm is None or key > best_sm[0]):
                best_sm = (key, entry)
        elif key <= (major, minor) and (best_ptx is None or key > best_ptx[0]):
            best_ptx = (key, entry)
    if best_sm:
        return "native", best_sm[1]
    return ("ptx", best_ptx[1]) if best_ptx else ("none", None)


def visible_device_count(cuda_visible_devices: str | None, nvml_count: int) -> int:
    """How many GPUs CUDA exposes under ``CUDA_VISIBLE_DEVICES`` given NVML's count.

    CUDA reads the comma list up to the first invalid entry; an empty value hides
    every GPU. Entries may be indices, ``GPU-<uuid>`` or ``MIG-<uuid>`` prefixes.
    Source: CUDA C Programming Guide, "CUDA Environment Variables".
    """
    if cuda_visible_devices is None:
        return nvml_count
    count = 0
    seen = set()
    for item in cuda_visible_devices.split(","):
        item = item.strip()
        if item.isdigit():
            if int(item) >= nvml_count or item in seen:
                break
        elif not item.startswith(("GPU-", "MIG-")):
            break
        seen.add(item)
        count += 1
    return count
