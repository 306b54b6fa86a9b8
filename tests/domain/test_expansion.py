"""Second-round expansion (memhtml.domain.expansion) and newer-first among same-topic hits."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.expansion import (
    entity_terms,
    expanded_query,
    feedback_terms,
    merge_rounds,
    tokens,
)
from memhtml.domain.topic_recency import newer_first, topic_groups

ids = st.lists(st.text("abcdefgh", min_size=1, max_size=3), unique=True, max_size=15)


def test_feedback_terms_are_shared_new_words_most_shared_first() -> None:
    texts = [
        "Caroline: I went to the pride parade in June",
        "Melanie: the parade was loud, Caroline loved it",
        "Caroline: June was great, the parade and the beach",
    ]
    got = feedback_terms("when did Caroline go to a parade?", texts, stopwords={"the", "was"})
    assert got[0] == "june"  # in two texts, not in the query
    assert "caroline" not in got and "parade" not in got and "the" not in got
    assert all(sum(w in tokens(t) for t in texts) >= 2 for w in got)
    assert feedback_terms("q", texts, max_terms=0) == []


def test_entity_terms_name_what_the_query_lacks() -> None:
    hits = [["person:Caroline", "topic:adoption"], ["person:Melanie"], ["person:Melanie"]]
    assert entity_terms("what did Caroline say about it", hits) == ["melanie", "adoption"]
    assert expanded_query("q", []) == "q" and expanded_query("q", ["a", "b"]) == "q a b"


@given(ids, ids, st.floats(min_value=0.0, max_value=2.0), st.integers(1, 100))
def test_merge_rounds_is_a_ranking_of_the_union(
    first: list[str], second: list[str], w: float, k: int
) -> None:
    got = merge_rounds(first, second, k=k, second_weight=w)
    assert sorted(got) == sorted(set(first) | set(second))
    if w == 0.0:  # the second round alone never reorders the first
        assert [d for d in got if d in first] == first


@given(ids)
def test_merging_a_ranking_with_itself_keeps_it(first: list[str]) -> None:
    assert merge_rounds(first, first, k=10, second_weight=1.0) == first


def test_newer_first_reorders_a_same_topic_pair_in_its_own_places() -> None:
    v = {"old": [1.0, 0.1, 0.0], "new": [1.0, 0.12, 0.0], "other": [0.0, 0.0, 1.0]}
    times = {"old": "2023-01-01T00:00:00Z", "new": "2023-03-01T00:00:00Z", "other": None}
    assert newer_first(["old", "other", "new"], v, times, floor=0.9) == ["new", "other", "old"]
    # below the floor nothing moves
    assert newer_first(["old", "other", "new"], v, times, floor=0.99999) == ["old", "other", "new"]


@given(
    ids,
    st.integers(0, 2**16),
    st.floats(min_value=-1.0, max_value=1.0),
)
def test_newer_first_is_a_permutation_and_groups_are_complete_link(
    ranked: list[str], seed: int, floor: float
) -> None:
    rng = np.random.default_rng(seed)
    vectors = {d: rng.normal(size=4) for d in ranked}
    times = {d: f"2023-01-{1 + int(rng.integers(0, 28)):02d}" for d in ranked}
    got = newer_first(ranked, vectors, times, floor=floor, window=10)
    assert sorted(got) == sorted(ranked)
    assert got[10:] == ranked[10:]
    for group in topic_groups(ranked, vectors, floor, 10):
        units = [vectors[ranked[p]] / np.linalg.norm(vectors[ranked[p]]) for p in group]
        assert all(float(a @ b) >= floor - 1e-9 for a in units for b in units)
        placed = [got[p] for p in group]
        assert [times[d] for d in placed] == sorted((times[d] for d in placed), reverse=True)
