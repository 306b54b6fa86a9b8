"""The op stream's pydantic models: the reference validators of memhtml.contracts.ops.

`memhtml.contracts.ops` accepts the common, certainly valid op without them
(building these models is most of a cold CLI write's start-up); anything
else (a refused field, an unusual but accepted spelling such as a tuple for a
list or "5" for an integer) is validated here, so every error a caller sees is
pydantic's, word for word, as before. The models keep the public classes'
names, so an error reads as it did. The field set, aliases and checks must
stay in step with `memhtml.contracts.ops` (tests/contracts/test_ops.py
compares the two on generated ops).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from memhtml.contracts.vocab import MEMORY_TYPES, WRITABLE_MEMORY_TYPES

_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, str_strip_whitespace=False)


def _as_list(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return value


class WriteOp(BaseModel):
    """Write one memory (see memhtml.contracts.ops.WriteOp)."""

    model_config = _CONFIG
    op: Literal["write"] = "write"
    title: Annotated[str, Field(min_length=1, max_length=300)]
    type: str = Field(validation_alias=AliasChoices("type", "memory_type"))
    claim: str | None = None
    body: list[str] | None = None
    article_html: str | None = None
    path: str | None = None
    strict_path: bool = False
    workspace: str | None = None
    tag: list[str] = Field(default_factory=list, validation_alias=AliasChoices("tag", "tags"))
    entity: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("entity", "entities")
    )
    importance: Annotated[int, Field(ge=1, le=10)] | None = None
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    event_at: str | None = None
    valid_from: str | None = None
    session_id: str | None = None
    prompt_id: str | None = None
    turn_uuid: str | None = None
    task_status: str | None = None
    due: str | None = None
    author: str | None = None
    allow_secret: bool = False

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in MEMORY_TYPES:
            raise ValueError(f"unknown memory type {value!r}; one of {', '.join(MEMORY_TYPES)}")
        if value not in WRITABLE_MEMORY_TYPES:
            raise ValueError(f"memory type {value!r} is written by sleep only")
        return value

    @field_validator("tag", "entity", "body", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return _as_list(value)


class CorrectOp(BaseModel):
    """Replace a memory: write the new one, archive the old, link both ways, one commit."""

    model_config = _CONFIG
    op: Literal["correct"]
    target_path: str = Field(validation_alias=AliasChoices("target_path", "path"))
    title: str | None = None
    claim: str | None = None
    body: list[str] | None = None
    article_html: str | None = None
    type: str | None = Field(default=None, validation_alias=AliasChoices("type", "memory_type"))
    reason: str | None = None
    session_id: str | None = None
    allow_secret: bool = False
    prompt_id: str | None = None
    turn_uuid: str | None = None
    importance: Annotated[int, Field(ge=1, le=10)] | None = None
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None

    @field_validator("body", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return None if value is None else _as_list(value)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str | None) -> str | None:
        return None if value is None else WriteOp._known_type(value)


class ArchiveOp(BaseModel):
    """Move a memory into archive/<YYYY>/<path>."""

    model_config = _CONFIG
    op: Literal["archive"]
    path: str
    reason: str | None = None


class LinkOp(BaseModel):
    """Add an authored link SRC -rel-> DST to SRC's head."""

    model_config = _CONFIG
    op: Literal["link"]
    src: str = Field(validation_alias=AliasChoices("src", "src_path"))
    rel: str
    dst: str = Field(validation_alias=AliasChoices("dst", "dst_path"))


AnyOp = WriteOp | CorrectOp | ArchiveOp | LinkOp
Op = Annotated[AnyOp, Field(discriminator="op")]
OP_ADAPTER: TypeAdapter[AnyOp] = TypeAdapter(Op)
