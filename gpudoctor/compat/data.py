"""Rule data (thresholds and tables) from the ``rules/`` TOML files.

In a wheel they live in ``gpudoctor/_rules_data``; in a source checkout in the
repository's top-level ``rules/``. A site profile can override thresholds with
``GPUDOCTOR_RULES_DIR`` pointing to a folder with files of the same names.
"""
from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def data_dirs() -> list[Path]:
    """Folders searched for rule data, highest priority first."""
    dirs = []
    if os.environ.get("GPUDOCTOR_RULES_DIR"):
        dirs.append(Path(os.environ["GPUDOCTOR_RULES_DIR"]))
    pkg = Path(__file__).resolve().parent.parent
    dirs += [pkg / "_rules_data", pkg.parent / "rules"]
    return [d for d in dirs if d.is_dir()]


@functools.cache
def load(name: str) -> dict[str, Any]:
    """Parse ``<name>.toml`` from the first data folder that has it.

    Raises FileNotFoundError when no folder has it (a broken install).
    """
    for d in data_dirs():
        path = d / f"{name}.toml"
        if path.is_file():
            with open(path, "rb") as fh:
                return tomllib.load(fh)
    raise FileNotFoundError(f"rule data {name}.toml not found in {[str(d) for d in data_dirs()]}")


def threshold(section: str, key: str = "value") -> Any:
    """A value from ``thresholds.toml``: ``threshold('host.cores_per_gpu', 'min')``."""
    node: Any = load("thresholds")
    for part in section.split("."):
        node = node[part]
    return node[key]
