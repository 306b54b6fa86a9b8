"""The datetime grammar: strict where stored, normalized on input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.contracts.dates import format_instant, is_strict_datetime, normalize_datetime


@pytest.mark.parametrize("good", ["2026-07-28", "2026-07-28T14:00:00Z", "2024-02-29", "0001-01-01"])
def test_strict_accepts(good: str) -> None:
    assert is_strict_datetime(good)


@pytest.mark.parametrize(
    "bad",
    [
        "July 4",
        "2026-13-01",
        "2026-02-30",
        "2025-02-29",
        "2026-07-28T24:00:00Z",
        "2026-07-28 14:00",
        "2026-07-28T14:00:00+02:00",
        "2026-07-28T14:00:00.5Z",
        "",
        "20260728",
    ],
)
def test_strict_refuses(bad: str) -> None:
    assert not is_strict_datetime(bad)


def test_normalize_offsets_and_fractions() -> None:
    assert normalize_datetime("2026-07-28T14:00:00+02:00") == "2026-07-28T12:00:00Z"
    assert normalize_datetime("2026-07-28 14:00") == "2026-07-28T14:00:00Z"
    assert normalize_datetime("2026-07-28T14:00:00.999Z") == "2026-07-28T14:00:00Z"
    assert normalize_datetime("2026-07-28") == "2026-07-28"
    assert normalize_datetime("nonsense") is None


@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
)
def test_canonical_sorts_like_time(a: datetime, b: datetime) -> None:
    sa, sb = format_instant(a.replace(tzinfo=UTC)), format_instant(b.replace(tzinfo=UTC))
    assert is_strict_datetime(sa) and is_strict_datetime(sb)
    assert normalize_datetime(sa) == sa
    assert (sa < sb) == (a.replace(microsecond=0) < b.replace(microsecond=0))
