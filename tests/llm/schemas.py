"""Small answer schemas the seam's tests ask for."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Verdict(BaseModel):
    """One judged pair."""

    keys: list[str]
    relation: str
    confidence: float = Field(ge=0, le=1)


class Empty(BaseModel):
    """A schema whose every field has a default."""

    groups: list[list[str]] = Field(default_factory=list)


GOOD = {"keys": ["m1", "m2"], "relation": "contradicts", "confidence": 0.9}
BAD = {"keys": ["m1"], "relation": "contradicts", "confidence": 7}  # confidence off the schema
