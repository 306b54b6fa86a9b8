"""The one declaration of the JSONL ops' fields (`write`, `correct`, `archive`, `link`).

Each op is an `OpSpec`: its class name, its `op` value and its fields. Both
validators are derived from it: `memhtml.contracts.ops` builds its pydantic-free
fast path from each field's kind, and `memhtml.contracts.op_models` builds the
pydantic models (the reference, whose refusals a caller reads) from the same
fields. This module imports nothing beyond the standard library, so a cold
`memhtml write` reads it without loading pydantic.

A field's kind names its type and checks:

- ``op``: the op's own name (a literal)
- ``str`` / ``opt_str``: a string / a string or None
- ``title``: a string of 1..MAX_TITLE_CHARS characters
- ``type`` / ``opt_type``: a writable memory type / one or None
- ``list``: a list of strings; a string is [it], None is []
- ``opt_list``: as ``list``, but None stays None
- ``bool``: a bool
- ``importance``: an int in IMPORTANCE_RANGE, or None
- ``confidence``: a float (or an int) in CONFIDENCE_RANGE, or None
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

REQUIRED: Final = object()  # the default of a field that must be given
MAX_TITLE_CHARS: Final = 300
IMPORTANCE_RANGE: Final = (1, 10)
CONFIDENCE_RANGE: Final = (0.0, 1.0)
KINDS: Final = frozenset(
    {
        "op",
        "str",
        "opt_str",
        "title",
        "type",
        "opt_type",
        "list",
        "opt_list",
        "bool",
        "importance",
        "confidence",
    }
)


class OpField(NamedTuple):
    """One field of an op: its name, kind (see the module doc), default and other names."""

    name: str
    kind: str
    default: Any = REQUIRED
    also: tuple[str, ...] = ()

    @property
    def aliases(self) -> tuple[str, ...]:
        """Every name the field may be given by, its own first."""
        return (self.name, *self.also)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


class OpSpec(NamedTuple):
    """One op: the name of its class (and of its pydantic model), its `op` and its fields."""

    name: str
    op: str
    fields: tuple[OpField, ...]


def _opt(name: str) -> OpField:
    return OpField(name, "opt_str", None)


WRITE: Final = OpSpec(
    "WriteOp",
    "write",
    (
        OpField("op", "op", "write"),
        OpField("title", "title"),
        OpField("type", "type", also=("memory_type",)),
        _opt("claim"),
        OpField("body", "list", None),
        _opt("article_html"),
        _opt("path"),
        OpField("strict_path", "bool", False),
        _opt("workspace"),
        OpField("tag", "list", [], also=("tags",)),
        OpField("entity", "list", [], also=("entities",)),
        OpField("importance", "importance", None),
        OpField("confidence", "confidence", None),
        _opt("event_at"),
        _opt("valid_from"),
        _opt("session_id"),
        _opt("prompt_id"),
        _opt("turn_uuid"),
        _opt("task_status"),
        _opt("due"),
        _opt("author"),
        OpField("allow_secret", "bool", False),
    ),
)
CORRECT: Final = OpSpec(
    "CorrectOp",
    "correct",
    (
        OpField("op", "op"),
        OpField("target_path", "str", also=("path",)),
        _opt("title"),
        _opt("claim"),
        OpField("body", "opt_list", None),
        _opt("article_html"),
        OpField("type", "opt_type", None, also=("memory_type",)),
        _opt("reason"),
        _opt("session_id"),
        OpField("allow_secret", "bool", False),
        _opt("prompt_id"),
        _opt("turn_uuid"),
        OpField("importance", "importance", None),
        OpField("confidence", "confidence", None),
    ),
)
ARCHIVE: Final = OpSpec(
    "ArchiveOp", "archive", (OpField("op", "op"), OpField("path", "str"), _opt("reason"))
)
LINK: Final = OpSpec(
    "LinkOp",
    "link",
    (
        OpField("op", "op"),
        OpField("src", "str", also=("src_path",)),
        OpField("rel", "str"),
        OpField("dst", "str", also=("dst_path",)),
    ),
)
OPS: Final = (WRITE, CORRECT, ARCHIVE, LINK)  # the order of pydantic's union
