"""Pydantic models of the two envelopes (the boundary schema every command's output obeys)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memhtml.contracts.envelope import API_VERSION


class SuccessEnvelope(BaseModel):
    """A successful result."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    ok: Literal[True] = True
    api_version: Literal["1"] = Field(default=API_VERSION, alias="apiVersion")
    type: str
    data: dict[str, Any]


class ErrorEnvelope(BaseModel):
    """A failure: agents branch on `code`, never on `error`'s prose."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    ok: Literal[False] = False
    api_version: Literal["1"] = Field(default=API_VERSION, alias="apiVersion")
    error: str
    code: str
    suggestions: list[str] = Field(default_factory=list)
    details: dict[str, Any] | None = None


def validate_envelope(payload: dict[str, Any]) -> SuccessEnvelope | ErrorEnvelope:
    """Parse a payload as one of the two envelopes (raises pydantic.ValidationError)."""
    if payload.get("ok") is True:
        return SuccessEnvelope.model_validate(payload)
    return ErrorEnvelope.model_validate(payload)
