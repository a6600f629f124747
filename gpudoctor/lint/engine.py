"""Run the lint rules over files: discovery, parsing, per-line and per-project ignores, workers.

Per-line: ``# gpudoctor: ignore[LNT005]`` (or ``ignore[LNT005,LNT006]``, or bare ``# gpudoctor: ignore``) on
the finding's first line, read from the comment tokens (``tokenize``), never by pattern over the code.
Per-project: ``[tool.gpudoctor.lint] ignore = ["LNT013"]`` (and ``exclude = ["dir"]``) in the nearest
pyproject.toml above the path, as ruff reads ``[tool.ruff]``.
"""
from __future__ import annotations

import ast
import io
import os
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpudoctor.lint.context import FileContext
from gpudoctor.lint.model import LintFinding
from gpudoctor.lint.registry import LintSpec, load

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache", "node_modules"}
MARK = "gpudoctor:"


@dataclass
class LintResult:
    findings: list[LintFinding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # unreadable / unparseable files: one line each
    files: int = 0


def inline_ignores(source: str) -> dict[int, set[str] | None]:
    """line -> ids ignored on it (None: all), from ``# gpudoctor: ignore[...]`` comments."""
    out: dict[int, set[str] | None] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type != tokenize.COMMENT or MARK not in tok.string:
                continue
            rest = tok.string.split(MARK, 1)[1].strip()
            if not rest.startswith("ignore"):
                continue
            rest = rest[len("ignore"):].strip()
            if rest.startswith("[") and "]" in rest:
                out[tok.start[0]] = {i.strip().upper() for i in rest[1:rest.index("]")].split(",") if i.strip()}
            elif not rest or rest.startswith("#"):
                out[tok.start[0]] = None
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


def lint_source(source: str, path: str, rules: Iterable[LintSpec] | None = None,
                named: bool = True) -> list[LintFinding]:
    """Findings for one file's text (SyntaxError propagates). Nothing is imported or run.

    Fast path: every rule needs a name imported from ``torch`` (so the word "torch" in the text), except
    LNT010, which needs an ``"NCCL_..."`` string, and LNT011, which needs a ``.backward()`` call; a file with
    none of the three words cannot give a finding and is not parsed -- unless it was ``named`` by the user (not
    found in a folder): then it is still parsed, so that a file that is not Python is an error, never a pass."""
    if "torch" not in source and "NCCL_" not in source and "backward" not in source:
        if named:
            ast.parse(source, filename=path)
        return []
    tree = ast.parse(source, filename=path)
    ctx = FileContext(path, source, tree)
    ignores = inline_ignores(source) if MARK in source else {}
    out: list[LintFinding] = []
    for spec in rules if rules is not None else load().values():
        for node, message, edits in spec.func(ctx):
            line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
            ign = ignores.get(line, set())
            if ign is None or spec.id in ign:
                continue
            out.append(LintFinding(rule_id=spec.id, severity=spec.severity, path=path, line=line, col=col,
                                   message=message, remedy=spec.fix, sources=list(spec.sources), edits=edits))
    out.sort(key=lambda f: (f.line, f.col, f.rule_id))
    return out


def find_config(start: Path) -> dict[str, list[str]]:
    """``[tool.gpudoctor.lint]`` of the nearest pyproject.toml at or above ``start`` (empty when none)."""
    d = start.resolve()
    if not d.is_dir():
        d = d.parent
    for folder in (d, *d.parents):
        pp = folder / "pyproject.toml"
        if pp.is_file():
            try:
                data = tomllib.loads(pp.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                return {}
            sect = data.get("tool", {}).get("gpudoctor", {}).get("lint", {})
            if sect:
                return {k: [str(v) for v in sect.get(k, [])] for k in ("ignore", "exclude")}
    return {}


def discover(paths: Iterable[str]) -> Iterator[str]:
    """Python files under ``paths`` (files given by name are taken whatever their suffix), sorted per folder."""
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
                for f in sorted(files):
                    if f.endswith(".py"):
                        yield os.path.join(root, f)
        else:
            yield p


def _one(job: tuple[str, tuple[str, ...], bool]) -> tuple[list[LintFinding], str | None]:
    path, ignore, named = job
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        source = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        return [], f"{path}: cannot read: {exc}"
    rules = [s for s in load().values() if s.id not in ignore]
    try:
        return lint_source(source, path, rules, named=named), None
    except (SyntaxError, ValueError, RecursionError) as exc:
        return [], f"{path}: cannot parse: {exc}"


def lint_paths(paths: list[str], select: set[str] | None = None, ignore: set[str] | None = None,
               jobs: int = 1) -> LintResult:
    """Lint files and folders. ``ignore`` adds to each path's pyproject ignore list; ``jobs`` > 1 parses in
    that many worker processes (worth it only on large trees: see docs/lint.md)."""
    specs = load()
    result = LintResult()
    work: list[tuple[str, tuple[str, ...], bool]] = []
    for p in paths:
        if not os.path.exists(p):
            result.errors.append(f"{p}: no such file or directory")
            continue
        cfg = find_config(Path(p))
        ign = set(cfg.get("ignore", [])) | (ignore or set())
        if select:
            ign |= set(specs) - select
        excl = [os.path.normpath(os.path.join(p if os.path.isdir(p) else os.path.dirname(p), e))
                for e in cfg.get("exclude", [])]
        for f in discover([p]):
            if not any(os.path.normpath(f).startswith(e) for e in excl):
                work.append((f, tuple(sorted(i.upper() for i in ign)), not os.path.isdir(p)))
    result.files = len(work)
    if jobs > 1 and len(work) > 200:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            outs = list(pool.map(_one, work, chunksize=64))
    else:
        outs = [_one(w) for w in work]
    for found, err in outs:
        result.findings.extend(found)
        if err:
            result.errors.append(err)
    return result
