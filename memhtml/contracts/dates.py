"""The datetime grammar.

Stored datetimes are compared and ordered as raw strings, so only a fixed
grammar is allowed where it is stored: a calendar date ``YYYY-MM-DD`` or the
canonical UTC instant ``YYYY-MM-DDThh:mm:ssZ``. Both sort lexicographically
the way they sort chronologically. Looser ISO spellings (offsets, fractions, a
space separator) are accepted as *input* from callers and in `<time>` elements
written by other tools, and are normalized to the canonical instant.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

from memhtml.contracts.errors import InvalidMemoryError

_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_INSTANT = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$")
# The wider ISO-8601 profile we accept as input: optional seconds, fraction,
# a 'T' or a space, and Z or a +hh:mm / +hhmm offset (none means UTC).
_LOOSE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?"
    r"(Z|[+-]\d{2}:?\d{2})?)?$"
)
CANONICAL_INSTANT: Final = "%Y-%m-%dT%H:%M:%SZ"


def _calendar_ok(y: int, m: int, d: int, *time: int) -> bool:
    hh, mm, ss = (*time, 0, 0, 0)[:3]
    if y < 1:
        return False
    try:
        datetime(y, m, d, hh, mm, min(ss, 59))
    except ValueError:
        return False
    return ss <= 60


def is_strict_datetime(value: str) -> bool:
    """True for a calendar date or a canonical UTC instant, range-checked."""
    if not isinstance(value, str):
        return False
    m = _DATE.match(value)
    if m:
        return _calendar_ok(int(m[1]), int(m[2]), int(m[3]))
    m = _INSTANT.match(value)
    if m:
        y, mo, d, hh, mi, ss = (int(g) for g in m.groups())
        return ss < 60 and _calendar_ok(y, mo, d, hh, mi, ss)
    return False


def normalize_datetime(value: str) -> str | None:
    """Normalize an accepted ISO spelling to the stored grammar; None when it is not one.

    A bare date stays a date. Anything with a time becomes the canonical UTC
    instant, truncated to the second.
    """
    if not isinstance(value, str):
        return None
    value = value.strip()
    if is_strict_datetime(value):
        return value
    m = _LOOSE.match(value)
    if not m:
        return None
    y, mo, d = int(m[1]), int(m[2]), int(m[3])
    if m[4] is None:
        return f"{y:04d}-{mo:02d}-{d:02d}" if _calendar_ok(y, mo, d) else None
    hh, mi, ss = int(m[4]), int(m[5]), int(m[6] or 0)
    if not _calendar_ok(y, mo, d, hh, mi, ss) or hh > 23 or mi > 59:
        return None
    offset = m[8]
    tz = UTC
    if offset and offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        digits = offset[1:].replace(":", "")
        oh, om = int(digits[:2]), int(digits[2:])
        if oh > 23 or om > 59:
            return None
        tz = timezone(sign * timedelta(hours=oh, minutes=om))
    try:
        moment = datetime(y, mo, d, hh, mi, min(ss, 59), tzinfo=tz).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    if not 1 <= moment.year <= 9999:
        return None
    return format_instant(moment)


def parse_datetime_input(value: str, *, field: str) -> str:
    """Normalize a caller-supplied datetime or raise a typed error naming the field."""
    normalized = normalize_datetime(value)
    if normalized is None:
        raise InvalidMemoryError(
            f"{field}: {value!r} is not a date (YYYY-MM-DD)"
            " or an ISO instant (YYYY-MM-DDThh:mm:ssZ)",
            suggestions=["use 2026-07-28 or 2026-07-28T14:00:00Z"],
        )
    return normalized


def format_instant(moment: datetime) -> str:
    """A datetime as the canonical UTC instant (naive values are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    m = moment.astimezone(UTC)
    # strftime's %Y does not zero-pad years below 1000 on every platform.
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}Z"


def as_datetime(value: str) -> datetime:
    """Parse a stored-grammar value into an aware UTC datetime (a date is its midnight)."""
    if _DATE.match(value):
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    return datetime.strptime(value, CANONICAL_INSTANT).replace(tzinfo=UTC)
