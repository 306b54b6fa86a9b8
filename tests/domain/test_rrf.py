"""Weighted RRF: hand arithmetic (as ranx spells it) and laws."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.rrf import rrf, rrf_contribution, rrf_contribution_sql


def test_hand_arithmetic() -> None:
    fused = rrf(
        {"fts": ["a", "b", "c"], "recency": ["x", "y", "a"]},
        weights={"fts": 1.0, "recency": 0.5},
        k=60,
    )
    by_doc = {f.doc: f for f in fused}
    assert by_doc["a"].score == pytest.approx(1 / (60 + 1) + 0.5 / (60 + 3))
    assert by_doc["b"].score == pytest.approx(1 / (60 + 2))
    assert by_doc["x"].score == pytest.approx(0.5 / (60 + 1))
    assert fused[0].doc == "a"
    assert by_doc["a"].ranks == {"fts": 1, "recency": 3}


def test_contributions_sum_to_score() -> None:
    for f in rrf({"fts": list("abcd"), "vector": list("dcba"), "salience": ["b"]}):
        assert math.isclose(sum(f.contributions.values()), f.score)


def test_zero_weight_arm_is_ignored() -> None:
    fused = rrf({"fts": ["a"], "vector": ["b"]}, weights={"fts": 1.0, "vector": 0.0})
    assert [f.doc for f in fused] == ["a"]


def test_rank_starts_at_one() -> None:
    with pytest.raises(ValueError):
        rrf_contribution(0, 1.0)


def test_sql_adapter() -> None:
    assert rrf_contribution_sql(1.0, 60, None) == 0.0
    assert rrf_contribution_sql(0.5, 60, 3) == pytest.approx(0.5 / 63)


docs = st.lists(st.sampled_from(list("abcdefghij")), unique=True, max_size=10)


@given(docs, docs, st.floats(0.0, 2.0), st.floats(0.0, 2.0), st.integers(1, 100))
def test_order_is_total_and_monotone(
    a: list[str], b: list[str], wa: float, wb: float, k: int
) -> None:
    fused = rrf({"fts": a, "vector": b}, weights={"fts": wa, "vector": wb}, k=k)
    scores = [f.score for f in fused]
    assert scores == sorted(scores, reverse=True)
    assert len({f.doc for f in fused}) == len(fused)
    expected = ({d for d in a} if wa else set()) | ({d for d in b} if wb else set())
    assert {f.doc for f in fused} == expected
