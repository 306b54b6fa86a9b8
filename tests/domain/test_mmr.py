"""MMR laws: lambda = 1 is relevance order, no duplicates, diversity when lambda < 1."""

from __future__ import annotations

import numpy as np
from hypothesis import given
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
