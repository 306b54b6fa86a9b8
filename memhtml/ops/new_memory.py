"""A write op as a new memory's bytes: the claim rule, field checks and the render.

Pure of the tree and the index: an op and an instant in, a `NewMemory` and
its file bytes out, or a typed error naming the field. The planner
(memhtml.ops.writes) calls these for every new memory, and a large batch's
renders run ahead on worker processes (`render_chunk`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memhtml.contracts.dates import parse_datetime_input
from memhtml.contracts.errors import InvalidMemoryError
from memhtml.contracts.ops import WriteOp, empty_claim_message, says_something
from memhtml.contracts.vocab import DEFAULT_TASK_STATUS, MAX_MEMORY_BYTES, TASK_STATUSES
from memhtml.html import MemoryDocument, NewMemory, render_document

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_claim(paragraphs: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The original's rule for prose ops: the first sentence is the claim, the rest is body."""
    paras = [p.strip() for p in paragraphs if p and p.strip()]
    if not paras:
        return "", ()
    first, *rest = paras
    parts = _SENTENCE_END.split(first, maxsplit=1)
    claim = parts[0].strip()
    remainder = parts[1].strip() if len(parts) > 1 else ""
    return claim, tuple(([remainder] if remainder else []) + rest)


def _write_op(**fields: Any) -> WriteOp:
    """A WriteOp built in code; a refused field is ERR_INVALID_MEMORY."""
    from memhtml.ops.batch import is_validation_error

    try:
        return WriteOp(**fields)
    except ValueError as exc:
        if not is_validation_error(exc):
            raise
        from memhtml.contracts.plain import problems, sentence

        errors = exc.errors(include_url=False)
        raise InvalidMemoryError(
            sentence(errors, limit=1, whole="the memory"),
            details={"errors": problems(errors)},
        ) from exc


def parse_entity(raw: str) -> tuple[str, str]:
    """`type:name` -> (type, name); refuses a value without both parts."""
    etype, sep, name = raw.partition(":")
    if not sep or not etype.strip() or not name.strip():
        raise InvalidMemoryError(
            f"entity {raw!r} is not `type:name`", suggestions=["e.g. --entity service:checkout-api"]
        )
    return etype.strip(), name.strip()


def _require_saying(field: str, claim: str) -> None:
    """InvalidMemoryError naming `field` when the claim holds no letter or digit."""
    if not says_something(claim):
        raise InvalidMemoryError(
            empty_claim_message(field, claim),
            details={"field": field},
            suggestions=[f"give --{field.replace('_', '-')} a sentence that states the fact"],
        )


def _invalid(doc: MemoryDocument, what: str) -> InvalidMemoryError:
    violations = [{"code": v.code, "message": v.message} for v in doc.violations]
    first = violations[0]["message"] if violations else "invalid"
    return InvalidMemoryError(
        f"{what} violates the memory format: {first}",
        details={"violations": violations},
        suggestions=["memhtml doctor <file> lists every violation"],
    )


def new_memory_for(
    op: WriteOp, now: str, *, extra_links: Sequence[tuple[str, str]] = ()
) -> NewMemory:
    """The NewMemory a write op describes at instant `now` (validated field by field)."""
    body = tuple(op.body or ())
    if op.article_html is not None:
        if op.claim or body:
            raise InvalidMemoryError("give either --article-html or --claim/--body, not both")
        claim: str | None = None
    elif op.claim is not None and op.claim.strip():
        claim = op.claim.strip()
        _require_saying("claim", claim)
    else:
        claim, body = split_claim(body)
        if not claim:
            raise InvalidMemoryError(
                "a memory needs a claim: --claim, a --body whose first sentence is the claim,"
                " or --article-html",
                details={"field": "claim"},
            )
        _require_saying("body", claim)
    metas: dict[str, str] = {}
    if op.confidence is not None:
        metas["memhtml-confidence"] = f"{op.confidence:g}"
    if op.importance is not None:
        metas["memhtml-importance"] = str(op.importance)
    for name, value in (
        ("memhtml-author", op.author),
        ("memhtml-session", op.session_id),
        ("memhtml-prompt", op.prompt_id),
        ("memhtml-turn", op.turn_uuid),
    ):
        if value:
            metas[name] = value
    if op.valid_from:
        metas["memhtml-valid-from"] = parse_datetime_input(op.valid_from, field="valid_from")
    if op.type == "task":
        status = op.task_status or DEFAULT_TASK_STATUS
        if status not in TASK_STATUSES:
            raise InvalidMemoryError(f"task status {status!r} is not one of {TASK_STATUSES}")
        metas["memhtml-task-status"] = status
    elif op.task_status:
        raise InvalidMemoryError("a task status belongs on a task only")
    if op.due:
        metas["memhtml-due"] = parse_datetime_input(op.due, field="due")
    event_at = parse_datetime_input(op.event_at, field="event_at") if op.event_at else None
    return NewMemory(
        title=" ".join(op.title.split()),
        memory_type=op.type,
        created=now,
        updated=now,
        claim=claim,
        body=body,
        article_html=op.article_html,
        metas=metas,
        entities=tuple(dict.fromkeys(parse_entity(e) for e in op.entity)),
        tags=tuple(dict.fromkeys(t.strip() for t in op.tag if t.strip())),
        links=tuple(extra_links),
        event_at=event_at,
    )


def rendered(new: NewMemory, what: str) -> tuple[bytes, MemoryDocument]:
    """A NewMemory's file bytes and their parse; InvalidMemoryError when it may not be written."""
    text, doc = render_document(new)
    data = text.encode("utf-8")
    if len(data) > MAX_MEMORY_BYTES:
        raise InvalidMemoryError(
            f"{what} is {len(data)} bytes; one memory holds at most {MAX_MEMORY_BYTES}",
            suggestions=["split it into several memories, one fact each"],
        )
    if not doc.ok:
        raise _invalid(doc, what)
    if new.article_html is not None:
        _require_saying("article_html", doc.gist)  # the <mark> of caller-owned markup
    return data, doc


def render_chunk(items: list[tuple[WriteOp, str]]) -> list[tuple[bytes, MemoryDocument] | None]:
    """Render (op, now) pairs ahead of planning (a worker's task); None where the op fails,
    which the planner then renders itself, raising the failure at that op's turn."""
    out: list[tuple[bytes, MemoryDocument] | None] = []
    for op, now in items:
        try:
            out.append(rendered(new_memory_for(op, now), f"memory {op.title!r}"))
        except Exception:  # the planner meets it again at this op's turn
            out.append(None)
    return out
