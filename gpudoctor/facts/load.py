"""Load a saved gpudoctor report or snapshot (JSON) for offline re-checking."""
from __future__ import annotations

import json

from pydantic import ValidationError

from gpudoctor.facts.model import SCHEMA_VERSION, Snapshot


class InputError(Exception):
    """Bad user input: the CLI prints the message on one line and exits with code 2."""




def parse_document(text: str, name: str = "<input>") -> Snapshot:
    """Return the Snapshot inside a saved report (or a bare snapshot).

    Raises InputError for invalid JSON, a document that is not a gpudoctor report,
    or a schema of a newer major version than this gpudoctor understands.
    """
    try:
        doc = json.loads(text.lstrip("\ufeff"))  # a byte-order mark: PowerShell's `> r.json` writes one
    except ValueError as exc:
        raise InputError(f"{name}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{name}: not a gpudoctor report (top level is not an object)")
    if doc.get("kind") == "gpudoctor-cluster-report":
        raise InputError(f"{name}: a cluster report (from `gpudoctor cluster`); `check` reads scan reports and text "
                         f"dumps -- pass it the per-node snapshot instead")
    snap = doc.get("snapshot") if doc.get("kind") == "gpudoctor-report" else doc
    if not isinstance(snap, dict) or "schema_version" not in snap:
        raise InputError(f"{name}: not a gpudoctor report or snapshot (no schema_version)")
    theirs = str(snap["schema_version"]).split(".")[0]
    ours = SCHEMA_VERSION.split(".")[0]
    if not theirs.isdigit() or int(theirs) > int(ours):
        raise InputError(f"{name}: schema_version {snap['schema_version']} is newer than this gpudoctor "
                         f"understands ({SCHEMA_VERSION}); upgrade gpudoctor")
    try:
        out = Snapshot.model_validate(snap)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise InputError(f"{name}: invalid snapshot at {loc}: {first.get('msg')}") from None
    if out.topology is not None:
        # derived values (link-class bandwidths, pair bandwidths) follow this gpudoctor's tables, not the ones the
        # report was written with: a corrected table corrects old reports too
        from gpudoctor.facts.topology import finish

        try:
            finish(out.topology, out.nvml)
        except Exception:  # the saved values stay; a derivation bug must not make the report unreadable
            pass
    return out
