"""Nearest-neighbour pairs over a set of vectors: who is within a cosine band of whom.

Sleep mines two kinds of pairs from the memories' first-chunk vectors: merge
candidates (dedup-merge, cosine >= 0.92) and similarity edges
(relationship-mining, cosine >= 0.85). Both use one rule, the original's
`neighborPairs` (SLEEP-FACTS 2.2 and 2.5): the cosine of every unordered pair
is computed once and offered to both endpoints; each endpoint keeps its `k`
most similar partners at or above the floor (ties by index); a pair is kept
when either endpoint kept it; the result is ordered by cosine descending, then
by the two indices, and cut at `limit`.

Where we differ: the original may list a pair twice, once per orientation; we
list each unordered pair once as (i, j) with i < j. The scan is blockwise, so
memory stays O(block x n) instead of O(n^2), and each kept pair's cosine is
recomputed in float64 so the value does not depend on the block it came from.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

BLOCK: Final = 512
PRECISION: Final = 9  # decimals a cosine is compared at


def neighbor_pairs(
    vectors: npt.ArrayLike,
    floor: float,
    k: int,
    limit: int | None = None,
    *,
    block: int = BLOCK,
) -> list[tuple[int, int, float]]:
    """(i, j, cosine) with i < j for every pair within `floor` that either endpoint keeps.

    Zero vectors have cosine 0 with everything; cosines are clamped to [-1, 1]
    and compared at PRECISION decimals.
    """
    m = np.asarray(vectors, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] < 2 or k <= 0:
        return []
    n = m.shape[0]
    norms = np.linalg.norm(m, axis=1)
    unit = m / np.where(norms > 0, norms, 1.0)[:, None]
    unit32 = unit.astype(np.float32)
    # float32 products for the scan, a margin so their rounding never drops a pair; the
    # kept pairs are ranked on float64 cosines rounded to PRECISION, so equal cosines
    # (identical texts) tie and go by index, whatever rounding the products took
    margin = 1e-5
    kept: set[tuple[int, int]] = set()
    for start in range(0, n, max(1, block)):
        stop = min(n, start + max(1, block))
        sims = unit32[start:stop] @ unit32.T
        rows = np.arange(start, stop)
        sims[rows - start, rows] = -np.inf  # no self-pairs
        hit_rows, hit_cols = np.nonzero(sims >= floor - margin)
        if hit_rows.size == 0:
            continue
        hit_rows, hit_cols = _shortlist(hit_rows, hit_cols, sims[hit_rows, hit_cols], k, margin)
        hit_rows = hit_rows + start
        exact = _cosines(unit, hit_rows, hit_cols)
        ok = exact >= floor
        hit_rows, hit_cols, exact = hit_rows[ok], hit_cols[ok], exact[ok]
        order = np.lexsort((hit_cols, -exact, hit_rows))  # per source: best, then smaller index
        taken: dict[int, int] = {}
        for pos in order:
            src, dst = int(hit_rows[pos]), int(hit_cols[pos])
            if taken.get(src, 0) >= k:
                continue
            taken[src] = taken.get(src, 0) + 1
            kept.add((src, dst) if src < dst else (dst, src))
    pairs = np.array(sorted(kept), dtype=np.int64).reshape(-1, 2)
    values = _cosines(unit, pairs[:, 0], pairs[:, 1])
    out = [(int(i), int(j), float(v)) for (i, j), v in zip(pairs, values, strict=True)]
    out.sort(key=lambda p: (-p[2], p[0], p[1]))
    return out if limit is None else out[: max(0, limit)]


def _shortlist(
    rows: npt.NDArray[np.intp],
    cols: npt.NDArray[np.intp],
    values: npt.NDArray[np.float32],
    k: int,
    margin: float,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The hits that can still be among their row's `k` best once their exact cosines are
    known: a row's hits below its k-th best float32 value by more than three margins are
    beaten by at least `k` others whatever the rounding (each float32 value is within one
    margin of its exact cosine), so they are dropped before the float64 pass and the
    per-source loop. Without this a row of a clustered store offers every partner above
    the floor (hundreds at 10k, thousands at 100k) to a Python loop."""
    order = np.lexsort((-values, rows))  # rows as they came (ascending), best value first
    rows, cols, values = rows[order], cols[order], values[order]
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    counts = np.diff(np.r_[starts, rows.size])
    kth = np.full(starts.size, -np.inf, dtype=np.float64)
    full = counts >= k
    kth[full] = values[starts[full] + k - 1]
    keep = values >= np.repeat(kth, counts) - 3 * margin
    return rows[keep], cols[keep]


def _cosines(unit: npt.NDArray[np.float64], a: Any, b: Any) -> npt.NDArray[np.float64]:
    """Row-wise cosines of unit rows a[i], b[i], clamped and rounded to PRECISION."""
    dots = np.einsum("ij,ij->i", unit[a], unit[b])
    return np.round(np.clip(dots, -1.0, 1.0), PRECISION)
