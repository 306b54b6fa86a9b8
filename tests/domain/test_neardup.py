"""Arbitration among near-duplicates: laws of the re-ordering."""

from __future__ import annotations

from hypothesis import example, given, settings
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


def _near_map_pairwise(
    docs: list[str], texts: dict[str, str], vectors: dict[str, list[float]]
) -> dict[str, frozenset[str]]:
    """The pair-by-pair near_map search used before the array version: the oracle."""
    import numpy as np

    from memhtml.domain.neardup import (
        COSINE_THRESHOLD,
        JACCARD_THRESHOLD,
        MIN_SHARED,
        _near,
        tokens,
    )

    toks = {d: tokens(texts.get(d, "")) for d in docs}
    bags = {d: frozenset(t) for d, t in toks.items()}
    with_vec = [d for d in docs if d in vectors]
    cos_at = {d: i for i, d in enumerate(with_vec)}
    cos = None
    if len(with_vec) > 1:
        m = np.stack([np.asarray(vectors[d], dtype=np.float32) for d in with_vec])
        norms = np.linalg.norm(m, axis=1)
        norms[norms == 0] = 1.0
        unit = m / norms[:, None]
        cos = np.clip(unit @ unit.T, -1.0, 1.0)
    found: dict[str, set[str]] = {d: set() for d in docs}
    unique = list(dict.fromkeys(docs))
    for i, a in enumerate(unique):
        for b in unique[i + 1 :]:
            c = None
            if cos is not None and a in cos_at and b in cos_at:
                c = float(cos[cos_at[a], cos_at[b]])
            if _near(
                toks[a],
                toks[b],
                bags[a],
                bags[b],
                c,
                jaccard_threshold=JACCARD_THRESHOLD,
                cosine_threshold=COSINE_THRESHOLD,
                min_shared=MIN_SHARED,
            ):
                found[a].add(b)
                found[b].add(a)
    return {d: frozenset(v) for d, v in found.items()}


_WORDS = ["the", "api", "port", "8080", "9090", "not", "listens", "on", "cache", "a", "b", "c"]


@given(
    st.lists(
        st.lists(st.sampled_from(_WORDS), min_size=0, max_size=12).map(" ".join),
        min_size=2,
        max_size=14,
    ),
    st.lists(
        st.one_of(
            st.none(),
            st.lists(st.sampled_from([0.0, 1.0, -1.0, 0.5, 0.99, 0.01]), min_size=3, max_size=3),
        ),
        min_size=14,
        max_size=14,
    ),
)
@example(
    ["the api listens on port 8080", "the api listens on port 9090", "a b c", "cache", ""],
    [[1.0, 0.0, 0.0], None, [0.99, 0.01, 0.0], [1.0, 0.0, 0.01]] + [None] * 10,
)
@settings(deadline=None)
def test_near_map_arrays_equal_pairwise(texts: list[str], vecs: list[list[float] | None]) -> None:
    """The array decision of near_map equals asking `_near` of every pair."""
    from memhtml.domain.neardup import near_map

    docs = [f"d{i}" for i in range(len(texts))]
    by_doc = dict(zip(docs, texts, strict=True))
    vectors = {d: v for d, v in zip(docs, vecs, strict=False) if v is not None}
    expected = _near_map_pairwise(docs, by_doc, vectors)
    if texts[:2] == ["the api listens on port 8080", "the api listens on port 9090"]:
        assert "d1" in expected["d0"] and "d3" in expected["d0"]  # the example exercises both rules
    assert near_map(docs, by_doc, vectors) == expected
    assert near_map(docs, by_doc) == _near_map_pairwise(docs, by_doc, {})
