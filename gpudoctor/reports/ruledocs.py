"""Rule documentation generated from the rules' own metadata (ruff-style: what, why, fix, sources)."""
from __future__ import annotations

from gpudoctor.rules.engine import REGISTRY, RuleSpec
from gpudoctor.rules.families import FAMILIES as RULE_FAMILIES
from gpudoctor.rules.pages import rule_page

FAMILIES = {f.prefix: f.title for f in RULE_FAMILIES}


def rule_markdown(spec: RuleSpec, level: int = 1) -> str:
    return rule_page(spec, level)


def family_page(family: str) -> str:
    """The docs/rules/<family>.md page for one family (regenerate with `python -m gpudoctor.reports.ruledocs`)."""
    specs = [s for s in REGISTRY.values() if s.family == family]
    title = FAMILIES.get(family, family)
    body = "\n".join(rule_markdown(s, level=2) for s in specs)
    return (f"# {family} — {title} rules\n\n"
            f"<!-- generated from the rules' metadata by `python -m gpudoctor.reports.ruledocs`; do not edit -->\n\n"
            f"{body}")


def families() -> list[str]:
    seen: list[str] = []
    for s in REGISTRY.values():
        if s.family not in seen:
            seen.append(s.family)
    return seen


if __name__ == "__main__":
    import pathlib

    import gpudoctor.rules  # noqa: F401  (registers every rule)

    out = pathlib.Path(__file__).resolve().parents[2] / "docs" / "rules"
    out.mkdir(parents=True, exist_ok=True)
    for fam in families():
        (out / f"{fam.lower()}.md").write_text(family_page(fam))
        print(f"wrote {out / (fam.lower() + '.md')}")
