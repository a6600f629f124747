"""Byte units and their labels (standard library only: the confirmation worker imports it in the target
interpreter, which may lack pydantic). ``MiB`` = 2**20 bytes (nccl-tests sizes are powers of two)."""
from __future__ import annotations

MiB = 1024 ** 2
GiB = 1024 ** 3


def fmt_size(n: int) -> str:
    """Bytes as a short human label: 1048576 -> '1 MiB', 438057192 -> '418 MiB'."""
    for unit, mult in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= mult:
            v = n / mult
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 0.05 or v >= 100 else f"{v:.1f} {unit}"
    return f"{n} B"
