"""Regenerate rules/cuda_errors.toml's rows: every cudaError_t name and message from a libcudart.

Usage (no GPU needed; cudaGetErrorName/cudaGetErrorString are pure lookups)::

    pip download --no-deps nvidia-cuda-runtime-cu12 -d /tmp/cudart && cd /tmp/cudart && unzip -q *.whl
    python scripts/cuda_error_table.py /tmp/cudart/nvidia/cuda_runtime/lib/libcudart.so.12

Prints ``code<TAB>name<TAB>message`` for every code 0..1000 the runtime knows; the ``signature`` links in the
TOML are kept by hand.
"""
from __future__ import annotations

import ctypes
import sys


def rows(lib_path: str) -> list[tuple[int, str, str]]:
    lib = ctypes.CDLL(lib_path)
    lib.cudaGetErrorName.restype = ctypes.c_char_p
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    out = []
    for code in range(1001):
        name = lib.cudaGetErrorName(code).decode()
        msg = lib.cudaGetErrorString(code).decode()
        if (name == "cudaErrorUnknown" and code != 999) or "unrecognized error code" in msg:
            continue
        out.append((code, name, msg))
    return out


if __name__ == "__main__":
    for code, name, msg in rows(sys.argv[1]):
        print(code, name, msg, sep="\t")
