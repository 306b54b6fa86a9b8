"""Time expressions in a query -> a date interval (memhtml.domain.temporal)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.temporal import Interval, day_of, focus_scored, in_interval_order, resolve

ANCHOR = date(2023, 5, 17)  # a Wednesday


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did she do in May 2023?", date(2023, 5, 1), date(2023, 6, 1)),
        ("plans for December, 2022", date(2022, 12, 1), date(2023, 1, 1)),
        ("what happened on 8 May 2023", date(2023, 5, 8), date(2023, 5, 9)),
        ("the call on May 8th, 2023", date(2023, 5, 8), date(2023, 5, 9)),
        ("the 2023-02-28 release", date(2023, 2, 28), date(2023, 3, 1)),
        ("what did we ship in 2022", date(2022, 1, 1), date(2023, 1, 1)),
    ],
)
def test_absolute_expressions_need_no_anchor(query: str, start: date, end: date) -> None:
    got = resolve(query)
    assert got is not None and (got.start, got.end) == (start, end)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I eat yesterday", date(2023, 5, 16), date(2023, 5, 17)),
        ("today's plan", date(2023, 5, 17), date(2023, 5, 18)),
        ("what happened last week", date(2023, 5, 8), date(2023, 5, 15)),
        ("this week", date(2023, 5, 15), date(2023, 5, 22)),
        ("last month's trip", date(2023, 4, 1), date(2023, 5, 1)),
        ("last year", date(2022, 1, 1), date(2023, 1, 1)),
        ("three days ago", date(2023, 5, 14), date(2023, 5, 15)),
        ("2 weeks ago", date(2023, 5, 1), date(2023, 5, 8)),
        ("a month ago", date(2023, 4, 1), date(2023, 5, 1)),
        ("last weekend", date(2023, 5, 13), date(2023, 5, 15)),
    ],
)
def test_relative_expressions_resolve_against_the_anchor(
    query: str, start: date, end: date
) -> None:
    got = resolve(query, ANCHOR)
    assert got is not None and (got.start, got.end) == (start, end)
    assert resolve(query) is None  # no anchor, no relative time


def test_no_time_no_interval() -> None:
    assert resolve("when did Caroline go to the support group?", ANCHOR) is None
    bad = resolve("the 31 February 2023 note")  # no such day: the month it names
    assert bad is not None and (bad.start, bad.end) == (date(2023, 2, 1), date(2023, 3, 1))
    assert resolve("may I ask about 2023-13-45?") is None


def test_january_of_next_year_wraps() -> None:
    got = resolve("last month", date(2023, 1, 10))
    assert got is not None and (got.start, got.end) == (date(2022, 12, 1), date(2023, 1, 1))


@given(st.dates(min_value=date(1950, 1, 1), max_value=date(2090, 12, 31)))
def test_relative_intervals_are_non_empty_and_not_after_the_anchor(anchor: date) -> None:
    for q in ("yesterday", "last week", "last month", "last year", "5 days ago", "3 weeks ago"):
        got = resolve(q, anchor)
        assert got is not None
        assert got.start < got.end <= anchor + timedelta(days=1)
        assert not got.contains(got.end) and got.contains(got.start)


@given(st.dates(min_value=date(1950, 1, 1), max_value=date(2090, 12, 31)))
def test_a_named_day_contains_exactly_itself(day: date) -> None:
    got = resolve(f"on {day.day} {day.strftime('%B')} {day.year}")
    assert got is not None and got.contains(day)
    assert (got.end - got.start).days == 1


@given(
    st.lists(st.text("abcdef", min_size=1, max_size=3), unique=True, max_size=12),
    st.dictionaries(
        st.text("abcdef", min_size=1, max_size=3),
        st.one_of(st.none(), st.dates(min_value=date(2023, 1, 1), max_value=date(2023, 12, 31))),
    ),
)
def test_in_interval_order_keeps_order_and_filters(ranked: list[str], days: dict) -> None:
    iv = Interval(date(2023, 5, 1), date(2023, 6, 1), "May 2023")
    got = in_interval_order(ranked, days, iv)
    assert got == [d for d in ranked if days.get(d) is not None and iv.contains(days[d])]


_DOCS = st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10)


@given(
    docs=_DOCS,
    scores=st.lists(st.floats(0, 1, allow_nan=False), min_size=10, max_size=10),
    months=st.lists(st.integers(1, 12), min_size=10, max_size=10),
    weight=st.one_of(st.just(0.0), st.floats(0.01, 3)),
)
def test_focus_scored_lifts_only_what_is_inside(
    docs: list[str], scores: list[float], months: list[int], weight: float
) -> None:
    scored = sorted(zip(docs, scores, strict=False), key=lambda p: -p[1])
    times = {d: f"2023-{m:02d}-15T10:00:00Z" for d, m in zip(docs, months, strict=False)}
    interval = resolve("what happened in May 2023")
    out = focus_scored(scored, times, interval, weight=weight, k=10)
    assert [d for d, _ in sorted(out)] == [d for d, _ in sorted(scored)]  # a permutation
    before = dict(scored)
    for doc, score in out:
        gained = score - before[doc]
        assert gained >= 0
        assert (gained > 0) == (weight > 0 and times[doc].startswith("2023-05"))
    assert [s for _, s in out] == sorted((s for _, s in out), reverse=True)


def test_focus_scored_without_an_interval_is_the_identity() -> None:
    scored = [("a", 0.3), ("b", 0.2)]
    assert focus_scored(scored, {"a": "2023-05-01"}, None, weight=1, k=10) == scored
    assert focus_scored(scored, {"b": "2023-05-01"}, resolve("May 2023"), weight=0, k=10) == scored


def test_focus_scored_ranks_the_inside_list_in_fused_order() -> None:
    scored = [("a", 0.30), ("b", 0.29), ("c", 0.28)]
    times = {"a": "2023-04-30", "b": "2023-05-02", "c": "2023-05-31T23:00:00Z"}
    out = focus_scored(scored, times, resolve("in May 2023"), weight=1, k=10)
    assert out == [("b", 0.29 + 1 / 11), ("c", 0.28 + 1 / 12), ("a", 0.30)]


def test_day_of_reads_dates_and_datetimes() -> None:
    assert day_of("2023-05-08T10:00:00+02:00") == date(2023, 5, 8)
    assert day_of("2023-05-08") == date(2023, 5, 8)
    assert day_of("not a date") is None
    assert day_of(None) is None
