"""Maximal marginal relevance.

Carbonell & Goldstein, "The Use of MMR, Diversity-Based Reranking for
Reordering Documents and Producing Summaries" (SIGIR 1998): pick, one at a
time, the candidate maximizing lambda * rel(d) - (1 - lambda) * max sim(d, s)
over the already selected s. lambda = 1 is pure relevance order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from memhtml.contracts.vocab import DEFAULT_MMR_LAMBDA
from memhtml.domain.vectors import cosine_similarities

__all__ = ["DEFAULT_MMR_LAMBDA", "mmr"]


def mmr(
    candidates: Sequence[tuple[str, float]],
    vectors: Mapping[str, npt.ArrayLike],
    lam: float = DEFAULT_MMR_LAMBDA,
    limit: int | None = None,
) -> list[str]:
    """Re-order `(doc, relevance)` candidates (best first) for diversity.

    Relevance is min-max scaled to [0, 1] so it is commensurable with cosine.
    A candidate without a vector has similarity 0 to everything. With lam >= 1
    the output is the input order. No doc is returned twice.
    """
    first: dict[str, float] = {}
    for doc, score in candidates:
        first.setdefault(doc, score)
    unique = list(first.items())
    n = len(unique) if limit is None else min(limit, len(unique))
    if lam >= 1.0 or n <= 1:
        return [d for d, _ in unique[:n]]
    scores = np.array([s for _, s in unique], dtype=np.float64)
    span = float(scores.max() - scores.min())
    rel = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
    dims = {np.asarray(v).shape[-1] for v in vectors.values()} if vectors else set()
    dim = dims.pop() if len(dims) == 1 else 0
    matrix = np.zeros((len(unique), max(dim, 1)), dtype=np.float32)
    for i, (doc, _) in enumerate(unique):
        v = vectors.get(doc)
        if v is not None and dim:
            matrix[i] = np.asarray(v, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1)  # what cosine_similarities computes per call
    # The selection runs over Python floats: a pool is a few dozen candidates, so
    # numpy's per-call overhead would dominate; the arithmetic is the same float64
    # (float32 similarities widen exactly), so the choices are the same.
    relevance = rel.tolist()
    max_sim = [-math.inf] * len(unique)
    open_ = [True] * len(unique)
    chosen: list[int] = []
    while len(chosen) < n:
        best, best_gain = -1, -math.inf
        for i, r in enumerate(relevance):
            if not open_[i]:
                continue
            penalty = max_sim[i] if chosen and math.isfinite(max_sim[i]) else 0.0
            gain = lam * r - (1 - lam) * penalty
            # the best gain among the candidates left; on a tie, the earliest
            if best < 0 or gain > best_gain:
                best, best_gain = i, gain
        chosen.append(best)
        open_[best] = False
        sims = cosine_similarities(matrix, matrix[best], norms).tolist()
        max_sim = [max(m, x) for m, x in zip(max_sim, sims, strict=True)]
    return [unique[i][0] for i in chosen]
