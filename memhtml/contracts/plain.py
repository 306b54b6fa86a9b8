"""Validation errors in plain words: one translation for every door (CLI, JSONL ops, MCP).

pydantic words a refusal for a programmer ("type: Value error, ...", "Input
should be a valid integer, unable to parse string as an integer", "Extra
inputs are not permitted"). Every door that validates with pydantic hands its
error list (`ValidationError.errors()`) to `problems` or `sentence` here and
shows what comes back: the field named as a caller spells it (`ops[2].title`,
`tag[0]`) and what it must be, in a sentence. The value given is never echoed
for a type error (only what kind of value it was): a caller's mistake can put
anything in a field, a credential included, and a failure message travels back
into an agent's context.

pydantic is not imported here: the error dicts are plain mappings, and a cold
command that never refuses anything never loads pydantic for this.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

# Discriminator values pydantic puts into an error's location (`write` in
# ("write", "title")): a caller never typed them, so they are left out.
OP_TAGS: Final = frozenset({"write", "correct", "archive", "link"})

_KIND_OF: Final = {
    "string_type": "must be text",
    "string_sub_type": "must be text",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_parsing_size": "must be a whole number of a sensible size",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "decimal_type": "must be a number",
    "decimal_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "set_type": "must be a list",
    "frozen_set_type": "must be a list",
    "iterable_type": "must be a list",
    "dict_type": "must be an object (a JSON mapping)",
    "model_type": "must be an object (a JSON mapping)",
    "model_attributes_type": "must be an object (a JSON mapping)",
    "dataclass_type": "must be an object (a JSON mapping)",
    "none_required": "must be null",
    "bytes_type": "must be text",
    "date_type": "must be a date (YYYY-MM-DD)",
    "date_parsing": "must be a date (YYYY-MM-DD)",
    "date_from_datetime_parsing": "must be a date (YYYY-MM-DD)",
    "datetime_type": "must be a date or an ISO instant",
    "datetime_parsing": "must be a date or an ISO instant",
    "missing": "is required",
    "extra_forbidden": "is not a field this accepts",
    "string_pattern_mismatch": "does not have the expected form",
    "json_invalid": "is not valid JSON",
    "json_type": "must be JSON text",
    "callable_type": "must be a value, not code",
    "is_instance_of": "has the wrong kind of value",
    "url_type": "must be a URL",
    "url_parsing": "must be a URL",
    "uuid_type": "must be a UUID",
    "uuid_parsing": "must be a UUID",
}
# A type error says what kind of value it got: never the value itself.
_GOT: Final = (
    (bool, "true/false"),
    (int, "a number"),
    (float, "a number"),
    (str, "text"),
    (list, "a list"),
    (tuple, "a list"),
    (dict, "an object"),
)
_TYPE_ERRORS: Final = frozenset(
    k for k in _KIND_OF if k.endswith(("_type", "_parsing")) or k == "int_from_float"
)
_QUOTED: Final = re.compile(r"'((?:[^'\\]|\\.)*)'")
# pydantic's phrasings, for a message this module does not know by type (the fallback)
_REWORDED: Final = (
    ("Value error, ", ""),
    ("Assertion failed, ", ""),
    ("Input should be ", "must be "),
    ("Field required", "is required"),
    ("Extra inputs are not permitted", "is not a field this accepts"),
    ("String should have ", "must have "),
    ("List should have ", "must have "),
    ("Dictionary should have ", "must have "),
    ("Tuple should have ", "must have "),
)


def field_name(loc: Sequence[Any] | None, *, drop: Iterable[str] = OP_TAGS) -> str:
    """An error location as a caller spells the field: `ops[2].title`, `tag[0]`, `paths[1]`.

    Discriminator tags (an op's kind) and pydantic's own markers (`function-after[...]`)
    are left out; an empty location is the input as a whole.
    """
    dropped = set(drop)
    out = ""
    for part in loc or ():
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        if text in dropped or "[" in text:  # a tag, or pydantic's `function-after[...]`
            continue
        out += f".{text}" if out else text
    return out


def _choices(expected: str) -> str:
    """pydantic's `'a', 'b' or 'c'` as `a, b, c`."""
    found = _QUOTED.findall(expected)
    return ", ".join(found) if found else expected


def _got(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in _GOT:
        if isinstance(value, kind):
            return name
    return "another kind of value"


def _bound(ctx: Mapping[str, Any], key: str) -> str:
    value = ctx.get(key)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def problem(err: Mapping[str, Any]) -> str:
    """What is wrong with one field, as a phrase that follows its name (`must be ...`)."""
    kind = str(err.get("type", ""))
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    msg = str(err.get("msg", ""))
    if kind in ("value_error", "assertion_error"):
        cause = ctx.get("error")
        text = str(cause) if cause is not None else msg
        return reword(text)
    if kind in _TYPE_ERRORS:
        got = f" (got {_got(err['input'])})" if "input" in err else ""
        return _KIND_OF[kind] + got
    if kind in _KIND_OF:
        return _KIND_OF[kind]
    if kind in ("literal_error", "enum"):
        return f"must be one of: {_choices(str(ctx.get('expected', '')))}"
    if kind == "greater_than_equal":
        return f"must be at least {_bound(ctx, 'ge')}"
    if kind == "greater_than":
        return f"must be more than {_bound(ctx, 'gt')}"
    if kind == "less_than_equal":
        return f"must be at most {_bound(ctx, 'le')}"
    if kind == "less_than":
        return f"must be less than {_bound(ctx, 'lt')}"
    if kind == "multiple_of":
        return f"must be a multiple of {_bound(ctx, 'multiple_of')}"
    if kind == "string_too_short":
        least = int(ctx.get("min_length", 1))
        return "must not be empty" if least <= 1 else f"must be at least {least} characters long"
    if kind == "string_too_long":
        return f"must be at most {int(ctx.get('max_length', 0)):,} characters long"
    if kind == "too_short":
        least = int(ctx.get("min_length", 1))
        return "must not be empty" if least <= 1 else f"needs at least {least} items"
    if kind == "too_long":
        most, given = ctx.get("max_length"), ctx.get("actual_length")
        return f"takes at most {most} items" + (f" (got {given})" if given is not None else "")
    if kind == "union_tag_invalid":
        tag = ctx.get("tag")
        return f"must be one of: {_choices(str(ctx.get('expected_tags', '')))} (got {tag!r})"
    if kind == "union_tag_not_found":
        return "is required"
    if "Input should be" in msg or "Value error" in msg or "Field required" in msg:
        return reword(msg)
    return reword(msg) if msg else "is not valid"


def reword(text: str) -> str:
    """A message with pydantic's stock phrases put plainly (the fallback for unknown types)."""
    for old, new in _REWORDED:
        text = text.replace(old, new)
    return text


def _where(err: Mapping[str, Any], drop: Iterable[str]) -> str:
    """The field an error is about: its location, or for a missing discriminator the key."""
    name = field_name(err.get("loc"), drop=drop)
    if str(err.get("type")) in ("union_tag_invalid", "union_tag_not_found"):
        key = _choices(str((err.get("ctx") or {}).get("discriminator", "")))
        return f"{name}.{key}" if name and key else (key or name)
    return name


def problems(
    errors: Iterable[Mapping[str, Any]], *, drop: Iterable[str] = OP_TAGS
) -> list[dict[str, str]]:
    """Each error as {field, problem, kind}: the field as a caller spells it, the problem in
    plain words, and pydantic's error type (`kind`, stable, for programs)."""
    tags = tuple(drop)
    return [
        {"field": _where(e, tags), "problem": problem(e), "kind": str(e.get("type", ""))}
        for e in errors
    ]


def sentence(
    errors: Iterable[Mapping[str, Any]],
    *,
    limit: int = 3,
    whole: str = "the input",
    drop: Iterable[str] = OP_TAGS,
) -> str:
    """The first `limit` problems as one line: `importance must be a whole number (got text);
    title is required` (`whole` names an error about the input as a whole)."""
    found = problems(errors, drop=drop)
    parts = [_joined(p["field"] or whole, p["problem"]) for p in found[:limit]]
    more = len(found) - limit
    if more > 0:
        parts.append(f"and {more} more problem{'s' if more > 1 else ''}")
    return "; ".join(parts) or f"{whole} is not valid"


def _joined(field: str, text: str) -> str:
    """A field and its problem: `title must not be empty`, or `type: unknown memory type`."""
    verbs = ("must ", "is ", "needs ", "takes ", "does ", "has ")
    return f"{field} {text}" if text.startswith(verbs) else f"{field}: {text}"


# What a message must never carry (tests/contracts/test_plain.py checks every door).
PYDANTIC_WORDING: Final = (
    "Value error",
    "Input should be",
    "[type=",
    "Field required",
    "Extra inputs are not permitted",
    "validation error",
    "String should have",
    "List should have",
    "Assertion failed",
    "errors.pydantic.dev",
    "Input tag",
    "should be a valid",
    "unable to parse string",
    "function-after",
    "function-before",
)


def leaks(text: str) -> list[str]:
    """The pydantic phrasings `text` still carries (empty when it reads plainly)."""
    return [w for w in PYDANTIC_WORDING if w in text]
