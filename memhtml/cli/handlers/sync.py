"""Handlers of the sync group: each calls one function of memhtml.ops.sync."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memhtml.cli.main import Invocation


def sync(
    inv: Invocation,
    remote: str | None = None,
    no_push: bool = False,
    abort: bool = False,
    allow_deletions: bool = False,
) -> dict[str, Any]:
    """Sync with the remote, or abort an unresolved sync."""
    from memhtml.ops import sync as ops

    corpus = inv.corpus()
    if abort:
        return ops.abort(corpus)
    return ops.sync(corpus, remote=remote, push=not no_push, allow_deletions=allow_deletions)


def remote_add(inv: Invocation, name: str, url: str) -> dict[str, Any]:
    """Add a remote."""
    from memhtml.ops.sync import remote_add as add

    return add(inv.corpus(), name, url)
