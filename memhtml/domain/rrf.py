"""Weighted reciprocal rank fusion.

Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods" (SIGIR 2009): score(d) = sum over arms of
w_arm / (k + rank_arm(d)), ranks starting at 1. The retrieval SQL computes the
same sum from :func:`rrf_sql_term`; a property test checks they agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memhtml.contracts.vocab import DEFAULT_RRF_K, DEFAULT_WEIGHTS


def rrf_contribution(rank: int, weight: float, k: int = DEFAULT_RRF_K) -> float:
    """One arm's contribution for a document at 1-based `rank`."""
    if rank < 1:
        raise ValueError("ranks start at 1")
    return weight / (k + rank)


def rrf_contribution_sql(weight: float | None, k: int | None, rank: int | None) -> float:
    """:func:`rrf_contribution` as the SQL function `memhtml_rrf` (a NULL rank contributes 0)."""
    if rank is None or weight is None or k is None:
        return 0.0
    return rrf_contribution(int(rank), float(weight), int(k))


@dataclass(frozen=True)
class Fused:
    """One fused document: its score and each arm's rank and contribution."""

    doc: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    contributions: dict[str, float] = field(default_factory=dict)


# When two documents fuse to the same score, the lexical arm's order decides,
# then the vector arm's, then the path: an exact-token match (a negation, a
# number) is the more discriminating evidence between near-duplicates.
TIE_BREAK: tuple[str, ...] = ("fts", "vector")


def order_key(score: float, ranks: Mapping[str, int], doc: str) -> tuple[Any, ...]:
    """Best first: score, then the lexical rank, the vector rank, the doc id (as SQL orders)."""
    return (-score, *(float(ranks.get(arm, math.inf)) for arm in TIE_BREAK), doc)


def rrf(
    arms: Mapping[str, Sequence[str] | Mapping[str, int]],
    weights: Mapping[str, float] | None = None,
    k: int = DEFAULT_RRF_K,
) -> list[Fused]:
    """Fuse ranked lists into one list, best first.

    An arm is either a list (best first; ranks are positions from 1) or a
    mapping doc -> rank, for arms where equal values share a rank (recency).
    Ties on score break by the fts rank, then the vector rank, then the doc
    id, exactly as the SQL statement orders. A doc listed twice in one arm
    keeps its best rank.
    """
    w = dict(DEFAULT_WEIGHTS if weights is None else weights)
    ranks: dict[str, dict[str, int]] = {}
    for arm, docs in arms.items():
        if w.get(arm, 0.0) == 0.0:
            continue
        pairs = docs.items() if isinstance(docs, Mapping) else enumerate(docs, start=1)
        for a, b in pairs:
            doc, position = (a, b) if isinstance(docs, Mapping) else (b, a)
            per_doc = ranks.setdefault(str(doc), {})
            if arm not in per_doc or int(position) < per_doc[arm]:
                per_doc[arm] = int(position)
    fused: list[Fused] = []
    for doc, per_arm in ranks.items():
        contributions = {arm: rrf_contribution(r, w[arm], k) for arm, r in per_arm.items()}
        # fsum: exactly rounded, so the score does not depend on the arms' order
        fused.append(Fused(doc, math.fsum(contributions.values()), dict(per_arm), contributions))
    fused.sort(key=lambda f: order_key(f.score, f.ranks, f.doc))
    return fused
