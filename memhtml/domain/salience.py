"""Salience from the access plane, and the outcome EWMA that `reinforce` moves.

salience = exp(-DECAY_PER_HOUR * hours since last access)
         + ln(1 + access count)
         + max(outcome score, 0)

The SQL salience arm is spelled from :func:`salience_sql` with the same
constants; a property test checks the two agree. Outcomes move an
exponentially weighted moving average clamped to [-1, 1] (Roberts 1959).
"""

from __future__ import annotations

import math
from typing import Final

DECAY_PER_HOUR: Final = 0.01
OUTCOME_EWMA_ALPHA: Final = 0.3
REINFORCE_COOLDOWN_S: Final = 900
SIGNALS: Final[dict[str, int]] = {"positive": 1, "negative": -1, "neutral": 0}


def salience(hours_since_access: float, access_count: int, outcome_score: float) -> float:
    """The salience of one memory given its access statistics."""
    hours = max(hours_since_access, 0.0)
    return (
        math.exp(-DECAY_PER_HOUR * hours)
        + math.log(1 + max(access_count, 0))
        + max(outcome_score, 0.0)
    )


def salience_sql(hours_expr: str, count_expr: str, outcome_expr: str) -> str:
    """SQL for :func:`salience` over column expressions (SQLite math functions)."""
    return (
        f"(exp(-{DECAY_PER_HOUR!r} * max({hours_expr}, 0.0))"
        f" + ln(1 + max({count_expr}, 0))"
        f" + max({outcome_expr}, 0.0))"
    )


def ewma(previous: float, value: float, alpha: float = OUTCOME_EWMA_ALPHA) -> float:
    """One EWMA step, clamped to [-1, 1]."""
    return min(1.0, max(-1.0, previous * (1 - alpha) + value * alpha))


def cooled_down(seconds_since_last: float | None) -> bool:
    """True when a path may be bumped again: never accessed, accessed at least the cooldown
    ago, or stamped in the future by another clock (an imported row, a skewed machine).

    The local clock decides: a cooldown never reaches past now plus its length,
    whatever a stored timestamp says (the bump then restamps the row with now).
    """
    return (
        seconds_since_last is None
        or seconds_since_last < 0
        or seconds_since_last >= REINFORCE_COOLDOWN_S
    )
