"""LD_LIBRARY_PATH probe: cuDNN / NCCL / libcuda files that the dynamic loader would find before the
torch wheel's own copies (LD_LIBRARY_PATH is searched before a library's RUNPATH).

Cheap and safe: it lists directories and reads symlink targets; it never dlopens anything in
gpudoctor's process. Source: ld.so(8) search order (LD_LIBRARY_PATH before DT_RUNPATH).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Literal

from gpudoctor.facts.model import LibPathFacts, SharedLibrary

LibKind = Literal["cudnn", "nccl", "cuda"]  # SharedLibrary.kind
PATTERNS: dict[LibKind, re.Pattern[str]] = {
    "cudnn": re.compile(r"^libcudnn\.so(?:\.(\d+(?:\.\d+)*))?$"),
    "nccl": re.compile(r"^libnccl\.so(?:\.(\d+(?:\.\d+)*))?$"),
    "cuda": re.compile(r"^libcuda\.so(?:\.(\d+(?:\.\d+)*))?$"),
}
MAX_ENTRIES = 20000  # per directory: a huge directory is not a library directory


def _version_of(name: str, kind: LibKind) -> str | None:
    m = PATTERNS[kind].match(name)
    return m.group(1) if m else None


def scan_dirs(dirs: Iterable[str], listdir: Callable[[str], list] = os.listdir,
              realpath: Callable[[str], str] = os.path.realpath) -> list[SharedLibrary]:
    """The cuDNN / NCCL / libcuda main libraries in ``dirs`` (in search order), one per directory and
    kind, with the most specific version seen (``libcudnn.so.9.1.0`` beats ``libcudnn.so.9``; a bare
    ``libcudnn.so`` symlink is resolved). Unreadable or missing directories are skipped."""
    out: list[SharedLibrary] = []
    seen_dirs = set()
    for d in dirs:
        if not d or d in seen_dirs:
            continue
        seen_dirs.add(d)
        try:
            names = listdir(d)
        except OSError:
            continue
        if len(names) > MAX_ENTRIES:
            continue
        best: dict[LibKind, tuple[int, str, str | None]] = {}
        for name in names:
            for kind, pat in PATTERNS.items():
                m = pat.match(name)
                if not m:
                    continue
                path = os.path.join(d, name)
                version = m.group(1)
                if version is None or version.count(".") == 0:
                    target = os.path.basename(realpath(path))
                    resolved = _version_of(target, kind)
                    if resolved and (version is None or len(resolved) > len(version)):
                        version = resolved
                rank = version.count(".") + 1 if version else 0
                if kind not in best or rank > best[kind][0]:
                    best[kind] = (rank, path, version)
        for kind in PATTERNS:  # cudnn, nccl, cuda
            if kind in best:
                _, path, version = best[kind]
                out.append(SharedLibrary(kind=kind, path=path, directory=d, version=version))
    return out


def probe_libpath(_opts=None, environ=None) -> LibPathFacts:
    env = os.environ if environ is None else environ
    dirs = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    return LibPathFacts(ld_library_path=dirs, libraries=scan_dirs(dirs))
