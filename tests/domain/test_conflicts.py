"""Conflict and restatement verdicts: laws, and the cases that shaped them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.conflicts import (
    claims_conflict,
    refines,
    restates,
    value_words,
    values_conflict,
)
from memhtml.eval.merge_safety import MUST_NOT_MERGE, merge_pairs


def test_one_value_in_other_spellings_is_no_conflict() -> None:
    assert value_words("30 s") == value_words("30 seconds") == value_words("30sec")
    assert value_words("two weeks") == value_words("2 weeks")
    assert not values_conflict("Alice Chen", "alice chen")
    assert not values_conflict("10 MB", "10 megabytes")
    assert values_conflict("1.7.5", "1.7.6")  # a version is one word
    assert values_conflict("metrics-01", "metrics-02")


def test_a_refinement_holds_unless_what_it_adds_flips_the_fact() -> None:
    assert refines("64", "64 connections per node")
    assert refines("Lisbon, Portugal", "Lisbon")
    assert refines("main", "the main branch")
    assert not refines("enabled", "not enabled")  # a negation added
    assert not refines("64", "64 or 128")  # another number added
    assert not refines("enabled", "enabled in staging")  # a qualifier added
    assert values_conflict("enabled", "not enabled")


def test_claims_conflict_on_one_frame_only() -> None:
    found = claims_conflict("The pool ceiling is 128.", "The pool ceiling is 64.")
    assert found is not None
    assert (found.key, found.value, found.other_value) == ("the pool ceiling is", "128", "64")
    assert (
        claims_conflict("The capital of France is Paris.", "The capital of Italy is Rome.") is None
    )
    assert claims_conflict("The pool ceiling is 64.", "The pool ceiling is 64 per node.") is None
    assert (
        claims_conflict("Drain the VIP first.", "Do not drain the VIP first.") is None
    )  # no frame
    assert (
        claims_conflict(
            "Leo Stein is a citizen of France.",
            "Leo Stein is a citizen of United States of America.",
        )
        is not None
    )


_VALUE = st.text(alphabet="abcdefgh 0123456789-.", min_size=1, max_size=20)


@given(_VALUE, _VALUE)
def test_value_verdicts_are_symmetric(a: str, b: str) -> None:
    assert values_conflict(a, b) == values_conflict(b, a)
    assert refines(a, b) == refines(b, a)
    assert not values_conflict(a, a)


@given(_VALUE, _VALUE)
def test_a_claim_pair_is_a_conflict_or_a_restatement_or_neither_never_both(a: str, b: str) -> None:
    left, right = f"The pool ceiling is {a}", f"The pool ceiling is {b}"
    assert not (claims_conflict(left, right) and restates(left, right))


def test_a_flip_is_never_a_restatement_even_with_identical_vectors() -> None:
    same = [1.0, 0.0, 0.0]
    twins = [p for p in merge_pairs() if p.kind == MUST_NOT_MERGE]
    assert twins
    assert [p.pair_id for p in twins if restates(p.left, p.right, same, same)] == []


def test_restatement_across_frames_needs_close_vectors() -> None:
    a, b = "Drain the VIP before deploys.", "Before deploys, drain the VIP."
    assert not restates(a, b)  # no vectors, no shared frame: no verdict
    assert restates(a, b, [1.0, 0.0], [0.99, 0.05])
    assert not restates(a, b, [1.0, 0.0], [0.5, 0.8])
    assert restates("The pool ceiling is 64.", "The pool ceiling is 64 connections per node.")


def test_a_question_conflicts_with_nothing() -> None:
    asked = "Do I need specific software to test my resume?"
    assert claims_conflict(asked, "Do I need specific software to create a resume?") is None
    assert claims_conflict("The pool ceiling is 64?", "The pool ceiling is 128.") is None
