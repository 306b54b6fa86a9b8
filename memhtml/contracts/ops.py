"""The ops of the JSONL op stream (`memhtml apply`, `memory_write_batch`).

The `write` op is the original memhtml's: ``{"op":"write","title":...,
"type":...,"body":...}`` plus optional snake_case fields. We add `correct`,
`archive` and `link`. Every line is validated before any op runs: its shape
by the op's class, then what the shape cannot say (memory paths, a known link
rel) by the op's `check()`, which needs neither the tree nor the index.
Constructing an op never runs `check()`, so the single-op doors keep their
own errors.

Each op's fields are declared once, in memhtml.contracts.op_spec (name,
other names, kind, default), and both validators are derived from that
declaration. The shape's reference is pydantic: memhtml.contracts.op_models
builds one model per op from it when first imported. But pydantic and that
build cost a cold `memhtml write` more than its own work, so this module,
which imports no pydantic, derives a fast path from the same declaration
(each class's `FIELDS`): an op whose every field is certainly valid, spelled
the ordinary way (a str for a string, a list of str for a list, an int in
range), is built here without the models; anything else goes to them, which
accept or refuse it and word the refusal. The fast path only ever accepts a
subset of what pydantic accepts, with the same values
(tests/contracts/test_ops.py checks both on generated ops, and that both are
built from the declaration).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final

from memhtml.contracts import op_spec
from memhtml.contracts.errors import InvalidOpError, InvalidPathError
from memhtml.contracts.op_spec import (
    CONFIDENCE_RANGE,
    IMPORTANCE_RANGE,
    MAX_TITLE_CHARS,
    REQUIRED,
    OpField,
    OpSpec,
)
from memhtml.contracts.paths import is_archived_path, memory_path, refuse_generated_name
from memhtml.contracts.vocab import EDGE_RELS, WRITABLE_MEMORY_TYPES, normalize_rel

__all__ = ["MAX_TITLE_CHARS", "OpField", "OpSpec"]  # re-exported from op_spec

_MISSING: Final = object()  # a fast validator's "not certainly valid: pydantic decides"


def says_something(text: str) -> bool:
    """True when `text` holds a letter or a digit (any script: Unicode categories L and N).

    A claim is the fact every listing shows; "...", "." or "—" state nothing,
    and the README's own placeholder once replaced a real memory with one.
    """
    if text.isascii():
        return any(ch.isalnum() for ch in text)
    return any(unicodedata.category(ch)[0] in "LN" for ch in text)


def empty_claim_message(field: str, text: str) -> str:
    """The refusal of a claim that says nothing, naming the field it came from."""
    shown = text if len(text) <= 40 else text[:37] + "..."
    return (
        f"{field}: the claim {shown!r} says nothing; a claim needs at least one letter or"
        " digit (state the fact, e.g. 'The Postgres pool size is 96.')"
    )


def _claim_check(field: str, text: str | None) -> None:
    """InvalidOpError when an explicit claim is given and says nothing (blank means absent)."""
    if text is not None and text.strip() and not says_something(text):
        raise InvalidOpError(
            empty_claim_message(field, text),
            details={"field": field},
            suggestions=[f"give {field} a sentence that states the fact"],
        )


def _check_path(field: str, value: str) -> str:
    """`value` as a memory path; InvalidPathError naming the field otherwise."""
    try:
        return memory_path(value)
    except InvalidPathError as exc:
        raise InvalidPathError(
            f"{field}: {exc.message}", suggestions=exc.suggestions, details={"field": field}
        ) from exc


# -- the fast path: (value) -> the validated value, or _MISSING when pydantic must decide ----
def _plain_str(value: Any) -> bool:
    # pydantic refuses a str that is not valid UTF-8 (a lone surrogate): leave those to it.
    if type(value) is not str:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _str(value: Any) -> Any:
    return value if _plain_str(value) else _MISSING


def _opt_str(value: Any) -> Any:
    return value if value is None or _plain_str(value) else _MISSING


def _title(value: Any) -> Any:
    return value if _plain_str(value) and 1 <= len(value) <= MAX_TITLE_CHARS else _MISSING


def _type(value: Any) -> Any:
    return value if _plain_str(value) and value in WRITABLE_MEMORY_TYPES else _MISSING


def _opt_type(value: Any) -> Any:
    return None if value is None else _type(value)


def _str_list(value: Any) -> Any:
    if type(value) is list and all(_plain_str(v) for v in value):
        return list(value)
    return _MISSING


def _listed(value: Any) -> Any:
    """A "list" field: None is [], a str is [str]."""
    if value is None:
        return []
    return [value] if _plain_str(value) else _str_list(value)


def _listed_or_none(value: Any) -> Any:
    """An "opt_list" field (CorrectOp.body): None stays None, a str is [str]."""
    return None if value is None else _listed(value)


def _bool(value: Any) -> Any:
    return value if type(value) is bool else _MISSING


def _importance(value: Any) -> Any:
    low, high = IMPORTANCE_RANGE
    if value is None or (type(value) is int and low <= value <= high):
        return value
    return _MISSING


def _confidence(value: Any) -> Any:
    if value is None:
        return None
    low, high = CONFIDENCE_RANGE
    if type(value) in (float, int) and low <= value <= high:
        return float(value)
    return _MISSING


# kind (see memhtml.contracts.op_spec) -> the fast validator; "op" is built per class.
_FAST: Final[dict[str, Callable[[Any], Any]]] = {
    "str": _str,
    "opt_str": _opt_str,
    "title": _title,
    "type": _type,
    "opt_type": _opt_type,
    "list": _listed,
    "opt_list": _listed_or_none,
    "bool": _bool,
    "importance": _importance,
    "confidence": _confidence,
}

# A field as the fast path reads it: (its names, the fast validator, its default).
Spec = tuple[tuple[str, ...], Callable[[Any], Any], Any]


def _literal(op: str) -> Callable[[Any], Any]:
    return lambda v: v if type(v) is str and v == op else _MISSING


def _fast_spec(field: OpField, op: str) -> Spec:
    validate = _literal(op) if field.kind == "op" else _FAST[field.kind]
    return (field.aliases, validate, field.default)


class _Op:
    """An op: its fields as attributes, validated on construction (see the module doc).

    A subclass names its `OpSpec` (memhtml.contracts.op_spec); its `op` value
    and FIELDS (the fast path's view) are derived from it, as is the pydantic
    model of the same name. The typed attributes of each class are for the
    type checker; a test holds them to the spec.
    """

    SPEC: ClassVar[OpSpec]
    FIELDS: ClassVar[dict[str, Spec]]
    OP: ClassVar[str]
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value, as the models were

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__ != cls.SPEC.name:  # the model's name, which titles its errors
            raise TypeError(f"{cls.__name__} declares the spec of {cls.SPEC.name}")
        cls.OP = cls.SPEC.op
        cls.FIELDS = {f.name: _fast_spec(f, cls.OP) for f in cls.SPEC.fields}

    def __init__(self, **data: Any) -> None:
        values = self._fast(data)
        if values is None:
            from memhtml.contracts import op_models

            model = op_models.MODELS[self.OP](**data)  # raises ValidationError
            values = {name: getattr(model, name) for name in self.FIELDS}
        self.__dict__.update(values)

    @classmethod
    def _fast(cls, data: Mapping[str, Any]) -> dict[str, Any] | None:
        """The validated fields when every one is certainly valid, else None."""
        values: dict[str, Any] = {}
        seen = 0
        for name, (aliases, validate, default) in cls.FIELDS.items():
            given = [a for a in aliases if a in data]
            if len(given) > 1:
                return None  # two spellings of one field: pydantic's rules decide
            if not given:
                if default is REQUIRED:
                    return None
                values[name] = list(default) if type(default) is list else default
                continue
            seen += 1
            value = validate(data[given[0]])
            if value is _MISSING:
                return None
            values[name] = value
        return values if seen == len(data) else None  # an unknown key is pydantic's to refuse

    @classmethod
    def _from_model(cls, model: Any) -> _Op:
        op = cls.__new__(cls)
        op.__dict__.update({name: getattr(model, name) for name in cls.FIELDS})
        return op

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({fields})"


class WriteOp(_Op):
    """Write one memory. With `body` only, the body's first sentence is the claim."""

    SPEC = op_spec.WRITE
    op: str
    title: str
    type: str
    claim: str | None
    body: list[str] | None
    article_html: str | None
    path: str | None
    strict_path: bool
    workspace: str | None
    tag: list[str]
    entity: list[str]
    importance: int | None
    confidence: float | None
    event_at: str | None
    valid_from: str | None
    session_id: str | None
    prompt_id: str | None
    turn_uuid: str | None
    task_status: str | None
    due: str | None
    author: str | None
    allow_secret: bool

    def check(self) -> None:
        """An explicit claim must say something (InvalidOpError); an explicit path must be a
        memory path outside archive/ (InvalidPathError)."""
        _claim_check("claim", self.claim)
        if self.path is None:
            return
        path = _check_path("path", self.path)
        refuse_generated_name(path)
        if is_archived_path(path):
            raise InvalidPathError(
                f"path: {path}: new memories are not written into archive/",
                details={"field": "path"},
            )


class CorrectOp(_Op):
    """Replace a memory: write the new one, archive the old, link both ways, one commit."""

    SPEC = op_spec.CORRECT
    op: str
    target_path: str
    title: str | None
    claim: str | None
    body: list[str] | None
    article_html: str | None
    type: str | None
    reason: str | None
    session_id: str | None
    allow_secret: bool
    prompt_id: str | None
    turn_uuid: str | None
    importance: int | None
    confidence: float | None

    def check(self) -> None:
        """The target must be a memory path (InvalidPathError); an explicit claim must say
        something (InvalidOpError)."""
        _check_path("target_path", self.target_path)
        _claim_check("claim", self.claim)


class ArchiveOp(_Op):
    """Move a memory into archive/<YYYY>/<path>."""

    SPEC = op_spec.ARCHIVE
    op: str
    path: str
    reason: str | None

    def check(self) -> None:
        """The path must be a memory path (InvalidPathError)."""
        _check_path("path", self.path)


class LinkOp(_Op):
    """Add an authored link SRC -rel-> DST to SRC's head."""

    SPEC = op_spec.LINK
    op: str
    src: str
    rel: str
    dst: str

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


AnyOp = WriteOp | CorrectOp | ArchiveOp | LinkOp
_BY_OP: Final[dict[str, type[_Op]]] = {c.OP: c for c in (WriteOp, CorrectOp, ArchiveOp, LinkOp)}


def parse_op(raw: dict[str, Any]) -> AnyOp:
    """Validate one op object; a missing `op` means `write` (the original's default).

    A refusal is pydantic's ValidationError, as the discriminated union of the
    models words it.
    """
    if isinstance(raw, dict) and "op" not in raw:
        raw = {**raw, "op": "write"}
    kind = _BY_OP.get(raw["op"]) if isinstance(raw, dict) and type(raw.get("op")) is str else None
    if kind is not None:
        values = kind._fast(raw)
        if values is not None:
            op = kind.__new__(kind)
            op.__dict__.update(values)
            return op  # type: ignore[return-value]
    from memhtml.contracts.op_models import OP_ADAPTER

    model = OP_ADAPTER.validate_python(raw)
    return _BY_OP[model.op]._from_model(model)  # type: ignore[return-value]
