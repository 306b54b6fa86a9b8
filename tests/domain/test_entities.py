"""Entity name keys, similarity and which fuzzy folds the guards allow."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.entities import (
    canonical_spelling,
    clean_name,
    fuzzy_mergeable,
    fuzzy_pairs,
    lcs_length,
    name_key,
    name_similarity,
)


def test_keys_fold_case_space_and_unicode_forms() -> None:
    assert name_key("  Checkout-API ") == name_key("checkout-api")
    assert name_key("Ada\u00a0 Lovelace") == name_key("ada lovelace")
    assert name_key("Zo\u0065\u0301") == name_key("Zo\u00e9")  # combining accent vs precomposed
    assert name_key("\uff21\uff30\uff29") == "api"  # fullwidth
    assert clean_name(" Ada   Lovelace ") == "Ada Lovelace"


def test_similarity_examples() -> None:
    # the original's published examples (2 LCS / total length)
    assert round(name_similarity("checkout-api", "checkout api"), 2) == 0.92
    assert round(name_similarity("laith", "laith al-saadoon"), 3) == 0.476
    assert round(name_similarity("sanju", "sanju kumar"), 3) == 0.625
    assert name_similarity("x", "X") == 1.0 and name_similarity("", "x") == 0.0
    assert lcs_length("abcde", "ace") == 3


@given(st.text(max_size=12), st.text(max_size=12))
def test_similarity_is_symmetric_and_bounded(a: str, b: str) -> None:
    s = name_similarity(a, b)
    assert s == name_similarity(b, a) and 0.0 <= s <= 1.0


def test_fuzzy_guards() -> None:
    assert fuzzy_mergeable("checkout-api", "checkout_api")
    assert fuzzy_mergeable("kubernetes", "kuberentes")
    assert fuzzy_mergeable("postgres", "postgresql")
    assert not fuzzy_mergeable("service-a", "service-b")  # a short word differs
    assert not fuzzy_mergeable("db-03", "db-04")  # a number differs
    assert not fuzzy_mergeable("Jon Smith", "John Smith")
    assert not fuzzy_mergeable("staging-db", "production-db")


def test_fuzzy_pairs_and_canonical() -> None:
    names = [
        "checkout-api",
        "checkout api",
        "payments-api",
        "kubernetes",
        "kuberentes",
        "db-03",
        "db-04",
    ]
    assert [(a, b) for a, b, _ in fuzzy_pairs(names)] == [
        ("checkout api", "checkout-api"),
        ("kuberentes", "kubernetes"),
    ]
    assert canonical_spelling({"Ada Lovelace": 3, "ada lovelace": 1}) == "Ada Lovelace"
    assert canonical_spelling({"b": 1, "a": 1}) == "a"
