"""Arbitration among near-duplicates: the query's own words first, then time.

Near-duplicate memories ("the API listens on port 8080" / "... 9090", "drain
the VIP" / "do not drain the VIP") score almost alike in every ranking arm.
Embeddings are weakest exactly there (a negation or a digit barely moves a
vector), and rank fusion turns a one-place disagreement between the lexical
and the vector arm into a coin toss. So after fusion, candidates are grouped
into clusters of near-duplicates, and each cluster is re-ordered *within the
positions it already holds*:

1. If the query names a word that tells members apart, the member whose
   distinguishing words the query names (and who carries fewest it does not
   name) goes first: the question says which one it is about.
2. Otherwise the newest member goes first: nothing in the text says which is
   current, and the later statement usually supersedes the earlier one.

Candidates that are near-duplicates of nothing keep their place. Clusters are
complete-link (every member is a near-duplicate of every other), built in rank
order, so one loose pair cannot chain unrelated memories together.

Near-duplicate: the texts share most of their words (Jaccard over word sets,
with at least `min_shared` words in common) or their vectors are very close.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

import numpy.typing as npt

from memhtml.domain.vectors import cosine_similarity

JACCARD_THRESHOLD: Final = 0.6
COSINE_THRESHOLD: Final = 0.95
MIN_SHARED: Final = 3
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> frozenset[str]:
    """The lowercased word set of a text."""
    return frozenset(w.lower() for w in _WORD.findall(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def near_duplicates(
    a_text: str,
    b_text: str,
    a_vec: npt.ArrayLike | None = None,
    b_vec: npt.ArrayLike | None = None,
    *,
    jaccard_threshold: float = JACCARD_THRESHOLD,
    cosine_threshold: float = COSINE_THRESHOLD,
    min_shared: int = MIN_SHARED,
) -> bool:
    """True when two claims are close enough that only time can order them."""
    wa, wb = words(a_text), words(b_text)
    if len(wa & wb) >= min_shared and jaccard(wa, wb) >= jaccard_threshold:
        return True
    if a_vec is not None and b_vec is not None:
        return cosine_similarity(a_vec, b_vec) >= cosine_threshold
    return False


def _named_score(own: frozenset[str], asked: frozenset[str]) -> int:
    """Distinguishing words the query names, minus those it does not."""
    return len(own & asked) - len(own - asked)


def arbitrate(
    ranked: Sequence[str],
    texts: Mapping[str, str],
    times: Mapping[str, str | None],
    vectors: Mapping[str, npt.ArrayLike] | None = None,
    *,
    query: str = "",
    jaccard_threshold: float = JACCARD_THRESHOLD,
    cosine_threshold: float = COSINE_THRESHOLD,
    min_shared: int = MIN_SHARED,
) -> list[str]:
    """Re-order each near-duplicate cluster by the query's words, else newest first.

    Times compare as strings (the stored datetime grammar sorts like time); a
    missing time counts as oldest. Equal keys keep the fused order.
    """
    asked = words(query)
    vecs = vectors or {}
    bags = {d: words(texts.get(d, "")) for d in ranked}

    def close(a: str, b: str) -> bool:
        return near_duplicates(
            texts.get(a, ""),
            texts.get(b, ""),
            vecs.get(a),
            vecs.get(b),
            jaccard_threshold=jaccard_threshold,
            cosine_threshold=cosine_threshold,
            min_shared=min_shared,
        )

    clusters: list[list[int]] = []
    for i, doc in enumerate(ranked):
        home = next((c for c in clusters if all(close(ranked[j], doc) for j in c)), None)
        if home is None:
            clusters.append([i])
        else:
            home.append(i)
    out = list(ranked)
    for members in clusters:
        if len(members) < 2:
            continue
        docs = [ranked[i] for i in members]
        shared = frozenset.intersection(*(bags[d] for d in docs))
        telling = frozenset().union(*(bags[d] for d in docs)) - shared
        named = telling & asked
        if named:
            # sorted() is stable with reverse=True: equal keys keep the fused order
            scores = {i: _named_score(bags[ranked[i]] & telling, asked) for i in members}
            order = sorted(members, key=scores.__getitem__, reverse=True)
        else:
            order = sorted(members, key=lambda i: times.get(ranked[i]) or "", reverse=True)
        for slot, source in zip(members, order, strict=True):
            out[slot] = ranked[source]
    return out
