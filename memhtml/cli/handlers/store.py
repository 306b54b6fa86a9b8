"""Handlers for the write doors and reads (init, write, apply, read, list, correct, ...)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, cast

from memhtml.cli.main import Invocation
from memhtml.contracts.errors import (
    InvalidOpError,
    PathNotFoundError,
    UnexpectedArgumentError,
)


def init(inv: Invocation, clone: str | None = None) -> dict[str, Any]:
    """Scaffold the memory root; with `clone`, clone a shared memory into it and index it."""
    from dataclasses import asdict

    from memhtml.ops.config import resolve_root
    from memhtml.store.layout import init_repo

    root = resolve_root(inv.repo)
    if clone is None:
        return asdict(init_repo(root))
    from memhtml.ops.sync import clone as clone_into

    cloned = clone_into(clone, root)
    corpus = inv.corpus()
    try:
        report = corpus.sync()
    finally:
        corpus.close()
    return {
        **cloned["init"],
        "cloned_from": clone,
        "index": report.to_data() if report is not None else None,
    }


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


def apply(
    inv: Invocation,
    *,
    file: str | None = None,
    file_option: str | None = None,
    continue_on_error: bool = False,
    detect_conflicts: bool = False,
    detect_near_duplicates: bool = False,
    consolidate: str | None = None,
    strict: bool = False,
    allow_secret: bool = False,
) -> dict[str, Any]:
    """Apply a JSONL op stream as one commit (the file positionally, as --file, or - for stdin)."""
    from memhtml.ops.batch import parse_jsonl_lines
    from memhtml.ops.write_checks import WriteChecks

    checks = WriteChecks(
        detect_conflicts=detect_conflicts,
        detect_near_duplicates=detect_near_duplicates,
        consolidate=cast("Literal['last-wins'] | None", consolidate),  # validated by WriteChecks
        strict=strict,
    )

    if file is not None and file_option is not None and file != file_option:
        raise UnexpectedArgumentError(
            f"two ops files given ({file} and --file {file_option}); give one",
            suggestions=["memhtml help apply"],
        )
    source = file or file_option or "-"
    ops, lines = parse_jsonl_lines(_read_ops(source))
    if allow_secret:
        for op in ops:
            if hasattr(op, "allow_secret"):
                op.allow_secret = True
    outcome = inv.corpus().run_ops(ops, continue_on_error=continue_on_error, checks=checks)
    for result in outcome.results:
        result["line"] = lines[result["index"]]
    error = outcome.error(continue_flag="--continue-on-error", lines=lines)
    if error is not None:
        raise error
    return outcome.to_data()


def _read_ops(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    path = Path(source).expanduser()
    if not path.is_file():
        raise PathNotFoundError(f"no ops file at {source}", suggestions=["memhtml help apply"])
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidOpError(f"{source} is not UTF-8 text") from exc


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
