"""Confidence decay: an un-reinforced memory's confidence drifts towards a floor.

One step per night, on a grid of 1e-4 so every implementation lands on the
same value (the original memhtml's `decayConfidence`, SLEEP-FACTS 2.7 and
4.3): with ``c`` the confidence, ``alpha`` 0.1 and ``floor`` 0.2,

    step  = floor((alpha*floor + (1 - alpha)*c) * 10000) / 10000   (fixed point)
    after = min(c, step)

so a value already at or below the floor never rises. A change smaller than
COMMIT_DELTA (0.005) is not written: from 1.0 the written values are 0.92,
0.848, 0.783, ... and the writes stop after 27 nights near 0.246, where one
more step would move the value by less than the gate.
"""

from __future__ import annotations

import math
from typing import Final

DECAY_ALPHA: Final = 0.1
CONFIDENCE_FLOOR: Final = 0.2
COMMIT_DELTA: Final = 0.005
SCALE: Final = 10_000
DEFAULT_CONFIDENCE: Final = 1.0


def clamp01(value: float) -> float:
    """`value` within [0, 1] (NaN counts as 0)."""
    if math.isnan(value):
        return 0.0
    return min(1.0, max(0.0, value))


def decay_confidence(
    confidence: float, alpha: float = DECAY_ALPHA, floor: float = CONFIDENCE_FLOOR
) -> float:
    """One night's decay of `confidence` (fixed point, grid 1e-4; never rises)."""
    conf_fp = round(clamp01(confidence) * SCALE)
    alpha_fp = round(clamp01(alpha) * SCALE)
    floor_fp = round(clamp01(floor) * SCALE)
    step = (alpha_fp * floor_fp + (SCALE - alpha_fp) * conf_fp) // SCALE
    return min(conf_fp, step) / SCALE


def worth_writing(before: float, after: float, delta: float = COMMIT_DELTA) -> bool:
    """True when the change is at least `delta` (smaller drifts are not committed)."""
    return abs(before - after) >= delta


def render_confidence(value: float) -> str:
    """The `memhtml-confidence` value: clamped to [0, 1], three decimals, no trailing zeros."""
    text = f"{round(clamp01(value), 3):.3f}".rstrip("0").rstrip(".")
    return text or "0"
