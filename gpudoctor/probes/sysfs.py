"""Small, safe readers for /proc and /sys files (None instead of an exception)."""
from __future__ import annotations

import os


def read_text(path: str, limit: int = 1 << 20) -> str | None:
    """Return the file's text (at most ``limit`` bytes), stripped; None if unreadable."""
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return None


def read_int(path: str) -> int | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text.split()[0], 0) if text else None
    except ValueError:
        return None


def exists(path: str) -> bool:
    try:
        return os.path.exists(path)
    except OSError:
        return False
