"""Neighbour pairs equal a brute-force reading of the rule, whatever the block size."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.domain.neighbors import neighbor_pairs


def brute(m: np.ndarray, floor: float, k: int) -> set[tuple[int, int]]:
    m = m.astype(np.float64)
    norms = np.linalg.norm(m, axis=1)
    unit = m / np.where(norms > 0, norms, 1)[:, None]
    sims = np.round(np.clip(unit @ unit.T, -1, 1), 9)
    kept: set[tuple[int, int]] = set()
    for i in range(len(m)):
        cands = sorted(
            ((float(sims[i, j]), j) for j in range(len(m)) if j != i and sims[i, j] >= floor),
            key=lambda p: (-p[0], p[1]),
        )
        for _, j in cands[:k]:
            kept.add((min(i, j), max(i, j)))
    return kept


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 25),
    st.integers(2, 6),
    st.floats(0.0, 0.95),
    st.integers(1, 4),
    st.integers(1, 7),
    st.integers(0, 2**31),
)
def test_equals_brute_force(n: int, d: int, floor: float, k: int, block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = rng.integers(-3, 4, size=(n, d)).astype(np.float32)  # ties and zero rows happen
    got = neighbor_pairs(m, floor, k, block=block)
    assert {(i, j) for i, j, _ in got} == brute(m, floor, k)
    assert all(i < j and s >= floor for i, j, s in got)
    assert got == sorted(got, key=lambda p: (-p[2], p[0], p[1]))


def test_limit_and_degenerate_inputs() -> None:
    m = np.eye(4, dtype=np.float32)
    m[1] = m[0]
    m[3] = m[2]
    assert [(i, j) for i, j, _ in neighbor_pairs(m, 0.9, 5)] == [(0, 1), (2, 3)]
    assert len(neighbor_pairs(m, 0.9, 5, limit=1)) == 1
    assert neighbor_pairs(np.zeros((1, 3)), 0.5, 5) == []
    assert neighbor_pairs(m, 0.9, 0) == []
