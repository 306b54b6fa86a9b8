"""The ops of the JSONL op stream (`memhtml apply`, `memory_write_batch`).

The `write` op is the original memhtml's: ``{"op":"write","title":...,
"type":...,"body":...}`` plus optional snake_case fields. We add `correct`,
`archive` and `link`. Every line is validated before any op runs: its shape
by the op's class, then what the shape cannot say (memory paths, a known link
rel) by the op's `check()`, which needs neither the tree nor the index.
Constructing an op never runs `check()`, so the single-op doors keep their
own errors.

The shape's reference is pydantic (memhtml.contracts.op_models), but pydantic
and its model build cost a cold `memhtml write` more than its own work. So an
op whose every field is certainly valid, spelled the ordinary way (a str for
a string, a list of str for a list, an int in range), is built here without
it; anything else goes to the pydantic models, which accept or refuse it and
word the refusal exactly as before. The fast path only ever accepts a subset
of what pydantic accepts, with the same values (tests/contracts/test_ops.py
checks both on generated ops).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final

from memhtml.contracts.errors import InvalidOpError, InvalidPathError
from memhtml.contracts.paths import is_archived_path, memory_path, refuse_generated_name
from memhtml.contracts.vocab import EDGE_RELS, WRITABLE_MEMORY_TYPES, normalize_rel

_MISSING: Final = object()
MAX_TITLE_CHARS: Final = 300


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
    """A list field with the models' `_listify`: None is [], a str is [str]."""
    if value is None:
        return []
    return [value] if _plain_str(value) else _str_list(value)


def _listed_or_none(value: Any) -> Any:
    """CorrectOp.body: None stays None, a str is [str]."""
    return None if value is None else _listed(value)


def _bool(value: Any) -> Any:
    return value if type(value) is bool else _MISSING


def _importance(value: Any) -> Any:
    if value is None or (type(value) is int and 1 <= value <= 10):
        return value
    return _MISSING


def _confidence(value: Any) -> Any:
    if value is None:
        return None
    if type(value) in (float, int) and 0.0 <= value <= 1.0:
        return float(value)
    return _MISSING


# A field: (the names it may be given by, the fast validator, its default; _MISSING = required).
Spec = tuple[tuple[str, ...], Callable[[Any], Any], Any]


class _Op:
    """An op: its fields as attributes, validated on construction (see the module doc)."""

    FIELDS: ClassVar[dict[str, Spec]]
    OP: ClassVar[str]
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value, as the models were

    def __init__(self, **data: Any) -> None:
        values = self._fast(data)
        if values is None:
            from memhtml.contracts import op_models

            model = getattr(op_models, type(self).__name__)(**data)  # raises ValidationError
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
                if default is _MISSING:
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


def _op_field(op: str) -> Spec:
    return (("op",), lambda v: v if v == op and type(v) is str else _MISSING, _MISSING)


def _opt(name: str) -> Spec:
    return ((name,), _opt_str, None)


class WriteOp(_Op):
    """Write one memory. With `body` only, the body's first sentence is the claim."""

    OP = "write"
    FIELDS: ClassVar[dict[str, Spec]] = {
        "op": (("op",), lambda v: v if v == "write" and type(v) is str else _MISSING, "write"),
        "title": (("title",), _title, _MISSING),
        "type": (("type", "memory_type"), _type, _MISSING),
        "claim": _opt("claim"),
        "body": (("body",), _listed, None),
        "article_html": _opt("article_html"),
        "path": _opt("path"),
        "strict_path": (("strict_path",), _bool, False),
        "workspace": _opt("workspace"),
        "tag": (("tag", "tags"), _listed, []),
        "entity": (("entity", "entities"), _listed, []),
        "importance": (("importance",), _importance, None),
        "confidence": (("confidence",), _confidence, None),
        "event_at": _opt("event_at"),
        "valid_from": _opt("valid_from"),
        "session_id": _opt("session_id"),
        "prompt_id": _opt("prompt_id"),
        "turn_uuid": _opt("turn_uuid"),
        "task_status": _opt("task_status"),
        "due": _opt("due"),
        "author": _opt("author"),
        "allow_secret": (("allow_secret",), _bool, False),
    }
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

    OP = "correct"
    FIELDS: ClassVar[dict[str, Spec]] = {
        "op": _op_field("correct"),
        "target_path": (("target_path", "path"), _str, _MISSING),
        "title": _opt("title"),
        "claim": _opt("claim"),
        "body": (("body",), _listed_or_none, None),
        "article_html": _opt("article_html"),
        "type": (("type", "memory_type"), _opt_type, None),
        "reason": _opt("reason"),
        "session_id": _opt("session_id"),
        "allow_secret": (("allow_secret",), _bool, False),
        "prompt_id": _opt("prompt_id"),
        "turn_uuid": _opt("turn_uuid"),
        "importance": (("importance",), _importance, None),
        "confidence": (("confidence",), _confidence, None),
    }
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

    OP = "archive"
    FIELDS: ClassVar[dict[str, Spec]] = {
        "op": _op_field("archive"),
        "path": (("path",), _str, _MISSING),
        "reason": _opt("reason"),
    }
    op: str
    path: str
    reason: str | None

    def check(self) -> None:
        """The path must be a memory path (InvalidPathError)."""
        _check_path("path", self.path)


class LinkOp(_Op):
    """Add an authored link SRC -rel-> DST to SRC's head."""

    OP = "link"
    FIELDS: ClassVar[dict[str, Spec]] = {
        "op": _op_field("link"),
        "src": (("src", "src_path"), _str, _MISSING),
        "rel": (("rel",), _str, _MISSING),
        "dst": (("dst", "dst_path"), _str, _MISSING),
    }
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
