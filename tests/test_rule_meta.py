"""Rule metadata as data: every rules/rule_meta.toml row joins a @rule function and every function a row (the
same for rules/lint_meta.toml and the lint checks); either half alone fails loudly."""
from __future__ import annotations

import pytest

from gpudoctor.compat import data
from gpudoctor.lint import registry as lint_registry
from gpudoctor.rules import REGISTRY, engine
from gpudoctor.rules.families import BY_PREFIX


def _python_rules() -> dict[str, engine.RuleSpec]:
    """The rules written as functions (not one per signature-catalogue entry)."""
    return {i: s for i, s in REGISTRY.items() if not s.func.__name__.startswith("signature_")}


def test_every_row_has_its_function_and_every_function_its_row():
    rows = data.load("rule_meta")
    assert set(rows) == set(_python_rules())
    for rid, row in rows.items():
        spec = REGISTRY[rid]
        assert (spec.severity, spec.title, spec.why, spec.fix) == (row["severity"], row["title"], row["why"],
                                                                    row["fix"]), rid
        assert spec.sources == tuple(row["sources"]) and spec.ok == row.get("ok", row["title"]), rid
        assert spec.scope == row.get("scope", "node") and spec.area == BY_PREFIX[spec.family].area, rid
        assert spec.what, f"{rid}: the function has no docstring ('what it checks')"


def test_signature_rules_keep_their_catalogue_metadata():
    sigs = {e["id"]: e for e in data.load("signatures")["signature"]}
    for sid, e in sigs.items():
        spec = REGISTRY[sid]
        assert (spec.title, spec.why, spec.fix, spec.severity) == (e["title"], e["cause"], e["remedy"], e["severity"])
    assert not set(sigs) & set(data.load("rule_meta"))  # one place per rule's metadata


def test_a_function_without_a_row_fails_at_decoration():
    with pytest.raises(ValueError, match="GPU999 has no row"):
        engine.rule("GPU999")
    with pytest.raises(ValueError, match="no row"):
        engine.rule("ZZZ001")  # no family either
    assert "GPU999" not in REGISTRY


def test_a_row_without_a_function_fails(monkeypatch):
    engine.check_meta()  # the real rows all have their function
    rows = {**data.load("rule_meta"), "GPU999": {"severity": "info", "title": "t", "why": "w", "fix": "f",
                                                 "sources": ["s"]}}
    monkeypatch.setattr(engine, "meta", lambda: rows)
    with pytest.raises(ValueError, match="GPU999"):
        engine.check_meta()


def test_a_row_with_an_unknown_key_or_a_taken_id_fails(monkeypatch):
    rows = {"GPU998": {"severity": "info", "title": "t", "why": "w", "fix": "f", "sources": ["s"], "sevrity": "x"}}
    monkeypatch.setattr(engine, "meta", lambda: rows)
    with pytest.raises(TypeError):
        engine.rule("GPU998")
    monkeypatch.setattr(engine, "meta", lambda: {"GPU001": data.load("rule_meta")["GPU001"]})
    with pytest.raises(ValueError, match="duplicate"):
        engine.rule("GPU001")(lambda ctx: None)
    assert "GPU998" not in REGISTRY and REGISTRY["GPU001"].func.__name__ == "temperature"


def test_lint_rows_and_checks_join():
    specs = lint_registry.load()
    rows = data.load("lint_meta")
    assert list(specs) == list(rows)  # the data file's order is the docs page's
    for rid, row in rows.items():
        spec = specs[rid]
        assert (spec.title, spec.why, spec.fix, spec.doc_url) == (row["title"], row["why"], row["fix"], row["doc_url"])
        assert spec.bad == row["bad"].strip("\n") and spec.what, rid
    with pytest.raises(ValueError, match="LNT999 has no row"):
        lint_registry.lint_rule("LNT999")


def test_a_lint_row_without_a_check_fails(monkeypatch):
    rows = {**data.load("lint_meta"), "LNT999": dict(data.load("lint_meta")["LNT001"])}
    monkeypatch.setattr(lint_registry, "meta", lambda: rows)
    with pytest.raises(ValueError, match="LNT999"):
        lint_registry.load()
