"""Graph measures sleep reads from the authored links: PageRank, communities, bridges.

The original memhtml's `domain/graph.ts` (SLEEP-FACTS 4.4), restated:

* nodes are sorted and de-duplicated; self-loops and edges to absent nodes are
  dropped; parallel edges fold to their largest strength;
* **PageRank** (Page et al. 1999): damping 0.85, at most 100 iterations,
  stopping when the L1 change is below 1e-6 x n; uniform teleport; a dangling
  node's mass is spread uniformly; an edge's share of its source's mass is
  its strength over the source's out-strength;
* **communities** by label propagation (Raghavan et al. 2007) on the
  undirected graph: at most 100 sweeps over the nodes in sorted order, each
  node adopting the label with the largest summed strength among its
  neighbours (ties to the smallest label); a community is named by its
  smallest member, and one of fewer than MIN_COMMUNITY_SIZE members is none;
* a node's **bridge count** is the number of its edges whose endpoints sit in
  two different communities.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np

DAMPING: Final = 0.85
MAX_ITERATIONS: Final = 100
TOLERANCE: Final = 1e-6
MAX_SWEEPS: Final = 100
MIN_COMMUNITY_SIZE: Final = 3

Edge = tuple[str, str, float]


def fold_edges(
    nodes: Iterable[str], edges: Iterable[Edge]
) -> tuple[list[str], dict[tuple[str, str], float]]:
    """Sorted unique nodes and the directed edges between them, parallel ones folded to max."""
    names = sorted(set(nodes))
    known = set(names)
    folded: dict[tuple[str, str], float] = {}
    for src, dst, strength in edges:
        if src == dst or src not in known or dst not in known:
            continue
        key = (src, dst)
        folded[key] = max(folded.get(key, strength), strength)
    return names, folded


def pagerank(nodes: Iterable[str], edges: Iterable[Edge]) -> dict[str, float]:
    """PageRank of every node (sums to 1 over a non-empty graph)."""
    names, folded = fold_edges(nodes, edges)
    n = len(names)
    if n == 0:
        return {}
    index = {name: i for i, name in enumerate(names)}
    src = np.array([index[s] for s, _ in folded], dtype=np.int64)
    dst = np.array([index[d] for _, d in folded], dtype=np.int64)
    weight = np.array([max(0.0, w) for w in folded.values()], dtype=np.float64)
    out_weight = np.zeros(n)
    np.add.at(out_weight, src, weight)
    share = np.divide(weight, out_weight[src], out=np.zeros_like(weight), where=out_weight[src] > 0)
    dangling = out_weight <= 0
    rank = np.full(n, 1.0 / n)
    for _ in range(MAX_ITERATIONS):
        nxt = np.zeros(n)
        np.add.at(nxt, dst, rank[src] * share)
        nxt = DAMPING * (nxt + rank[dangling].sum() / n) + (1.0 - DAMPING) / n
        delta = float(np.abs(nxt - rank).sum())
        rank = nxt
        if delta < TOLERANCE * n:
            break
    return {name: float(rank[i]) for i, name in enumerate(names)}


def communities(nodes: Iterable[str], edges: Iterable[Edge]) -> dict[str, str | None]:
    """Each node's community (its smallest member), or None in a community under the minimum."""
    names, folded = fold_edges(nodes, edges)
    neighbours: dict[str, dict[str, float]] = {name: {} for name in names}
    for (a, b), w in folded.items():
        for x, y in ((a, b), (b, a)):
            neighbours[x][y] = max(neighbours[x].get(y, w), w)
    label = {name: name for name in names}
    for _ in range(MAX_SWEEPS):
        changed = False
        for name in names:
            around = neighbours[name]
            if not around:
                continue
            votes: dict[str, float] = {}
            for other, w in around.items():
                votes[label[other]] = votes.get(label[other], 0.0) + w
            best = min(votes, key=lambda lab: (-votes[lab], lab))
            if best != label[name]:
                label[name] = best
                changed = True
        if not changed:
            break
    members: dict[str, list[str]] = {}
    for name in names:
        members.setdefault(label[name], []).append(name)
    out: dict[str, str | None] = {}
    for group in members.values():
        named = min(group) if len(group) >= MIN_COMMUNITY_SIZE else None
        for name in group:
            out[name] = named
    return out


def bridge_counts(edges: Iterable[Edge], community: dict[str, str | None]) -> dict[str, int]:
    """Per node: its edges (folded, directed) joining two different communities."""
    counts: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    for src, dst, _ in edges:
        if src == dst or (src, dst) in seen:
            continue
        seen.add((src, dst))
        a, b = community.get(src), community.get(dst)
        if a is not None and b is not None and a != b:
            counts[src] = counts.get(src, 0) + 1
            counts[dst] = counts.get(dst, 0) + 1
    return counts


def directory_vote(directories: Sequence[str], min_votes: int = 2) -> str | None:
    """The directory most neighbours live in, when at least `min_votes` do and it leads alone."""
    tally: dict[str, int] = {}
    for d in directories:
        tally[d] = tally.get(d, 0) + 1
    if not tally:
        return None
    ranked = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
    best, votes = ranked[0]
    if votes < min_votes or (len(ranked) > 1 and ranked[1][1] == votes):
        return None
    return best
