"""PageRank, label-propagation communities, bridges and the folder vote."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.graph import (
    bridge_counts,
    communities,
    directory_vote,
    fold_edges,
    pagerank,
)

NODES = st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=8, unique=True)


@given(
    NODES,
    st.lists(
        st.tuples(st.sampled_from("abcdefghij"), st.sampled_from("abcdefghij"), st.floats(0.1, 2)),
        max_size=20,
    ),
)
def test_pagerank_is_a_distribution(nodes: list[str], edges: list[tuple[str, str, float]]) -> None:
    rank = pagerank(nodes, edges)
    assert set(rank) == set(nodes)
    assert math.isclose(sum(rank.values()), 1.0, rel_tol=1e-6)
    assert all(v > 0 for v in rank.values())


def test_pagerank_by_shape() -> None:
    cycle = pagerank("abc", [("a", "b", 1), ("b", "c", 1), ("c", "a", 1)])
    assert all(math.isclose(v, 1 / 3, rel_tol=1e-6) for v in cycle.values())
    star = pagerank("abcd", [("b", "a", 1), ("c", "a", 1), ("d", "a", 1)])
    assert star["a"] == max(star.values())
    assert pagerank([], []) == {}


def test_fold_drops_self_loops_and_strangers_and_keeps_the_max() -> None:
    names, folded = fold_edges("ba", [("a", "a", 1), ("a", "z", 1), ("a", "b", 1), ("a", "b", 3)])
    assert names == ["a", "b"] and folded == {("a", "b"): 3}


def test_communities_and_bridges() -> None:
    triangle = [("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 1.0)]
    other = [("x", "y", 1.0), ("y", "z", 1.0), ("z", "x", 1.0)]
    bridge = [("c", "x", 0.1)]
    found = communities("abcxyzq", triangle + other + bridge)
    assert found["a"] == found["b"] == found["c"] == "a"
    assert found["x"] == found["y"] == found["z"] == "x"
    assert found["q"] is None  # a singleton is no community
    assert bridge_counts(triangle + other + bridge, found) == {"c": 1, "x": 1}


def test_directory_vote() -> None:
    assert directory_vote(["areas/db", "areas/db", "areas/ops"]) == "areas/db"
    assert directory_vote(["areas/db", "areas/ops"]) is None  # nobody has two votes
    assert directory_vote(["areas/db", "areas/db", "areas/ops", "areas/ops"]) is None  # a tie
    assert directory_vote([]) is None
