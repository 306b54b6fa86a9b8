"""Newer first among same-topic hits (memhtml.domain.topic_recency): an ablation lever."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.topic_recency import newer_first, topic_groups

E1, E2 = [1.0, 0.0], [0.0, 1.0]


@given(
    st.lists(st.sampled_from([E1, E2, [0.7, 0.7]]), min_size=0, max_size=12),
    st.lists(st.sampled_from([None, "2024-01-01", "2024-06-01", "2025-01-01"]), max_size=12),
    st.floats(0.0, 1.0),
)
def test_a_permutation_that_never_moves_untimed_or_ungrouped_hits(
    vecs: list[list[float]], stamps: list[str | None], floor: float
) -> None:
    ranked = [f"m{i}" for i in range(len(vecs))]
    vectors = dict(zip(ranked, vecs, strict=True))
    times = {p: stamps[i] if i < len(stamps) else None for i, p in enumerate(ranked)}
    out = newer_first(ranked, vectors, times, floor=floor, window=20)
    assert sorted(out) == sorted(ranked)
    grouped = {p for g in topic_groups(ranked, vectors, floor, 20) for p in g}
    for i, p in enumerate(ranked):
        if i not in grouped or not times[p]:
            assert out[i] == p


def test_a_same_topic_group_is_ordered_newest_first_in_its_own_places() -> None:
    ranked = ["old", "other", "new", "mid"]
    vectors = {"old": E1, "other": E2, "new": E1, "mid": E1}
    times = {"old": "2024-01-01", "other": "2026-01-01", "new": "2025-06-01", "mid": "2024-06-01"}
    assert newer_first(ranked, vectors, times, floor=0.9) == ["new", "other", "mid", "old"]
    # below the floor nothing is a group, nothing moves
    assert newer_first(ranked, vectors, times, floor=1.01) == ranked
