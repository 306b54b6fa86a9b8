"""Temporal expressions in a query, resolved to a date interval.

Pure: a query and an optional anchor date (the day the question is asked)
in, a half-open ``[start, end)`` interval of dates out, or None when the
query names no time. Absolute expressions ("in May 2023", "on 8 May 2023",
"May 8, 2023", "in 2023") need no anchor; relative ones ("yesterday",
"last week", "3 days ago", "this month") resolve only against an anchor and
are None without one.

Weeks start on Monday (ISO). "last week" is the ISO week before the
anchor's; "last month" the calendar month before; "N days ago" the single
day; "N weeks ago" the ISO week that holds the day N weeks back.

`in_interval_order` turns an interval into an extra ranked list over a
fused candidate list (the candidates whose day falls inside, in their fused
order), and `focus_scored` fuses it as one more RRF list: search and the
offline replay both call it, on the same candidates, so they rank alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Final

from memhtml.domain.rrf import rrf_contribution

MONTHS: Final = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH_RE: Final = "|".join(sorted(MONTHS, key=len, reverse=True))
_YEAR: Final = r"(?:19|20)\d{2}"
_DAY_MONTH_YEAR: Final = re.compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m>{_MONTH_RE})\.?,?\s+(?P<y>{_YEAR})\b",
    re.IGNORECASE,
)
_MONTH_DAY_YEAR: Final = re.compile(
    rf"\b(?P<m>{_MONTH_RE})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>{_YEAR})\b",
    re.IGNORECASE,
)
_MONTH_YEAR: Final = re.compile(rf"\b(?P<m>{_MONTH_RE})\.?,?\s+(?:of\s+)?(?P<y>{_YEAR})\b", re.I)
_ISO_DAY: Final = re.compile(r"\b(?P<y>(?:19|20)\d{2})-(?P<m>\d{2})-(?P<d>\d{2})\b")
_YEAR_ONLY: Final = re.compile(rf"\b(?:in|during|of|since)\s+(?P<y>{_YEAR})\b", re.IGNORECASE)
_AGO: Final = re.compile(
    r"\b(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    r"(?P<unit>day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
_RELATIVE: Final = re.compile(
    r"\b(?P<word>yesterday|today|tonight|(?:last|this|past|previous)\s+(?:week|month|year|weekend))\b",
    re.IGNORECASE,
)
_NUMBERS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


@dataclass(frozen=True)
class Interval:
    """Days ``start`` (inclusive) to ``end`` (exclusive), and the words that named them."""

    start: date
    end: date
    expression: str

    def contains(self, day: date) -> bool:
        return self.start <= day < self.end


def _month_span(year: int, month: int) -> tuple[date, date]:
    start = date(year, month, 1)
    end = date(year + (month == 12), month % 12 + 1, 1)
    return start, end


def _week_of(day: date) -> tuple[date, date]:
    start = day - timedelta(days=day.weekday())
    return start, start + timedelta(days=7)


def _shift_months(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + (day.month - 1) - months
    return index // 12, index % 12 + 1


def _absolute(query: str) -> Interval | None:
    for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR):
        m = pattern.search(query)
        if m:
            try:
                day = date(int(m["y"]), MONTHS[m["m"].lower()], int(m["d"]))
            except ValueError:
                continue
            return Interval(day, day + timedelta(days=1), m.group(0))
    m = _ISO_DAY.search(query)
    if m:
        try:
            day = date(int(m["y"]), int(m["m"]), int(m["d"]))
            return Interval(day, day + timedelta(days=1), m.group(0))
        except ValueError:
            pass
    m = _MONTH_YEAR.search(query)
    if m:
        start, end = _month_span(int(m["y"]), MONTHS[m["m"].lower()])
        return Interval(start, end, m.group(0))
    m = _YEAR_ONLY.search(query)
    if m:
        year = int(m["y"])
        return Interval(date(year, 1, 1), date(year + 1, 1, 1), m.group(0))
    return None


def _relative(query: str, anchor: date) -> Interval | None:
    m = _AGO.search(query)
    if m:
        raw = m["n"].lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        unit = m["unit"].lower()
        if unit == "day":
            day = anchor - timedelta(days=n)
            return Interval(day, day + timedelta(days=1), m.group(0))
        if unit == "week":
            start, end = _week_of(anchor - timedelta(days=7 * n))
            return Interval(start, end, m.group(0))
        if unit == "month":
            start, end = _month_span(*_shift_months(anchor, n))
            return Interval(start, end, m.group(0))
        year = anchor.year - n
        return Interval(date(year, 1, 1), date(year + 1, 1, 1), m.group(0))
    m = _RELATIVE.search(query)
    if not m:
        return None
    word = " ".join(m["word"].lower().split())
    if word in ("today", "tonight"):
        return Interval(anchor, anchor + timedelta(days=1), m.group(0))
    if word == "yesterday":
        day = anchor - timedelta(days=1)
        return Interval(day, anchor, m.group(0))
    which, unit = word.split(" ")
    back = 0 if which == "this" else 1
    if unit == "week":
        start, end = _week_of(anchor - timedelta(days=7 * back))
    elif unit == "weekend":
        monday, _ = _week_of(anchor - timedelta(days=7 * back))
        start, end = monday + timedelta(days=5), monday + timedelta(days=7)
    elif unit == "month":
        start, end = _month_span(*_shift_months(anchor, back))
    else:
        year = anchor.year - back
        start, end = date(year, 1, 1), date(year + 1, 1, 1)
    return Interval(start, end, m.group(0))


def resolve(query: str, anchor: date | None = None) -> Interval | None:
    """The interval the query's first time expression names (absolute ones win), or None."""
    found = _absolute(query)
    if found is not None:
        return found
    return None if anchor is None else _relative(query, anchor)


def in_interval_order(
    ranked: Sequence[str], days: Mapping[str, date | None], interval: Interval
) -> list[str]:
    """The candidates whose day falls inside `interval`, in their given order."""
    return [doc for doc in ranked if (d := days.get(doc)) is not None and interval.contains(d)]


def day_of(value: str | None) -> date | None:
    """The calendar day of an ISO date or datetime string (its first ten characters), or None."""
    if not value:
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None


def focus_scored(
    scored: Sequence[tuple[str, float]],
    times: Mapping[str, str | None],
    interval: Interval | None,
    *,
    weight: float,
    k: int,
) -> list[tuple[str, float]]:
    """Fused candidates (best first) with the interval's list fused in, best first again.

    The candidates whose time (`times`: ISO strings, a memory's event time or
    else its update time) falls inside `interval` form one more ranked list in
    their fused order; the r-th of them gains ``weight / (k + r)``, as an RRF
    arm would. The sort is stable, so equal scores keep the order they came
    in (the fused tie-break). No interval, no weight: the input, unchanged.
    """
    if interval is None or weight <= 0:
        return list(scored)
    days = {doc: day_of(times.get(doc)) for doc, _ in scored}
    inside = in_interval_order([doc for doc, _ in scored], days, interval)
    if not inside:
        return list(scored)
    bonus = {doc: rrf_contribution(r, weight, k) for r, doc in enumerate(inside, start=1)}
    out = [(doc, score + bonus.get(doc, 0.0)) for doc, score in scored]
    out.sort(key=lambda pair: -pair[1])
    return out
