"""Known, unknown (with the reason), not applicable: one way for every layer to say what a fact is.

Facts are stored as plain values with ``None`` for "no value" (the JSON schema stays as it is); reading one
through :func:`state_of` tells the three cases apart:

* known -- the value (``0``, ``False`` and ``[]`` are known values: "the input says there is none");
* :class:`Unknown` -- the input did not say (NVML query failed, a pasted text lacked the field); it carries
  the reason, is falsy, prints as ``N/A`` and never compares as a number by accident (nvitop's ``NA``);
* :class:`NotApplicable` -- the fact does not exist on this GPU/host (e.g. ECC counts with ECC disabled).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class _Absent:
    """A fact without a value; ``reason`` says why (one line). Falsy, so ``if value:`` reads it as no value."""

    reason: str

    def __bool__(self) -> bool:
        return False


@dataclass(frozen=True)
class Unknown(_Absent):
    """A fact the inputs did not give; ``reason`` says why (one line)."""

    def __str__(self) -> str:
        return "N/A"

    def __lt__(self, other: Any) -> bool:
        raise TypeError(f"an unknown value ({self.reason}) has no order")

    __le__ = __gt__ = __ge__ = __lt__


@dataclass(frozen=True)
class NotApplicable(_Absent):
    """A fact that does not exist here; ``reason`` says why."""

    def __str__(self) -> str:
        return "n/a"


def is_known(value: Any) -> bool:
    """True for a real value (including 0, False, an empty list); False for None, Unknown and NotApplicable."""
    return value is not None and not isinstance(value, Unknown | NotApplicable)


def state_of(obj: Any, field: str, errors: dict[str, str] | None = None) -> Any:
    """``obj.field`` when known, else Unknown with the reason: the probe's error for that query (``errors``,
    keyed by the field or its stem: 'temperature_c' -> 'temperature'), or "not in the input"."""
    value = getattr(obj, field, None)
    if is_known(value):
        return value
    if isinstance(value, Unknown | NotApplicable):
        return value
    errors = errors if errors is not None else getattr(obj, "errors", None) or {}
    stem = field.rsplit("_", 1)[0]
    why = errors.get(field) or errors.get(stem) if isinstance(errors, dict) else None
    return Unknown(f"{field}: {why}" if why else f"{field} not in the input")
