"""The shape of the signature catalogue (rules/signatures.toml), checked when a site's override replaces it.

The shipped catalogue is tested (tests/test_signatures.py); a ``signatures.toml`` in GPUDOCTOR_RULES_DIR is edited by
hand, and an entry without ``regex``, a regex Python cannot compile, a misspelt key (``severty``, which would
otherwise fall back to nothing without a word) or a severity outside error / warning / info must be a one-line
error naming the file and the entry, not a crash halfway through a check. The keys are documented at the top of
rules/signatures.toml.
"""
from __future__ import annotations

import re
from typing import Any

SEVERITIES = ("error", "warning", "info")
#: keys of a [[signature]] entry: required, then optional
SIGNATURE_REQUIRED = ("id", "title", "regex", "severity", "cause", "remedy")
SIGNATURE_OPTIONAL = ("family", "sources", "origin", "example", "negative", "conclusion", "explains", "follows",
                      "cases", "wraps", "fallback", "escalates", "encloses", "keeps", "kernel_xids")
#: keys of a [[signature.cases]] row
CASE_KEYS = ("group", "match", "when", "unless", "env", "hit", "min_gpus", "title", "cause", "remedy", "severity")
QUIET_KEYS = ("regex", "reason")
_ID = re.compile(r"[A-Z]{3}\d{3}")
_TEXT = ("id", "title", "regex", "severity", "cause", "remedy", "family", "origin", "example", "negative", "explains")


def _regex_error(rx: Any) -> str | None:
    if not isinstance(rx, str) or not rx:
        return "is not a non-empty string"
    try:
        re.compile(rx, re.IGNORECASE | re.MULTILINE)
    except re.error as exc:
        return f"does not compile ({exc})"
    return None


def _unknown(keys: Any, known: tuple[str, ...]) -> list[str]:
    return sorted(k for k in keys if k not in known)


#: ids a signature may follow besides other signatures and the fact rules it restates (rules/rule_meta.toml): the
#: fact rules that conclude from logs (rules/logs.py RULE_CAUSES)
RULE_IDS = ("LOG001", "LOG012", "LOG013")


def signature_problems(doc: dict[str, Any], known: set[str] | None = None) -> list[str]:
    """What is wrong with a parsed signatures.toml, one phrase per problem naming the entry ("[[signature]] 3
    (SIG900): no 'regex'"); [] when it can be used. ``known``: every signature id of the catalogue it joins (the
    ids ``follows`` / ``keeps`` may name; None: not checked)."""
    out: list[str] = []
    extra = _unknown(doc, ("signature", "quiet"))
    if extra:
        out.append(f"unknown top-level key(s) {', '.join(extra)} (known: [[signature]], [[quiet]])")
    entries = doc.get("signature", [])
    if not isinstance(entries, list):
        return out + ["'signature' must be an array of tables ([[signature]])"]
    seen: set[str] = set()
    for n, e in enumerate(entries, 1):
        where = f"[[signature]] {n}" + (f" ({e.get('id')})" if isinstance(e, dict) and e.get("id") else "")
        if not isinstance(e, dict):
            out.append(f"{where}: not a table")
            continue
        missing = [k for k in SIGNATURE_REQUIRED if k not in e]
        if missing:
            out.append(f"{where}: no {', '.join(repr(k) for k in missing)}")
        bad = _unknown(e, SIGNATURE_REQUIRED + SIGNATURE_OPTIONAL)
        if bad:
            out.append(f"{where}: unknown key(s) {', '.join(bad)}")
        wrong = [k for k in _TEXT if k in e and not isinstance(e[k], str)]
        if wrong:
            out.append(f"{where}: {', '.join(wrong)} must be string(s)")
        sid = e.get("id")
        if isinstance(sid, str):
            if not _ID.fullmatch(sid):
                out.append(f"{where}: id must be three capitals and three digits (SIG900)")
            if sid in seen:
                out.append(f"{where}: id used twice")
            seen.add(sid)
        if "severity" in e and e["severity"] not in SEVERITIES:
            out.append(f"{where}: severity {e['severity']!r} is not one of {', '.join(SEVERITIES)}")
        for key in ("follows", "keeps"):
            refs = e.get(key, [])
            if not isinstance(refs, list):
                out.append(f"{where}: {key} must be a list of ids")
            elif known is not None:
                bad_refs = [r for r in refs if r not in known and r not in RULE_IDS]
                if bad_refs:
                    out.append(f"{where}: {key} names no signature: {', '.join(map(str, bad_refs))}")
        xids = e.get("kernel_xids", [])
        if not isinstance(xids, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in xids):
            out.append(f"{where}: kernel_xids must be a list of Xid numbers")
        for key in ("regex", "explains"):
            problem = _regex_error(e[key]) if key in e else None
            if problem:
                out.append(f"{where}: {key} {problem}")
        for m, case in enumerate(e.get("cases", []) if isinstance(e.get("cases", []), list) else [None], 1):
            if not isinstance(case, dict):
                out.append(f"{where}: cases must be [[signature.cases]] tables")
                break
            bad = _unknown(case, CASE_KEYS)
            if bad:
                out.append(f"{where}, case {m}: unknown key(s) {', '.join(bad)}")
            if "match" in case and _regex_error(case["match"]):
                out.append(f"{where}, case {m}: match {_regex_error(case['match'])}")
            if "severity" in case and case["severity"] not in SEVERITIES:
                out.append(f"{where}, case {m}: severity {case['severity']!r} is not one of {', '.join(SEVERITIES)}")
    for n, q in enumerate(doc.get("quiet", []) if isinstance(doc.get("quiet", []), list) else [None], 1):
        if not isinstance(q, dict):
            out.append("'quiet' must be an array of tables ([[quiet]])")
            break
        bad = _unknown(q, QUIET_KEYS)
        if bad:
            out.append(f"[[quiet]] {n}: unknown key(s) {', '.join(bad)}")
        problem = _regex_error(q.get("regex"))
        if problem:
            out.append(f"[[quiet]] {n}: regex {problem}")
    return out


def _signatures(view: dict[str, Any], merged: dict[str, Any]) -> list[str]:
    from gpudoctor.compat import data  # the fact rules a signature may restate (rules/restated.py)

    known = {e.get("id") for e in merged.get("signature", []) if isinstance(e, dict)}
    known |= set(data.load("rule_meta"))
    return signature_problems(view, {k for k in known if isinstance(k, str)})


#: rule data file name -> its checker of (the override's entries merged, the whole merged file); a file without
#: one is checked only for its values' types (compat/data.py)
CHECKERS = {"signatures": _signatures}


def _site_remedy_wins(merged: dict[str, Any], site: dict[str, Any]) -> None:
    """A site entry that gives a shipped signature its own ``remedy`` (and no cases of its own) wants it shown
    whatever case fires: the shipped cases' remedies are dropped for that entry (their titles and causes stay)."""
    ids = {e.get("id") for e in site.get("signature", []) if isinstance(e, dict) and "remedy" in e and "cases" not in e}
    for e in merged.get("signature", []):
        if isinstance(e, dict) and e.get("id") in ids:
            e["cases"] = [{k: v for k, v in c.items() if k != "remedy"} for c in e.get("cases", [])
                          if isinstance(c, dict)]


#: rule data file name -> what to adjust once an override is laid over the shipped file (merged, site)
AFTER_MERGE = {"signatures": _site_remedy_wins}
