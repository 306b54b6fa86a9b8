"""The eight-signal retention score and the reprieve score, by hand and by law."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.retention import (
    DEFAULT_WEIGHTS,
    SIGNALS,
    WEIGHTS,
    RetentionInputs,
    band,
    reprieve_score,
    retention_score,
    should_reprieve,
    signals,
)


def test_weights_sum_to_one() -> None:
    for profile in [*WEIGHTS.values(), DEFAULT_WEIGHTS]:
        assert len(profile) == len(SIGNALS)
        assert math.isclose(math.fsum(profile), 1.0)


def test_a_fresh_unlinked_episodic_memory_by_hand() -> None:
    x = RetentionInputs(memory_type="episodic", age_days=0, word_count=15)
    # recency 1 x .25 + confidence 1 x .10 + density .15 x .10 + contested 1 x .10
    assert retention_score(x) == round(0.25 + 0.10 + 0.015 + 0.10, 4)
    assert band(retention_score(x)) == "compress"


def test_half_life_and_density() -> None:
    ten_days = signals(RetentionInputs(memory_type="episodic", age_days=10, word_count=5))
    assert math.isclose(ten_days["recency"], 0.5)
    assert math.isclose(ten_days["density"], 5 / 20)
    assert signals(RetentionInputs(memory_type="procedural", age_days=900))["recency"] == 1.0
    assert (
        signals(RetentionInputs(memory_type="semantic", age_days=0, word_count=250))["density"]
        == 1.0
    )


def test_bands() -> None:
    assert band(0.7001) == "keep" and band(0.7) == "compress"
    assert band(0.3001) == "compress" and band(0.3) == "evict" and band(0.0) == "evict"


INPUTS = st.builds(
    RetentionInputs,
    memory_type=st.sampled_from(
        ["episodic", "semantic", "procedural", "arc", "error_pattern", "verdict"]
    ),
    age_days=st.floats(0, 5000),
    access_count=st.integers(0, 100),
    confidence=st.floats(0, 1),
    graph_rank=st.floats(0, 1),
    max_graph_rank=st.floats(0, 1),
    bridge_count=st.integers(0, 20),
    reinforcement_count=st.integers(0, 20),
    contradiction_count=st.integers(0, 20),
    word_count=st.integers(0, 1000),
)


@given(INPUTS)
def test_score_and_signals_in_range(x: RetentionInputs) -> None:
    assert all(0.0 <= v <= 1.0 for v in signals(x).values())
    assert 0.0 <= retention_score(x) <= 1.0


@given(INPUTS, st.integers(1, 50))
def test_more_access_never_lowers_the_score(x: RetentionInputs, more: int) -> None:
    from dataclasses import replace

    assert retention_score(replace(x, access_count=x.access_count + more)) >= retention_score(x)


@given(INPUTS, st.floats(0, 1000))
def test_older_never_scores_higher(x: RetentionInputs, extra: float) -> None:
    from dataclasses import replace

    assert retention_score(replace(x, age_days=x.age_days + extra)) <= retention_score(x)


def test_reprieve_examples() -> None:
    # SLEEP-FACTS 4.3: importance 5, never accessed -> at most 0.3: always expires
    never = reprieve_score(5, 0, 0.0, 0.0)
    assert math.isclose(never, 0.4 * 0.5 + 0.1) and not should_reprieve(never, 0)
    # importance 5 and two accesses: 0.2 + 0.3 ln 3 ~ 0.53 -> reprieved, until 3 reprieves
    twice = reprieve_score(5, 2, 0.0, 10_000.0)
    assert twice > 0.5 and should_reprieve(twice, 2) and not should_reprieve(twice, 3)
    assert reprieve_score(None, 0, 0.0, 0.0) == never  # importance defaults to 5
    assert reprieve_score(5, 0, -1.0, 0.0) == never  # a negative outcome counts nothing
