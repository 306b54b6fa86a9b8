"""Validating a JSONL op stream before anything runs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from memhtml.contracts.errors import InvalidOpError
from memhtml.contracts.ops import ArchiveOp, CorrectOp, LinkOp, WriteOp, parse_op

AnyOp = WriteOp | CorrectOp | ArchiveOp | LinkOp
MAX_LINE_BYTES = 4 * 1024 * 1024


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(
            str(x) for x in err.get("loc", ()) if x not in ("write", "correct", "archive", "link")
        )
        parts.append(f"{where or 'op'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def validate_ops(ops: Iterable[Mapping[str, Any] | AnyOp]) -> list[AnyOp]:
    """Every op validated for shape; the first bad one is an InvalidOpError naming it (1-based)."""
    out: list[AnyOp] = []
    for n, raw in enumerate(ops, start=1):
        if isinstance(raw, WriteOp | CorrectOp | ArchiveOp | LinkOp):
            out.append(raw)
            continue
        if not isinstance(raw, Mapping):
            raise InvalidOpError(f"op {n}: not a JSON object", details={"line": n})
        try:
            out.append(parse_op(dict(raw)))
        except ValidationError as exc:
            raise InvalidOpError(f"op {n}: {_describe(exc)}", details={"line": n}) from exc
    return out


def parse_jsonl(text: str) -> list[AnyOp]:
    """Parse JSONL text (blank lines and # comments skipped) into validated ops."""
    raw_ops: list[Any] = []
    lines: list[int] = []
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(stripped) > MAX_LINE_BYTES:
            raise InvalidOpError(
                f"line {n}: longer than {MAX_LINE_BYTES} bytes", details={"line": n}
            )
        try:
            raw_ops.append(json.loads(stripped))
        except json.JSONDecodeError as exc:
            raise InvalidOpError(f"line {n}: not JSON ({exc.msg})", details={"line": n}) from exc
        lines.append(n)
    try:
        return validate_ops(raw_ops)
    except InvalidOpError as exc:
        idx = int(exc.details.get("line", 1)) - 1
        line_no = lines[idx] if 0 <= idx < len(lines) else idx + 1
        message = exc.message.replace(f"op {idx + 1}:", f"line {line_no}:", 1)
        raise InvalidOpError(message, details={"line": line_no}) from exc
