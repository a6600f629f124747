"""The base of every facts model: unknown keys are ignored (older/newer reports load)."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
