"""Rule data (thresholds and tables) from the ``rules/`` TOML files.

In a wheel they live in ``gpudoctor/_rules_data``; in a source checkout in the
repository's top-level ``rules/``. A site profile can override them with
``GPUDOCTOR_RULES_DIR`` pointing to a folder with files of the same names: each is laid over the shipped
file (:func:`merge`: only the keys and entries it gives change, so a profile can hold one threshold or one
added signature).
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
        _parse_all(override)
        dirs.append(Path(override))
    return dirs + _shipped_dirs()


@functools.cache
def _parse_all(override: str) -> None:
    """Read every rule data file of the override folder once, so that a broken one is an error at the first use of
    any rule data, not only when a rule happens to need that file (a check without a kernel log reads no xid.toml)."""
    known = {p.name for d in _shipped_dirs() for p in d.glob("*.toml")}
    for p in sorted(Path(override).glob("*.toml")):
        if p.name in known:
            _read(p)


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

    The shipped file with the override's file of the same name laid over it (:func:`merge`). Raises
    FileNotFoundError when no folder has it (a broken install), RulesDataError for an override that is not valid
    TOML, not a folder, or whose result is not of the file's shape (compat/schema.py: a signature without a regex,
    ...).
    """
    shipped = _shipped_dirs()
    base = next((d / f"{name}.toml" for d in shipped if (d / f"{name}.toml").is_file()), None)
    override = next((d / f"{name}.toml" for d in data_dirs() if d not in shipped and (d / f"{name}.toml").is_file()),
                    None)
    if base is None and override is None:
        raise FileNotFoundError(f"rule data {name}.toml not found in {[str(d) for d in data_dirs()]}")
    doc = _read(base) if base is not None else {}
    if override is not None:
        site = _read(override)
        wrong, unknown = _mismatches(doc, site)
        if wrong:
            more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
            raise RulesDataError(f"{override}: {wrong[0]}{more}")
        if unknown:
            _warn_unknown_keys(str(override), tuple(unknown))
        doc = merge(doc, site)
        from gpudoctor.compat.schema import AFTER_MERGE

        if name in AFTER_MERGE:
            AFTER_MERGE[name](doc, site)
        _check_override(name, override, _site_view(doc, site), doc)
    return doc


def _kind(v: Any) -> str:
    return "a number" if isinstance(v, (int, float)) and not isinstance(v, bool) else \
        {bool: "true or false", str: "a string", list: "a list", dict: "a table"}.get(type(v), type(v).__name__)


def _mismatches(shipped: Any, site: Any, path: str = "") -> tuple[list[str], list[str]]:
    """(values of ``site`` whose type differs from the shipped one at the same key, keys the shipped file does not
    have): a threshold given as a string would make its rule fail, a misspelt key would be ignored. Tables keyed by
    numbers (rules/xid.toml's Xids) and arrays of entries may grow; their entries are not compared."""
    wrong: list[str] = []
    unknown: list[str] = []
    if not isinstance(shipped, dict) or not isinstance(site, dict):
        return wrong, unknown
    numbered = bool(shipped) and all(str(k).isdigit() for k in shipped)
    for key, val in site.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in shipped:
            if not numbered:
                unknown.append(where)
            continue
        cur = shipped[key]
        if isinstance(cur, dict) and isinstance(val, dict):
            w, u = _mismatches(cur, val, where)
            wrong += w
            unknown += u
        elif _kind(cur) != _kind(val) and not (isinstance(cur, list) and isinstance(val, list)):
            wrong.append(f"{where} = {val!r}: expected {_kind(cur)}, as in the shipped file ({cur!r})"[:300])
    return wrong, unknown


@functools.cache
def _warn_unknown_keys(path: str, keys: tuple[str, ...]) -> None:
    """One warning per override file naming keys the shipped file does not have (a misspelt key is ignored)."""
    sys.stderr.write(f"gpudoctor: warning: {path}: {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''} "
                     f"{'is' if len(keys) == 1 else 'are'} not in the shipped file of that name (a misspelt key is "
                     "ignored)\n")


def _site_view(merged: dict[str, Any], site: dict[str, Any]) -> dict[str, Any]:
    """The override's own entries as they are after the merge, in the override's order (what its checker judges:
    a site entry that changes one key of a shipped signature is complete; positions are those of the site's file)."""
    view: dict[str, Any] = {}
    for key, val in site.items():
        k = _entry_key(val) if isinstance(val, list) else None
        if k is None or not isinstance(merged.get(key), list):
            view[key] = merged.get(key, val)
            continue
        by_key = {e[k]: e for e in merged[key]}
        view[key] = [by_key.get(e[k], e) for e in val]
    return view


def _read(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        try:
            return tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:  # an override edited by hand (the shipped files are tested)
            raise RulesDataError(f"{path}: not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:  # saved in another encoding (Latin-1, UTF-16): TOML is UTF-8
            raise RulesDataError(f"{path}: not UTF-8 text (TOML files are UTF-8): {exc.reason} at byte "
                                 f"{exc.start}") from None


#: the keys that name an entry of an array of tables, in order of preference: an override's entry with the same
#: value replaces (is merged onto) the shipped one, a new value is added
ENTRY_KEYS = ("id", "regex", "name")


def merge(shipped: dict[str, Any], site: dict[str, Any]) -> dict[str, Any]:
    """``site`` (an override file) laid over ``shipped``: tables merge key by key, arrays of tables merge entry by
    entry (by the first of ENTRY_KEYS every entry of both has: a site's [[signature]] with a shipped id changes only
    the keys it gives, one with a new id is added), any other value of the site replaces the shipped one."""
    out = dict(shipped)
    for key, val in site.items():
        cur = out.get(key)
        if isinstance(cur, dict) and isinstance(val, dict):
            out[key] = merge(cur, val)
        elif isinstance(cur, list) and isinstance(val, list) and _entry_key(cur + val):
            k = _entry_key(cur + val)
            index = {e[k]: i for i, e in enumerate(cur)}
            merged = list(cur)
            for e in val:
                if e[k] in index:
                    merged[index[e[k]]] = merge(merged[index[e[k]]], e)
                else:
                    index[e[k]] = len(merged)
                    merged.append(e)
            out[key] = merged
        else:
            out[key] = val
    return out


def _entry_key(items: list[Any]) -> str | None:
    if not items or not all(isinstance(e, dict) for e in items):
        return None
    return next((k for k in ENTRY_KEYS if all(isinstance(e.get(k), (str, int)) for e in items)), None)


def _check_override(name: str, path: Path, doc: dict[str, Any], merged: dict[str, Any]) -> None:
    """Raise RulesDataError naming ``path`` and the first problems compat/schema.py finds in an override file's
    entries (``doc``: them, merged onto the shipped ones; ``merged``: the whole result, for the ids they may name)."""
    from gpudoctor.compat.schema import CHECKERS

    check = CHECKERS.get(name)
    problems = check(doc, merged) if check is not None else []
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise RulesDataError(f"{path}: {'; '.join(problems[:3])}{more}")


def threshold(section: str, key: str = "value") -> Any:
    """A value from ``thresholds.toml``: ``threshold('host.cores_per_gpu', 'min')``."""
    node: Any = load("thresholds")
    for part in section.split("."):
        node = node[part]
    return node[key]
