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


class RulesDataError(Exception):
    """A rule data override (GPUDOCTOR_RULES_DIR) that cannot be used: not a folder, or a file that is not valid
    TOML. The message is one line naming the path; the CLI prints it and exits 2."""


def _shipped_dirs() -> list[Path]:
    pkg = Path(__file__).resolve().parent.parent
    return [d for d in (pkg / "_rules_data", pkg.parent / "rules") if d.is_dir()]


def data_dirs() -> list[Path]:
    """Folders searched for rule data, highest priority first. Raises RulesDataError when GPUDOCTOR_RULES_DIR is
    set but is not a folder (a typo must not silently fall back to the shipped data)."""
    dirs = []
    override = os.environ.get("GPUDOCTOR_RULES_DIR")
    if override:
        if not os.path.isdir(override):
            raise RulesDataError(f"GPUDOCTOR_RULES_DIR={override}: not a folder "
                                 "(unset it to use the shipped rule data)")
        _warn_unknown_names(override)
        dirs.append(Path(override))
    return dirs + _shipped_dirs()


@functools.cache
def _warn_unknown_names(override: str) -> None:
    """One warning on stderr per override folder listing its .toml files that no rule data file is named like
    (a misspelt name is otherwise ignored without a word)."""
    known = {p.name for d in _shipped_dirs() for p in d.glob("*.toml")}
    odd = sorted(p.name for p in Path(override).glob("*.toml") if p.name not in known)
    if odd and known:
        what = "is not the name of a rule data file and is" if len(odd) == 1 else \
            "are not names of rule data files and are"
        sys.stderr.write(f"gpudoctor: warning: GPUDOCTOR_RULES_DIR={override}: {', '.join(odd)} {what} ignored "
                         f"(known: {', '.join(sorted(known))})\n")


@functools.cache
def load(name: str) -> dict[str, Any]:
    """Parse ``<name>.toml`` from the first data folder that has it.

    Raises FileNotFoundError when no folder has it (a broken install), RulesDataError for an override that is not
    valid TOML, not a folder, or not of the file's shape (compat/schema.py: a signature without a regex, ...).
    """
    shipped = _shipped_dirs()
    for d in data_dirs():
        path = d / f"{name}.toml"
        if path.is_file():
            with open(path, "rb") as fh:
                try:
                    doc = tomllib.load(fh)
                except tomllib.TOMLDecodeError as exc:  # an override edited by hand (the shipped files are tested)
                    raise RulesDataError(f"{path}: not valid TOML: {exc}") from None
            if d not in shipped:
                _check_override(name, path, doc)
            return doc
    raise FileNotFoundError(f"rule data {name}.toml not found in {[str(d) for d in data_dirs()]}")


def _check_override(name: str, path: Path, doc: dict[str, Any]) -> None:
    """Raise RulesDataError naming ``path`` and the first problem compat/schema.py finds in an override file."""
    from gpudoctor.compat.schema import CHECKERS

    check = CHECKERS.get(name)
    problems = check(doc) if check is not None else []
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise RulesDataError(f"{path}: {'; '.join(problems[:3])}{more}")


def threshold(section: str, key: str = "value") -> Any:
    """A value from ``thresholds.toml``: ``threshold('host.cores_per_gpu', 'min')``."""
    node: Any = load("thresholds")
    for part in section.split("."):
        node = node[part]
    return node[key]
