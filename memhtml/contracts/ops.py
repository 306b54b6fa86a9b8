"""Pydantic models of the JSONL op stream (`memhtml apply`, `memory_write_batch`).

The `write` op is the original memhtml's: ``{"op":"write","title":...,
"type":...,"body":...}`` plus optional snake_case fields. We add `correct`,
`archive` and `link`. Every line is validated before any op runs: its shape
by the model, then what the shape cannot say (memory paths, a known link
rel) by the op's `check()`, which needs neither the tree nor the index.
Constructing a model never runs `check()`, so the single-op doors keep
their own errors.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from memhtml.contracts.errors import InvalidOpError, InvalidPathError
from memhtml.contracts.paths import is_archived_path, memory_path
from memhtml.contracts.vocab import EDGE_RELS, MEMORY_TYPES, WRITABLE_MEMORY_TYPES, normalize_rel

_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, str_strip_whitespace=False)


def _check_path(field: str, value: str) -> str:
    """`value` as a memory path; InvalidPathError naming the field otherwise."""
    try:
        return memory_path(value)
    except InvalidPathError as exc:
        raise InvalidPathError(
            f"{field}: {exc.message}", suggestions=exc.suggestions, details={"field": field}
        ) from exc


def _as_list(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return value


class WriteOp(BaseModel):
    """Write one memory. With `body` only, the body's first sentence is the claim."""

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

    def check(self) -> None:
        """An explicit path must be a memory path outside archive/ (InvalidPathError)."""
        if self.path is None:
            return
        path = _check_path("path", self.path)
        if is_archived_path(path):
            raise InvalidPathError(
                f"path: {path}: new memories are not written into archive/",
                details={"field": "path"},
            )


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

    @field_validator("body", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return None if value is None else _as_list(value)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str | None) -> str | None:
        return None if value is None else WriteOp._known_type(value)

    def check(self) -> None:
        """The target must be a memory path (InvalidPathError)."""
        _check_path("target_path", self.target_path)


class ArchiveOp(BaseModel):
    """Move a memory into archive/<YYYY>/<path>."""

    model_config = _CONFIG
    op: Literal["archive"]
    path: str
    reason: str | None = None

    def check(self) -> None:
        """The path must be a memory path (InvalidPathError)."""
        _check_path("path", self.path)


class LinkOp(BaseModel):
    """Add an authored link SRC -rel-> DST to SRC's head."""

    model_config = _CONFIG
    op: Literal["link"]
    src: str = Field(validation_alias=AliasChoices("src", "src_path"))
    rel: str
    dst: str = Field(validation_alias=AliasChoices("dst", "dst_path"))

    def check(self) -> None:
        """A known rel (InvalidOpError), memory paths (InvalidPathError), no self-link."""
        if normalize_rel(self.rel) is None:
            raise InvalidOpError(
                f"rel: unknown rel {self.rel!r}; one of {', '.join(EDGE_RELS)}",
                suggestions=["memhtml help link lists the rels"],
                details={"field": "rel"},
            )
        src, dst = _check_path("src", self.src), _check_path("dst", self.dst)
        if src == dst:
            raise InvalidOpError("a memory cannot link to itself", details={"field": "dst"})


Op = Annotated[WriteOp | CorrectOp | ArchiveOp | LinkOp, Field(discriminator="op")]
OP_ADAPTER: TypeAdapter[WriteOp | CorrectOp | ArchiveOp | LinkOp] = TypeAdapter(Op)


def parse_op(raw: dict[str, Any]) -> WriteOp | CorrectOp | ArchiveOp | LinkOp:
    """Validate one op object; a missing `op` means `write` (the original's default)."""
    if isinstance(raw, dict) and "op" not in raw:
        raw = {**raw, "op": "write"}
    return OP_ADAPTER.validate_python(raw)
