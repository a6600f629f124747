"""``gpudoctor lint``: the training-script checker (rules LNT001..., gpudoctor/lint/), registered on the app.

Exit codes as ``check``: 0 nothing at or above --fail-on; 1 findings at or above it; 2 a path missing,
unreadable or not Python (the other files are still linted); --diff: 1 when there is something to fix.
"""
from __future__ import annotations

import enum
import json
import sys

import typer

from gpudoctor.cli.app import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, FailOn, app, fail


class LintFormat(str, enum.Enum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


def explain_text(rule_id: str) -> str | None:
    """The explain page of a lint rule, or None when ``rule_id`` is not one."""
    from gpudoctor.lint.registry import load, spec_markdown

    spec = load().get(rule_id.upper())
    return spec_markdown(spec) if spec is not None else None


def rule_lines() -> list[str]:
    """``gpudoctor rules`` lines for the lint rules."""
    from gpudoctor.lint.registry import load

    return [f"{s.id:8} {s.severity:8} {s.area:20} {s.title}\n" for s in load().values()]


def _ids(values: list[str]) -> set[str]:
    from gpudoctor.lint.registry import load

    ids = {v.strip().upper() for item in values for v in item.split(",") if v.strip()}
    unknown = sorted(i for i in ids if i not in load())
    if unknown:
        raise fail(f"unknown lint rule {', '.join(unknown)}; `gpudoctor rules` lists them")
    return ids


@app.command("lint")
def lint(
    paths: list[str] = typer.Argument(..., help="Python files or folders to check; - reads stdin."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json."),
    fmt: LintFormat = typer.Option(LintFormat.text, "--format", help="text, json, github (workflow annotations) "
                                                                      "or sarif (2.1.0, for code scanning)."),
    fail_on: FailOn = typer.Option(FailOn.warning, "--fail-on", help="Lowest severity that makes the exit code 1."),
    select: list[str] = typer.Option([], "--select", help="Only these rule ids (comma-separated or repeated)."),
    ignore: list[str] = typer.Option([], "--ignore", help="Skip these rule ids (adds to pyproject's list)."),
    fix: bool = typer.Option(False, "--fix", help="Apply the mechanical fixes in place (LNT017), then report."),
    diff: bool = typer.Option(False, "--diff", help="Print the fixes as a unified diff; change nothing."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, max=64, help="Worker processes for trees of over 200 "
                                                                      "files (0: one per CPU core)."),
):
    """Check training scripts for the distributed-training pitfalls (LNT001-LNT019, `gpudoctor rules`): static,
    nothing is imported or run."""
    from gpudoctor.lint import engine, output
    from gpudoctor.lint.model import SEVERITY_ORDER

    sel, ign = _ids(select) or None, _ids(ignore)
    stdin = [p for p in paths if p == "-"]
    import os

    res = engine.lint_paths([p for p in paths if p != "-"], select=sel, ignore=ign, jobs=jobs or os.cpu_count() or 1)
    stdin_src = None
    if stdin:
        stdin_src = sys.stdin.read()
        cfg = engine.find_config(__import__("pathlib").Path("."))
        skip = set(cfg.get("ignore", [])) | ign
        rules = [s for s in engine.load().values() if s.id not in skip and (sel is None or s.id in sel)]
        try:
            res.findings += engine.lint_source(stdin_src, "-", rules)
        except (SyntaxError, ValueError) as exc:
            res.errors.append(f"-: cannot parse: {exc}")
        res.files += 1
    if fix or diff:
        changed = _fixes(res.findings, stdin_src, write=fix and not diff)
        if diff:
            raise typer.Exit(EXIT_FINDINGS if changed else EXIT_OK)
        if changed:  # report what is left after the fixes
            fixed = {id(f) for f in res.findings if f.fixable}
            res.findings = [f for f in res.findings if id(f) not in fixed]
            sys.stderr.write(f"gpudoctor: fixed {len(fixed)} problem{'s' if len(fixed) != 1 else ''}\n")
    if json_out:
        fmt = LintFormat.json
    out = sys.stderr if (fix and stdin) else sys.stdout  # `--fix -`: stdout carries the fixed source
    if fmt == LintFormat.sarif:
        out.write(json.dumps(output.sarif(res.findings, res.errors, res.files), indent=2) + "\n")
    else:
        render = {"text": output.text, "json": output.as_json, "github": output.github}[fmt.value]
        body = render(res.findings, res.errors, res.files)
        if body:
            out.write(body + "\n")
    for e in res.errors:
        if fmt != LintFormat.text:
            sys.stderr.write(f"gpudoctor: error: {e}\n")
    if res.errors:
        raise typer.Exit(EXIT_USAGE)
    bar = None if fail_on == FailOn.never else SEVERITY_ORDER[fail_on.value]
    hit = bar is not None and any(SEVERITY_ORDER[f.severity] >= bar for f in res.findings)
    raise typer.Exit(EXIT_FINDINGS if hit else EXIT_OK)


def _fixes(findings: list, stdin_src: str | None, write: bool) -> bool:
    """Apply (``write``) or print as a diff the fixable findings' edits; True when anything changes. Stdin's
    fixed text goes to stdout with --fix."""
    from gpudoctor.lint import output

    by_path: dict[str, list] = {}
    for f in findings:
        if f.fixable:
            by_path.setdefault(f.path, []).extend(f.edits)
    for path, edits in by_path.items():
        if path == "-":
            before = stdin_src or ""
        else:
            with open(path, encoding="utf-8-sig") as fh:
                before = fh.read()
        after = output.apply_edits(before, edits)
        if not write:
            sys.stdout.write(output.unified_diff(path, before, after))
        elif path == "-":
            sys.stdout.write(after)
        else:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(after)
    if write and stdin_src is not None and "-" not in by_path:
        sys.stdout.write(stdin_src)  # `--fix -` with nothing to fix: the source unchanged, as ruff does
    return bool(by_path)
