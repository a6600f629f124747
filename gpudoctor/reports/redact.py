"""Last line of defence against secrets in reports: scrub every string of a report before it is shown or saved.

The env probe already keeps only training variables and redacts secret-looking ones
(:func:`gpudoctor.facts.env.redact`). But reports also quote free text: error lines of a pasted log
(``gpudoctor check``), the tail of a confirmation run's rank log, an NCCL warning, a probe's error
message. Any of them can carry a token (a traceback showing ``token="hf_..."``, a URL with
``user:password@``). :func:`scrub_model` replaces, in every string field of a report:

- the value of every secret-looking variable of this process's environment (same test as the env
  probe: name with TOKEN/SECRET/PASSWORD/KEY/..., or a value shaped like a credential), 8+ characters;
- credential-shaped values (GitHub/Hugging Face/OpenAI/Stripe/Slack tokens, AWS access key ids, JWTs,
  private-key headers, ``scheme://user:password@``) and an Authorization header's credentials after its scheme
  word (``Authorization: Bearer ...``);
- the value in ``NAME=value`` / ``NAME: value`` / ``--name value`` when NAME says token, secret,
  password, api key, access key, private key or credential (``HF_TOKEN=...``, ``password: ...``).

Each is replaced by ``<redacted>``.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from gpudoctor.facts.env import REDACTED, is_secret

M = TypeVar("M", bound=BaseModel)

_SHAPED = re.compile(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}"
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|xox[baprs]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]+)?)"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*(?:-----END [A-Z ]*PRIVATE KEY-----)?")
_URL_CRED = re.compile(r"(://[^/\s:@\"']+:)[^/\s@\"']+(@)")
#: an HTTP Authorization header's credentials after its scheme word ("Authorization: Bearer <token>", Basic, Token)
_AUTH_HEADER = re.compile(r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest|apikey)"
                          r"\s+)(?!<redacted>)([^\s\"',;]{3,})")
_NAME = r"[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)" \
        r"(?:[_.-][A-Za-z0-9_.-]*)?"
_NAMED = re.compile(rf"(?i)(\b{_NAME}[\"']?\s*[=:]\s*[\"']?|--{_NAME}[ =][\"']?)(?!<redacted>)([^\s\"',;)}}\]]{{3,}})")


def secret_values(environ: Mapping[str, str] | None = None, min_len: int = 8) -> list[str]:
    """Values of the secret-looking variables of ``environ`` (default os.environ), longest first."""
    environ = os.environ if environ is None else environ
    vals = {v for k, v in environ.items() if v and len(v) >= min_len and is_secret(k, v)}
    return sorted(vals, key=len, reverse=True)


# a literal every match of each pattern contains (_NAMED's: lower-cased): a string without it skips that pattern
_SHAPED_LITERALS = ("gh", "hf_", "sk-", "sk_", "rk_", "AKIA", "xox", "eyJ", "-----BEGIN")
_NAMED_LITERALS = ("token", "secret", "passw", "key", "credential")


def scrub_text(text: str, values: Iterable[str] = ()) -> str:
    """``text`` with every known secret value and every credential-shaped token replaced by <redacted>."""
    if not text:
        return text
    for v in values:
        if v in text:
            text = text.replace(v, REDACTED)
    if any(a in text for a in _SHAPED_LITERALS):
        text = _SHAPED.sub(REDACTED, text)
    if "://" in text and "@" in text:
        text = _URL_CRED.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    low = text.lower()
    if "authorization" in low:  # before _NAMED: the scheme word is not the secret, the credential after it is
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + REDACTED, text)
        low = text.lower()
    if any(a in low for a in _NAMED_LITERALS) or not text.isascii():  # (?i) folds some non-ASCII letters too
        text = _NAMED.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def _walk(obj: Any, values: list[str], changed: list[bool]) -> Any:
    if isinstance(obj, str):
        out = scrub_text(obj, values)
        if out != obj:
            changed[0] = True
        return out
    if isinstance(obj, list):
        return [_walk(x, values, changed) for x in obj]
    if isinstance(obj, dict):
        return {k: _walk(v, values, changed) for k, v in obj.items()}
    return obj


def scrub_model(model: M, environ: Mapping[str, str] | None = None) -> M:
    """A pydantic report (Report, ClusterReport, Snapshot) with every string scrubbed (see module doc): a new model
    when some string changed, else ``model`` itself (nothing to hide; callers only read it).

    Dict keys (variable names, rule ids) are kept; only values change. Never raises for a valid model.
    """
    values = secret_values(environ)
    changed = [False]
    data = _walk(model.model_dump(mode="json"), values, changed)
    return type(model).model_validate(data) if changed[0] else model
