"""Confidence decay: one grid step a night towards the floor, never up, gated at 0.005."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.decay import (
    CONFIDENCE_FLOOR,
    decay_confidence,
    render_confidence,
    worth_writing,
)

# SLEEP-FACTS 2.7: the values written from 1.0, one per night, until the gate stops them.
PUBLISHED = [
    0.920, 0.848, 0.783, 0.725, 0.672, 0.625, 0.583, 0.545, 0.510, 0.479, 0.451, 0.426,
    0.403, 0.383, 0.365, 0.348, 0.333, 0.320, 0.308, 0.297, 0.287, 0.278, 0.270, 0.263,
    0.257, 0.251, 0.246,
]  # fmt: skip


def test_the_published_sequence() -> None:
    value, written = 1.0, []
    for _ in range(60):
        after = decay_confidence(value)
        if not worth_writing(value, after):
            break
        value = float(render_confidence(after))
        written.append(value)
    assert written == PUBLISHED


def test_arithmetic_by_hand() -> None:
    # (0.1 * 0.2 + 0.9 * 0.92) = 0.848 on the 1e-4 grid
    assert decay_confidence(0.92) == 0.848
    assert decay_confidence(0.2) == 0.2
    assert decay_confidence(0.1) == 0.1  # below the floor it never rises
    assert render_confidence(1.0) == "1" and render_confidence(0.92) == "0.92"
    assert render_confidence(0.0) == "0" and render_confidence(1.7) == "1"


@given(st.floats(0, 1))
def test_never_rises_and_stays_in_range(c: float) -> None:
    after = decay_confidence(c)
    assert 0.0 <= after <= 1.0
    assert after <= round(c, 4) + 1e-12
    if c >= CONFIDENCE_FLOOR:
        assert after >= CONFIDENCE_FLOOR - 1e-12


@given(st.floats(0, 1), st.floats(0, 1))
def test_monotone(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert decay_confidence(lo) <= decay_confidence(hi)


@given(st.floats(0.2, 1))
def test_converges_to_the_floor(c: float) -> None:
    for _ in range(400):
        c = decay_confidence(c)
    assert abs(c - CONFIDENCE_FLOOR) < 0.001
