"""Newer first among same-topic hits: a later statement about the same thing outranks an older one.

Pure. A knowledge update in conversation ("we moved the launch to June")
rarely restates the old fact word for word, so near-duplicate arbitration
(cosine >= 0.95, one span apart) does not see the pair; but the two
messages are still about the same topic, and their vectors are closer to
each other than to the rest of the list. Within the first `window` places,
hits are grouped complete-link (every member within `floor` cosine of every
other, built in rank order) and each group is re-ordered newest first
*within the places it already holds*; hits in no group keep their place.
Hits without a time or a vector never move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

DEFAULT_FLOOR: Final = 0.8
DEFAULT_WINDOW: Final = 20


def _unit(v: Any) -> Any:
    a = np.asarray(v, dtype=np.float64)
    n = float(np.linalg.norm(a))
    return a / n if n > 0 else a


def topic_groups(
    ranked: Sequence[str], vectors: Mapping[str, Any], floor: float, window: int
) -> list[list[int]]:
    """Complete-link groups (positions, in rank order) of two or more within the window."""
    head = [i for i in range(min(window, len(ranked))) if ranked[i] in vectors]
    units = {i: _unit(vectors[ranked[i]]) for i in head}
    groups: list[list[int]] = []
    placed: set[int] = set()
    for i in head:
        if i in placed:
            continue
        group = [i]
        for j in head:
            if j <= i or j in placed:
                continue
            if all(float(units[j] @ units[m]) >= floor for m in group):
                group.append(j)
        if len(group) > 1:
            groups.append(group)
            placed.update(group)
    return groups


def newer_first(
    ranked: Sequence[str],
    vectors: Mapping[str, Any],
    times: Mapping[str, str | None],
    *,
    floor: float = DEFAULT_FLOOR,
    window: int = DEFAULT_WINDOW,
) -> list[str]:
    """`ranked` with each same-topic group ordered newest first in its own places.

    Times are ISO-8601 strings in one zone (they compare as text); members
    without a time keep their places and the timed members share the rest.
    Equal times keep their rank order.
    """
    out = list(ranked)
    for group in topic_groups(ranked, vectors, floor, window):
        timed = [p for p in group if times.get(ranked[p])]
        if len(timed) < 2:
            continue
        order = sorted(timed, key=lambda p: (str(times[ranked[p]]), -p), reverse=True)
        for place, src in zip(timed, order, strict=True):
            out[place] = ranked[src]
    return out
