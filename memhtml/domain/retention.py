"""Retention: the eight-signal score that decides keep / compress / evict, and reprieve.

The original memhtml's retention pass (SLEEP-FACTS 4.4), restated. Each
memory gets eight signals in [0, 1]:

    recency       = exp(-ln 2 * age_days / half_life)  (1 when the type has no half-life)
    access        = min(1, access_count / 10)
    confidence    = confidence (clamped)
    pagerank      = graph_rank / max_graph_rank        (0 on an edgeless graph)
    bridge        = min(1, bridge_count / 5)
    reinforcement = min(1, inbound supports / 5)
    density       = words / 20 under 10 words, else min(1, words / 100)
    contested     = 1 - min(1, inbound authored contradictions / 3)

and a weighted sum with a profile per memory type, rounded to 4 decimals
(compensated summation): above 0.7 keep, above 0.3 compress, else evict.

Reprieve (SLEEP-FACTS 4.3) scores a memory whose validity ran out:

    0.4 * importance/10 + 0.3 * ln(1 + accesses) + 0.2 * max(0, outcome)
    + 0.1 * exp(-0.01 * hours since the last access)

and spares it (another REPRIEVE_DAYS) when the score is at least 0.5 and it
was spared fewer than MAX_REPRIEVES times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

from memhtml.domain.decay import clamp01

Band = Literal["keep", "compress", "evict"]
SIGNALS: Final = (
    "recency",
    "access",
    "confidence",
    "pagerank",
    "bridge",
    "reinforcement",
    "density",
    "contested",
)
HALF_LIFE_DAYS: Final[dict[str, float | None]] = {
    "episodic": 10.0,
    "semantic": 90.0,
    "procedural": None,
    "arc": 30.0,
    "error_pattern": 14.0,
    "task": None,
}
DEFAULT_HALF_LIFE_DAYS: Final = 30.0
WEIGHTS: Final[dict[str, tuple[float, ...]]] = {
    "episodic": (0.25, 0.15, 0.10, 0.10, 0.10, 0.10, 0.10, 0.10),
    "semantic": (0.05, 0.15, 0.20, 0.20, 0.15, 0.10, 0.10, 0.05),
    "procedural": (0.00, 0.20, 0.15, 0.15, 0.10, 0.20, 0.10, 0.10),
    "arc": (0.10, 0.10, 0.15, 0.15, 0.15, 0.15, 0.10, 0.10),
    "error_pattern": (0.20, 0.15, 0.10, 0.05, 0.05, 0.20, 0.10, 0.15),
}
DEFAULT_WEIGHTS: Final = (0.15, 0.15, 0.15, 0.15, 0.10, 0.10, 0.10, 0.10)
KEEP_ABOVE: Final = 0.7
EVICT_AT_OR_BELOW: Final = 0.3

REPRIEVE_FLOOR: Final = 0.5
REPRIEVE_DAYS: Final = 14
MAX_REPRIEVES: Final = 3
REPRIEVE_DECAY_PER_HOUR: Final = 0.01
DEFAULT_IMPORTANCE: Final = 5


@dataclass(frozen=True)
class RetentionInputs:
    """What the score reads about one memory."""

    memory_type: str
    age_days: float
    access_count: int = 0
    confidence: float = 1.0
    graph_rank: float = 0.0
    max_graph_rank: float = 0.0
    bridge_count: int = 0
    reinforcement_count: int = 0
    contradiction_count: int = 0
    word_count: int = 0


def half_life(memory_type: str) -> float | None:
    """Days for the recency signal to halve (None: the type does not age)."""
    return HALF_LIFE_DAYS.get(memory_type, DEFAULT_HALF_LIFE_DAYS)


def weights(memory_type: str) -> tuple[float, ...]:
    """The type's weight profile, in SIGNALS order (sums to 1)."""
    return WEIGHTS.get(memory_type, DEFAULT_WEIGHTS)


def signals(x: RetentionInputs) -> dict[str, float]:
    """The eight signals, each in [0, 1]."""
    life = half_life(x.memory_type)
    age = max(0.0, x.age_days) if not math.isnan(x.age_days) else 0.0
    recency = 1.0 if life is None or age <= 0 else math.exp(-math.log(2) * age / life)
    pagerank = clamp01(x.graph_rank / x.max_graph_rank) if x.max_graph_rank > 0 else 0.0
    words = max(0, x.word_count)
    density = words / 20 if words < 10 else min(1.0, words / 100)
    return {
        "recency": recency,
        "access": min(1.0, max(0, x.access_count) / 10),
        "confidence": clamp01(x.confidence),
        "pagerank": pagerank,
        "bridge": min(1.0, max(0, x.bridge_count) / 5),
        "reinforcement": min(1.0, max(0, x.reinforcement_count) / 5),
        "density": density,
        "contested": 1.0 - min(1.0, max(0, x.contradiction_count) / 3),
    }


def retention_score(x: RetentionInputs) -> float:
    """The weighted sum of the signals, rounded to 4 decimals; in [0, 1]."""
    values = signals(x)
    profile = weights(x.memory_type)
    return round(math.fsum(values[s] * w for s, w in zip(SIGNALS, profile, strict=True)), 4)


def band(score: float) -> Band:
    """keep above 0.7, compress above 0.3, evict at or below 0.3."""
    if score > KEEP_ABOVE:
        return "keep"
    if score > EVICT_AT_OR_BELOW:
        return "compress"
    return "evict"


def reprieve_score(
    importance: int | None, access_count: int, outcome_score: float, hours_since_access: float
) -> float:
    """How much a memory whose validity ran out is still worth (can exceed 1)."""
    imp = min(10, max(1, DEFAULT_IMPORTANCE if importance is None else importance)) / 10
    access = math.log(1 + max(0, access_count))
    outcome = max(0.0, outcome_score)
    recency = math.exp(-REPRIEVE_DECAY_PER_HOUR * max(0.0, hours_since_access))
    return 0.4 * imp + 0.3 * access + 0.2 * outcome + 0.1 * recency


def should_reprieve(score: float, reprieves: int | None) -> bool:
    """Spare it when it scores at least REPRIEVE_FLOOR and has reprieves left."""
    return score >= REPRIEVE_FLOOR and (reprieves or 0) < MAX_REPRIEVES
