"""Handlers for the write doors and reads (init, write, apply, read, list, correct, ...)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from memhtml.cli.main import Invocation
from memhtml.contracts.errors import InvalidOpError, PathNotFoundError


def init(inv: Invocation) -> dict[str, Any]:
    """Scaffold the memory root."""
    from dataclasses import asdict

    from memhtml.ops.config import resolve_root
    from memhtml.store.layout import init_repo

    return asdict(init_repo(resolve_root(inv.repo)))


def write(inv: Invocation, **params: Any) -> dict[str, Any]:
    """Write one memory."""
    corpus = inv.corpus()
    fields = {k: v for k, v in params.items() if v not in (None, [], False)}
    fields["strict_path"] = bool(params.get("strict_path"))
    for flag, key in (("tag", "tag"), ("entity", "entity")):
        if params.get(flag):
            fields[key] = list(params[flag])
    title = fields.pop("title")
    mtype = fields.pop("type")
    claim = fields.pop("claim", None)
    body = fields.pop("body", None)
    return dict(corpus.write(title=title, claim=claim, type=mtype, body=body, **fields))


def apply(inv: Invocation, file: str = "-", continue_on_error: bool = False) -> dict[str, Any]:
    """Apply a JSONL op stream as one commit."""
    from memhtml.contracts.errors import MemhtmlError
    from memhtml.ops.batch import parse_jsonl

    if file == "-":
        text = sys.stdin.read()
    else:
        source = Path(file)
        if not source.is_file():
            raise PathNotFoundError(f"no ops file at {file}")
        try:
            text = source.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidOpError(f"{file} is not UTF-8 text") from exc
    ops = parse_jsonl(text)
    outcome = inv.corpus().run_ops(ops, continue_on_error=continue_on_error)
    if outcome.aborted and outcome.failure is not None:
        failed = next(r for r in outcome.results if not r["ok"] and not r.get("skipped"))
        err: MemhtmlError = type(outcome.failure)(
            f"op {failed['index'] + 1} failed ({outcome.failure.message}); nothing was committed",
            suggestions=["fix that op, or pass --continue-on-error to commit the rest"],
            details=outcome.to_data(),
        )
        raise err
    return outcome.to_data()


def read(inv: Invocation, path: str, session_id: str | None = None) -> dict[str, Any]:
    """Read one memory (counts as an access)."""
    return inv.corpus().read(path, session_id=session_id)


def list_memories(inv: Invocation, **params: Any) -> dict[str, Any]:
    """A page of memories."""
    return inv.corpus().list(**params)


def correct(inv: Invocation, path: str, **params: Any) -> dict[str, Any]:
    """Replace a memory and archive the original."""
    fields = {k: v for k, v in params.items() if v not in (None, [])}
    return inv.corpus().correct(path, **fields)


def archive(inv: Invocation, path: str, reason: str | None = None) -> dict[str, Any]:
    """Archive a memory."""
    return inv.corpus().archive(path, reason=reason)


def link(inv: Invocation, src: str, rel: str, dst: str) -> dict[str, Any]:
    """Add an authored link."""
    return inv.corpus().link(src, rel, dst)
