"""Interactive peer-access checks pasted from a Python session -> {(gpu, peer): can_access}.

Recognises calls of ``cudaDeviceCanAccessPeer(a, b)`` (cuda-python / CUDA samples) and
``torch.cuda.can_device_access_peer(a, b)`` followed, within a few lines, by their result
(``0``/``1``, ``True``/``False``, or a ``(cudaSuccess, 0)`` tuple). Source: CUDA Runtime API,
cudaDeviceCanAccessPeer, https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__PEER.html
"""
from __future__ import annotations

import re

from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean

_CALL = re.compile(r"(?:cudaDeviceCanAccessPeer|can_device_access_peer)\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_RESULT = re.compile(r"^\s*(?:\(?\s*(?:<?cudaError_t\.)?cudaSuccess[^,]*,\s*)?(0|1|True|False)\s*\)?\s*$")


def parse_peer_checks(text: str) -> dict[str, bool]:
    """{'0,1': False, ...} per checked pair. Raises ParseError when no call with a readable result is present."""
    lines = clean(text).split("\n")
    out: dict[str, bool] = {}
    for i, line in enumerate(lines):
        m = _CALL.search(line)
        if not m:
            continue
        for nxt in lines[i + 1:i + 6]:
            if _CALL.search(nxt):
                break
            r = _RESULT.match(nxt.replace(">>>", "").strip()) if not nxt.strip().startswith(">>>") else None
            if r:
                out[f"{m.group(1)},{m.group(2)}"] = r.group(1) in ("1", "True")
                break
    if not out:
        raise ParseError("no peer-access check (cudaDeviceCanAccessPeer / can_device_access_peer) with its result")
    return out
