"""Version helpers shared by rules: driver versions, CUDA versions, compute capabilities."""
from __future__ import annotations

import re
from collections.abc import Sequence


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


def visible_device_count(cuda_visible_devices: str | None, nvml_count: int,
                         uuids: Sequence[str | None] | None = None) -> int:
    """How many GPUs CUDA exposes under ``CUDA_VISIBLE_DEVICES`` given NVML's count (see :func:`visible_devices`)."""
    return visible_devices(cuda_visible_devices, nvml_count, uuids)[0]


def visible_devices(cuda_visible_devices: str | None, nvml_count: int,
                    uuids: Sequence[str | None] | None = None) -> tuple[int, str | None]:
    """(GPUs CUDA exposes under ``CUDA_VISIBLE_DEVICES``, why the list stops early or None).

    CUDA reads the comma list up to the first invalid entry (an index past the last GPU, a repeat, a UUID no
    GPU has, anything else); an empty value hides every GPU. Entries may be indices or ``GPU-<uuid>`` /
    ``MIG-<uuid>``; a GPU UUID may be abbreviated to a prefix that names one GPU. ``uuids`` are NVML's GPU UUIDs
    (``GPU-...``); when any is unknown, GPU-/MIG- entries are taken as valid (they cannot be checked).
    Source: CUDA C Programming Guide, "CUDA Environment Variables".
    """
    if cuda_visible_devices is None:
        return nvml_count, None
    known = [u.lower() for u in uuids or [] if u]
    checkable = bool(uuids) and len(known) == len(uuids or [])
    count = 0
    seen: set[str] = set()
    for raw in cuda_visible_devices.split(","):
        item = raw.strip()
        if not item:
            return count, (None if count == 0 and not cuda_visible_devices.strip() else
                           "an empty entry ends the list")
        if item.isdigit():
            if int(item) >= nvml_count:
                return count, f"{item!r} is past the last GPU index ({nvml_count - 1})"
            key = known[int(item)] if checkable and int(item) < len(known) else str(int(item))
        elif item.upper().startswith("GPU-") and checkable:
            hits = [u for u in known if u.startswith(item.lower())]
            if len(hits) != 1:
                what = "matches no GPU's UUID" if not hits else "matches more than one GPU's UUID"
                return count, f"{item!r} {what} (NVML: {', '.join(u for u in uuids or [] if u)})"
            key = hits[0]
        elif item.upper().startswith(("GPU-", "MIG-")):
            key = item.lower()
        else:
            return count, f"{item!r} is neither a GPU index nor a GPU-/MIG- UUID"
        if key in seen:
            return count, f"{item!r} repeats an earlier entry"
        seen.add(key)
        count += 1
    return count, None
