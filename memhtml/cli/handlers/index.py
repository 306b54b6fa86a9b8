"""Handlers for the index plane and store summaries."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation


def rebuild(
    inv: Invocation, embed: bool | None = None, force: bool = False, embedder: str | None = None
) -> dict[str, Any]:
    """Reproject everything."""
    return inv.corpus(embedder=embedder).index.rebuild(embed=embed, force=force)


def update(inv: Invocation, embed: bool = True, embedder: str | None = None) -> dict[str, Any]:
    """Catch up."""
    return inv.corpus(embedder=embedder).index.update(embed=embed)


def embed(inv: Invocation, dry_run: bool = False, embedder: str | None = None) -> dict[str, Any]:
    """Close the vector gap."""
    return inv.corpus(embedder=embedder).index.embed(dry_run=dry_run)


def index_status(inv: Invocation, embedder: str | None = None) -> dict[str, Any]:
    """Index status."""
    return inv.corpus(embedder=embedder).index.status()


def status(inv: Invocation) -> dict[str, Any]:
    """Store summary."""
    from memhtml.ops.health import status as summary

    return summary(inv.corpus())


def entity_activity(
    inv: Invocation,
    type: str | None = None,
    limit: int = 50,
    include_archived: bool = False,
) -> dict[str, Any]:
    """Entity clocks."""
    from memhtml.ops.reads import entity_activity as activity

    return activity(inv.corpus(), type=type, limit=limit, include_archived=include_archived)
