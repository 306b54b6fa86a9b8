"""Handlers for search, recall, reinforce, neighbors and resolve."""

from __future__ import annotations

from typing import Any

from memhtml.cli.main import Invocation
from memhtml.index.retrieval import parse_weights


def _scope(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": params.get("type") or None,
        "workspace": params.get("workspace"),
        "tag": params.get("tag") or None,
        "entity": params.get("entity"),
        "include_archived": bool(params.get("include_archived")),
        "as_of": params.get("as_of"),
    }


def search(inv: Invocation, query: str, **params: Any) -> dict[str, Any]:
    """Ranked hits."""
    corpus = inv.corpus(embedder=params.get("embedder"))
    result = corpus.search(
        query,
        limit=params.get("limit") or 10,
        weights=parse_weights(params.get("weight")),
        k=params.get("k"),
        mmr_lambda=params.get("mmr_lambda"),
        time_weight=params.get("time_weight"),
        explain=bool(params.get("explain")),
        exact=bool(params.get("exact")),
        facet=params.get("facet") or None,
        **_scope(params),
    )
    return result.to_data()


def recall(inv: Invocation, query: str, budget: int = 16000, **params: Any) -> dict[str, Any]:
    """A disclosure pack."""
    corpus = inv.corpus(embedder=params.get("embedder"))
    return corpus.recall(query, budget=budget, **_scope(params))


def reinforce(inv: Invocation, paths: list[str], signal: str = "neutral") -> dict[str, Any]:
    """Move salience."""
    return inv.corpus().reinforce(paths, signal)


def neighbors(
    inv: Invocation, path: str, depth: int = 1, rel: list[str] | None = None, limit: int = 100
) -> dict[str, Any]:
    """The graph around a memory."""
    from memhtml.ops.reads import neighbors as graph

    return graph(inv.corpus(), path, depth=depth, rels=rel, limit=limit)


def resolve(inv: Invocation, path: str) -> dict[str, Any]:
    """What a path became."""
    from memhtml.ops.reads import resolve as follow

    return follow(inv.corpus(), path)
