"""Arbitration among near-duplicates: laws of the re-ordering."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.neardup import arbitrate, jaccard, near_duplicates, one_span_apart, words


def test_near_duplicate_rules() -> None:
    assert near_duplicates("The API listens on port 8080.", "The API listens on port 9090.")
    assert not near_duplicates("The API listens on port 8080.", "The cache evicts at 95 percent.")
    assert not near_duplicates("a b", "a b c")  # too few shared words to judge by words
    assert near_duplicates("x", "y", [1.0, 0.0], [0.99, 0.01])
    assert jaccard(words("a b c"), words("a b d")) == 0.5


def test_cluster_reorders_within_its_positions() -> None:
    ranked = ["old", "other", "new"]
    texts = {
        "old": "Alice lives in the city of Paris.",
        "new": "Alice lives in the city of Rome.",
        "other": "Bob likes tea with milk.",
    }
    times = {"old": "2020-01-01", "new": "2024-01-01", "other": "2025-01-01"}
    assert arbitrate(ranked, texts, times) == ["new", "other", "old"]
    # when the query names what tells them apart, the named one goes first
    assert arbitrate(ranked, texts, times, query="does alice live in paris") == ranked
    assert arbitrate(ranked[::-1], texts, times, query="does alice live in paris") == [
        "old",
        "other",
        "new",
    ]


def test_lexical_arbitration_of_negations_and_numbers() -> None:
    texts = {
        "pos": "The admin endpoint is external to the VPC.",
        "neg": "The admin endpoint is not external to the VPC.",
        "int": "The admin endpoint is internal to the VPC.",
    }
    same = dict.fromkeys(texts, "2025-01-01")
    query = "admin endpoint is external to the VPC"
    assert arbitrate(["neg", "int", "pos"], texts, same, query=query)[0] == "pos"
    assert arbitrate(["pos", "int", "neg"], texts, same, query="is it not external")[0] == "neg"
    pins = {
        "a": "Pin terraform to 1.7.6 in the data modules.",
        "b": "Pin terraform to 1.7.5 in the data modules.",
        "c": "Pin terraform to 1.7.7 in the data modules.",
    }
    assert (
        arbitrate(["a", "c", "b"], pins, {}, query="data modules pinned to terraform 1.7.5")[0]
        == "b"
    )


@given(
    st.lists(
        st.sampled_from(
            [
                "The API listens on port 1.",
                "The API listens on port 2.",
                "Cats sleep all day long.",
                "Dogs bark at the mail carrier.",
                "The API listens on port 3.",
            ]
        ),
        min_size=1,
        max_size=6,
        unique=True,
    ),
    st.lists(st.sampled_from(["2020-01-01", "2021-01-01", None]), min_size=6, max_size=6),
)
def test_permutation_and_idempotence(texts: list[str], stamps: list[str | None]) -> None:
    ranked = [f"d{i}" for i in range(len(texts))]
    by_doc = dict(zip(ranked, texts, strict=True))
    times = dict(zip(ranked, stamps, strict=False))
    once = arbitrate(ranked, by_doc, times)
    assert sorted(once) == sorted(ranked)
    assert arbitrate(once, by_doc, times) == once
    singles = [
        d
        for d in ranked
        if not any(near_duplicates(by_doc[d], by_doc[e]) for e in ranked if e != d)
    ]
    for d in singles:  # a memory with no near-duplicate keeps its place
        assert once.index(d) == ranked.index(d)


def test_one_span_apart() -> None:
    from memhtml.domain.neardup import one_span_apart, tokens

    assert one_span_apart(
        tokens("Ana is a citizen of France."), tokens("Ana is a citizen of the United Kingdom.")
    )
    assert one_span_apart(
        tokens("Pin terraform to 1.7.5 now"), tokens("Pin terraform to 1.7.6 now")
    )
    assert not one_span_apart(tokens("Ana likes tea."), tokens("Bob hates coffee."))
    assert not one_span_apart(tokens("a b c d e f g h"), tokens("a x x x x x x h"))


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d", "e", "not", "1", "2"]), max_size=9),
    st.lists(st.sampled_from(["a", "b", "c", "d", "e", "not", "1", "2"]), max_size=9),
    st.one_of(st.none(), st.floats(min_value=-1, max_value=1)),
    st.floats(min_value=0, max_value=1),
    st.integers(min_value=0, max_value=4),
)
def test_near_shortcuts_change_nothing(
    a: list[str], b: list[str], cosine: float | None, jt: float, min_shared: int
) -> None:
    """The pair test with its shortcuts equals the plain definition."""
    from memhtml.domain.neardup import _near

    wa, wb = frozenset(a), frozenset(b)
    plain = (
        one_span_apart(a, b, min_shared)
        or (len(wa & wb) >= min_shared and jaccard(wa, wb) >= jt)
        or (cosine is not None and cosine >= 0.95)
    )
    got = _near(
        a, b, wa, wb, cosine, jaccard_threshold=jt, cosine_threshold=0.95, min_shared=min_shared
    )
    assert got == plain
