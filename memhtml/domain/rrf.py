"""Weighted reciprocal rank fusion.

Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods" (SIGIR 2009): score(d) = sum over arms of
w_arm / (k + rank_arm(d)), ranks starting at 1. The retrieval SQL computes the
same sum from :func:`rrf_sql_term`; a property test checks they agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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


def rrf(
    arms: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    k: int = DEFAULT_RRF_K,
) -> list[Fused]:
    """Fuse ranked lists (best first) into one list, best first.

    Ties on score break by path (doc id) ascending so the order is total and
    identical to the SQL statement's ORDER BY. A doc listed twice in one arm
    keeps its best rank.
    """
    w = dict(DEFAULT_WEIGHTS if weights is None else weights)
    ranks: dict[str, dict[str, int]] = {}
    for arm, docs in arms.items():
        if w.get(arm, 0.0) == 0.0:
            continue
        for position, doc in enumerate(docs, start=1):
            per_doc = ranks.setdefault(doc, {})
            if arm not in per_doc:
                per_doc[arm] = position
    fused: list[Fused] = []
    for doc, per_arm in ranks.items():
        contributions = {arm: rrf_contribution(r, w[arm], k) for arm, r in per_arm.items()}
        fused.append(Fused(doc, sum(contributions.values()), dict(per_arm), contributions))
    fused.sort(key=lambda f: (-f.score, f.doc))
    return fused
