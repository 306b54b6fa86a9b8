"""One salience formula serves SQL and Python; the EWMA stays in [-1, 1]."""

from __future__ import annotations

import math
import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.salience import cooled_down, ewma, salience, salience_sql


@given(st.floats(0, 1e5), st.integers(0, 10**6), st.floats(-1, 1))
def test_sql_equals_python(hours: float, count: int, outcome: float) -> None:
    conn = sqlite3.connect(":memory:")
    got = conn.execute(f"SELECT {salience_sql('?', '?', '?')}", (hours, count, outcome)).fetchone()[
        0
    ]
    assert math.isclose(got, salience(hours, count, outcome), rel_tol=1e-12, abs_tol=1e-12)


@given(st.floats(-1, 1), st.sampled_from([-1, 0, 1]))
def test_ewma_clamped(prev: float, value: int) -> None:
    assert -1.0 <= ewma(prev, value) <= 1.0


def test_ewma_arithmetic_and_cooldown() -> None:
    assert math.isclose(ewma(0.0, 1), 0.3)
    assert math.isclose(ewma(0.3, 1), 0.3 * 0.7 + 0.3)
    assert cooled_down(None) and cooled_down(900) and not cooled_down(899)
