"""Validating a JSONL op stream before anything runs.

Numbering, the one convention: an op's `index` is 0-based (``details.index``
of a refusal, ``results[].index`` of a batch), and `line` is 1-based: the
JSONL line for `memhtml apply`, the position in the list otherwise. Messages
from `validate_ops` name the problem only; a batch adapter that prints prose
names the op (`memhtml apply`: "line 3 (op index 1): ...").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from memhtml.contracts.errors import InvalidOpError, MemhtmlError
from memhtml.contracts.ops import ArchiveOp, CorrectOp, LinkOp, WriteOp, parse_op

if TYPE_CHECKING:
    from pydantic import ValidationError

AnyOp = WriteOp | CorrectOp | ArchiveOp | LinkOp
MAX_LINE_BYTES = 4 * 1024 * 1024


def is_validation_error(exc: BaseException) -> TypeGuard[ValidationError]:
    """True for pydantic's ValidationError (a ValueError), without importing pydantic: only a
    refused op loads it (memhtml.contracts.ops)."""
    kind = type(exc)
    return kind.__name__ == "ValidationError" and kind.__module__.startswith("pydantic")


def _describe(exc: ValidationError) -> str:
    from memhtml.contracts.plain import sentence

    return sentence(exc.errors(include_url=False), whole="the op")


def validate_op(raw: Mapping[str, Any] | AnyOp) -> AnyOp:
    """One op checked for shape, memory paths and link rel, before anything runs.

    A bad shape or an unknown rel is InvalidOpError; a bad memory path is
    InvalidPathError (the code every door gives a bad path).
    """
    if isinstance(raw, WriteOp | CorrectOp | ArchiveOp | LinkOp):
        op = raw
    elif not isinstance(raw, Mapping):
        raise InvalidOpError("not a JSON object")
    else:
        try:
            op = parse_op(dict(raw))
        except ValueError as exc:
            if is_validation_error(exc):
                raise InvalidOpError(_describe(exc)) from exc
            raise
    op.check()
    return op


def validate_ops(ops: Iterable[Mapping[str, Any] | AnyOp]) -> list[AnyOp]:
    """Every op validated (see `validate_op`); the first refusal is re-raised naming its op.

    The error keeps its class and code and gains ``details.index`` (0-based)
    and ``details.line`` (1-based position).
    """
    out: list[AnyOp] = []
    for i, raw in enumerate(ops):
        try:
            out.append(validate_op(raw))
        except MemhtmlError as exc:
            raise type(exc)(
                exc.message,
                suggestions=exc.suggestions,
                details={**exc.details, "index": i, "line": i + 1},
            ) from exc
    return out


def parse_jsonl_lines(text: str) -> tuple[list[AnyOp], list[int]]:
    """Parse JSONL text (blank lines and # comments skipped) into validated ops.

    Returns the ops and, for each, its 1-based line. Any refusal is
    InvalidOpError (a usage error: nothing ran) whose message starts with
    "line N (op index I):" and whose details carry `line`, `index` and, when the
    underlying refusal had another code (a bad path), that `cause`.
    """
    raw_ops: list[Any] = []
    lines: list[int] = []
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"line {n} (op index {len(raw_ops)})"
        details: dict[str, Any] = {"line": n, "index": len(raw_ops)}
        if len(stripped) > MAX_LINE_BYTES:
            raise InvalidOpError(f"{where}: longer than {MAX_LINE_BYTES} bytes", details=details)
        try:
            raw_ops.append(json.loads(stripped))
        except json.JSONDecodeError as exc:
            raise InvalidOpError(f"{where}: not JSON ({exc.msg})", details=details) from exc
        lines.append(n)
    ops: list[AnyOp] = []
    for i, raw in enumerate(raw_ops):
        try:
            ops.append(validate_op(raw))
        except MemhtmlError as exc:
            details = {**exc.details, "line": lines[i], "index": i}
            if not isinstance(exc, InvalidOpError):
                details["cause"] = exc.code
            raise InvalidOpError(
                f"line {lines[i]} (op index {i}): {exc.message}; nothing was run",
                suggestions=exc.suggestions,
                details=details,
            ) from exc
    return ops, lines


def parse_jsonl(text: str) -> list[AnyOp]:
    """Parse JSONL text into validated ops (see `parse_jsonl_lines`)."""
    return parse_jsonl_lines(text)[0]
