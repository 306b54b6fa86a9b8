"""MMR laws: lambda = 1 is relevance order, no duplicates, diversity when lambda < 1."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.domain.mmr import mmr
from memhtml.domain.vectors import cosine_distance, cosine_similarities, cosine_similarity


def test_lambda_one_is_relevance_order() -> None:
    cands = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    vecs = {"a": [1, 0], "b": [1, 0], "c": [0, 1]}
    assert mmr(cands, vecs, lam=1.0) == ["a", "b", "c"]


def test_diversity_promotes_the_different_one() -> None:
    cands = [("a", 0.9), ("b", 0.89), ("c", 0.7)]
    vecs = {"a": [1, 0], "b": [1, 0.01], "c": [0, 1]}
    assert mmr(cands, vecs, lam=0.5) == ["a", "c", "b"]


@given(
    st.lists(st.tuples(st.sampled_from(list("abcdefgh")), st.floats(0, 1)), max_size=12),
    st.floats(0, 1),
    st.integers(1, 12),
)
def test_no_duplicates_and_limit(cands: list[tuple[str, float]], lam: float, limit: int) -> None:
    rng = np.random.default_rng(0)
    vecs = {d: rng.normal(size=4) for d, _ in cands}
    out = mmr(cands, vecs, lam=lam, limit=limit)
    assert len(out) == len(set(out))
    assert len(out) == min(limit, len({d for d, _ in cands}))
    assert set(out) <= {d for d, _ in cands}


def test_cosine_rules() -> None:
    assert cosine_distance([1, 0], [1, 0]) == 0.0
    assert cosine_distance([1, 0], [-1, 0]) == 2.0
    assert cosine_similarity([0, 0], [1, 0]) == 0.0  # zero magnitude: similarity 0
    m = np.array([[1, 0], [0, 0], [3, 4]], dtype=np.float32)
    assert np.allclose(cosine_similarities(m, [1, 0]), [1.0, 0.0, 0.6])


def _mmr_one_by_one(
    candidates: list[tuple[str, float]], vectors: dict[str, list[float]], lam: float, limit: int
) -> list[str]:
    """The scalar selection loop MMR used before its array version: the oracle."""
    first: dict[str, float] = {}
    for doc, score in candidates:
        first.setdefault(doc, score)
    unique = list(first.items())
    n = min(limit, len(unique))
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
    max_sim = np.full(len(unique), -np.inf)
    chosen: list[int] = []
    remaining = list(range(len(unique)))
    while remaining and len(chosen) < n:
        penalty = np.where(np.isfinite(max_sim), max_sim, 0.0) if chosen else np.zeros(len(unique))
        best = max(remaining, key=lambda i: (lam * rel[i] - (1 - lam) * penalty[i], -i))
        chosen.append(best)
        remaining.remove(best)
        max_sim = np.maximum(max_sim, cosine_similarities(matrix, matrix[best]))
    return [unique[i][0] for i in chosen]


@given(
    st.lists(
        st.tuples(st.sampled_from(list("abcdefghij")), st.sampled_from([0.1, 0.2, 0.2, 0.5, 0.9])),
        max_size=12,
    ),
    st.lists(
        st.lists(st.sampled_from([0.0, 1.0, -1.0, 0.5]), min_size=3, max_size=3),
        min_size=10,
        max_size=10,
    ),
    st.sampled_from([0.0, 0.3, 0.7, 0.99]),
    st.integers(1, 12),
)
@settings(deadline=None)
def test_selection_equals_the_scalar_loop(
    cands: list[tuple[str, float]], raw: list[list[float]], lam: float, limit: int
) -> None:
    """Ties (equal relevance, equal vectors, zero vectors) resolve exactly as the scalar loop."""
    vecs = {d: raw[i] for i, d in enumerate("abcdefghij") if i % 4 != 3}
    assert mmr(cands, vecs, lam=lam, limit=limit) == _mmr_one_by_one(cands, vecs, lam, limit)
