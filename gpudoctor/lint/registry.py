"""The lint rules' registry; their metadata (severity, the pitfall, why, example, fix, sources) is rules/lint_meta.toml.

``gpudoctor explain LNT001`` and docs/rules/lnt.md are generated from it (``python -m gpudoctor.lint.registry``
rewrites the page). The checklist behind every rule is section L of the seed checklists (L1-L12).
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gpudoctor.compat import data
from gpudoctor.lint.context import FileContext
from gpudoctor.lint.model import Edit, Severity
from gpudoctor.rules.pages import rule_page

#: what a check yields: the node the finding points at, the message, and the fix's edits (may be empty)
Hit = tuple[ast.AST, str, list[Edit]]
Check = Callable[[FileContext], Iterable[Hit]]

AREA = "Training script"


@dataclass(frozen=True)
class LintSpec:
    """One lint rule's metadata; ``area``/``what``/``fix`` match the host rules' RuleSpec fields."""

    id: str
    severity: Severity
    title: str
    checklist: str
    what: str
    why: str
    fix: str
    bad: str
    good: str
    doc_url: str
    func: Check = field(compare=False, repr=False)
    area: str = AREA

    @property
    def sources(self) -> tuple[str, ...]:
        return (f"seed checklist {self.checklist} (../shared/docs/seed-checklists.md, section L)", self.doc_url)

    @property
    def family(self) -> str:
        return "LNT"


LINT_RULES: dict[str, LintSpec] = {}
META = "lint_meta"  # rules/lint_meta.toml


def meta() -> dict[str, dict[str, Any]]:
    """The lint rules' metadata rows of rules/lint_meta.toml, by rule id."""
    return data.load(META)


def lint_rule(id: str) -> Callable[[Check], Check]:
    """Register a lint check as rule ``id``; its metadata is the row ``[id]`` of rules/lint_meta.toml and its
    docstring the 'what it checks' paragraph. ValueError on a duplicate id or an id without a row, TypeError on
    a row with a key :class:`LintSpec` does not have."""
    row = meta().get(id)
    if row is None:
        raise ValueError(f"lint rule {id} has no row in rules/{META}.toml")

    def deco(func: Check) -> Check:
        if id in LINT_RULES:
            raise ValueError(f"duplicate lint rule id {id}")
        fields = {**row, "bad": row["bad"].strip("\n"), "good": row["good"].strip("\n")}
        LINT_RULES[id] = LintSpec(id=id, what=" ".join((func.__doc__ or "").split()), func=func, **fields)
        return func

    return deco


def load() -> dict[str, LintSpec]:
    """Every lint rule, registered (importing the rule modules registers them) in the order of rules/lint_meta.toml;
    ValueError when a row there has no check."""
    from gpudoctor.lint import rules_amp, rules_dist, rules_train  # noqa: F401

    orphans = sorted(set(meta()) - set(LINT_RULES))
    if orphans:
        raise ValueError(f"rows of rules/{META}.toml with no @lint_rule check: {orphans}")
    if list(LINT_RULES) != list(meta()):  # the data file's order: the docs page's, the SARIF rules' and the run's
        ordered = [LINT_RULES[i] for i in meta()]
        LINT_RULES.clear()
        LINT_RULES.update((s.id, s) for s in ordered)
    return LINT_RULES


def spec_markdown(spec: LintSpec, level: int = 1) -> str:
    """The explain page of one lint rule: what, why, example, fix, sources."""
    return rule_page(spec, level, meta=f" · Checklist: {spec.checklist}",
                     example=f"**Example (flagged).**\n\n```python\n{spec.bad}\n```\n\n",
                     fixed=f"```python\n{spec.good}\n```\n\n")


def family_page() -> str:
    """docs/rules/lnt.md."""
    body = "\n".join(spec_markdown(s, level=2) for s in load().values())
    return ("# LNT — Training script rules (`gpudoctor lint`)\n\n"
            "<!-- generated from the rules' metadata by `python -m gpudoctor.lint.registry`; do not edit -->\n\n"
            f"{body}")


if __name__ == "__main__":
    import pathlib

    from gpudoctor.lint import registry  # the module the rules register in (this one runs as __main__)

    out = pathlib.Path(__file__).resolve().parents[2] / "docs" / "rules" / "lnt.md"
    out.write_text(registry.family_page())
    print(f"wrote {out}")
