"""The op stream's pydantic models, built from the ops' one declaration.

Each op is declared once, in `memhtml.contracts.op_spec`; this module turns
each `OpSpec` into a pydantic model named as the op's class, so an error
reads as it did: a field's kind gives its type and checks (`_annotation`),
its other names a validation alias, its default the default.
`memhtml.contracts.ops` accepts the common, certainly valid op without these
models (building them is most of a cold CLI write's start-up); anything else
(a refused field, an unusual but accepted spelling such as a tuple for a list
or "5" for an integer) is validated here, so every error a caller sees is
pydantic's, word for word.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    create_model,
)

from memhtml.contracts import op_spec
from memhtml.contracts.op_spec import OpField, OpSpec
from memhtml.contracts.vocab import MEMORY_TYPES, WRITABLE_MEMORY_TYPES

_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, str_strip_whitespace=False)


def _as_list(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return value


def _as_list_or_none(value: Any) -> Any:
    return None if value is None else _as_list(value)


def _known_type(value: str | None) -> str | None:
    if value is None:
        return None
    if value not in MEMORY_TYPES:
        raise ValueError(f"unknown memory type {value!r}; one of {', '.join(MEMORY_TYPES)}")
    if value not in WRITABLE_MEMORY_TYPES:
        raise ValueError(f"memory type {value!r} is written by sleep only")
    return value


_LOW_IMPORTANCE, _HIGH_IMPORTANCE = op_spec.IMPORTANCE_RANGE
_LOW_CONFIDENCE, _HIGH_CONFIDENCE = op_spec.CONFIDENCE_RANGE
# kind -> its pydantic type and checks (the fast path's: memhtml.contracts.ops._FAST).
_TYPES: Final[dict[str, Any]] = {
    "str": str,
    "opt_str": str | None,
    "title": Annotated[str, Field(min_length=1, max_length=op_spec.MAX_TITLE_CHARS)],
    "type": Annotated[str, AfterValidator(_known_type)],
    "opt_type": Annotated[str | None, AfterValidator(_known_type)],
    "list": Annotated[list[str], BeforeValidator(_as_list)],
    "opt_list": Annotated[list[str] | None, BeforeValidator(_as_list_or_none)],
    "bool": bool,
    "importance": Annotated[int, Field(ge=_LOW_IMPORTANCE, le=_HIGH_IMPORTANCE)] | None,
    "confidence": Annotated[float, Field(ge=_LOW_CONFIDENCE, le=_HIGH_CONFIDENCE)] | None,
}


def _annotation(field: OpField, op: str) -> Any:
    """The pydantic type of one field; "op" is the op's own name as a literal."""
    return Literal[op] if field.kind == "op" else _TYPES[field.kind]


def _field(field: OpField) -> Any:
    """The pydantic FieldInfo of one field: its default and its other names."""
    extra: dict[str, Any] = {}
    if field.also:
        extra["validation_alias"] = AliasChoices(*field.aliases)
    if field.required:
        return Field(**extra)
    if field.default == []:
        return Field(default_factory=list, **extra)
    return Field(default=field.default, **extra)


def model_from_spec(spec: OpSpec) -> type[BaseModel]:
    """The pydantic model of one op, named as its class (the name titles its errors)."""
    fields: dict[str, Any] = {f.name: (_annotation(f, spec.op), _field(f)) for f in spec.fields}
    doc = f"The {spec.op!r} op (memhtml.contracts.ops.{spec.name}), as pydantic validates it."
    return create_model(spec.name, __config__=_CONFIG, __doc__=doc, __module__=__name__, **fields)


MODELS: Final[dict[str, type[BaseModel]]] = {s.op: model_from_spec(s) for s in op_spec.OPS}
WriteOp = MODELS[op_spec.WRITE.op]
CorrectOp = MODELS[op_spec.CORRECT.op]
ArchiveOp = MODELS[op_spec.ARCHIVE.op]
LinkOp = MODELS[op_spec.LINK.op]

AnyOp = WriteOp | CorrectOp | ArchiveOp | LinkOp
Op = Annotated[AnyOp, Field(discriminator="op")]  # type: ignore[valid-type]
OP_ADAPTER: TypeAdapter[Any] = TypeAdapter(Op)
