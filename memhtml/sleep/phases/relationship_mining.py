"""relationship-mining: derived `relates_to` edges between similar memories, in the index only.

Pairs of active non-task memories whose first-chunk vectors are at cosine
>= 0.85 (each keeping its 5 closest, at most 2,000 pairs: the original's
MINING_COSINE_FLOOR, MINING_PER_SOURCE_K and MINING_SAMPLE_LIMIT,
SLEEP-FACTS 2.5) become `edges` rows with `rel = 'relates_to'`,
`derived = 1`, `provenance = 'sleep'` and the cosine as strength. The
previous derived `relates_to` set is replaced as a whole, in one transaction.
`--deep` lowers the floor to 0.80 (the seed's "lower mining band").

The phase commits nothing (`commits = False`): thousands of re-derivable
edges would bury every real diff, and the file format holds authored edges
only. It writes the run index (`ctx.conn`), which is not main's index, and
it emits no ledger mark: a mark per edge would bury the ledger the same way,
and any mark makes the engine commit the ledger file, which a phase that
commits nothing must not cause. The edges are a pure function of the tree
and its vectors, so main re-derives them instead: after a merge has moved
main and updated its index, `derive(main's connection, deep=..., at=...)`
reproduces exactly the run's edges (the engine's `sleep merge` calls it).
A discarded branch leaves main's derived edges as they were.

Where we differ: the original may store a pair once per orientation; here
each unordered pair is one edge, from the smaller path to the larger.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

from memhtml.sleep.phase import PhaseOutcome, SleepContext
from memhtml.sleep.phases._shared import BasePhase, first_chunk_vectors

MINING_FLOOR: Final = 0.85
DEEP_MINING_FLOOR: Final = 0.80
PER_SOURCE_K: Final = 5
PAIR_LIMIT: Final = 2000
REL: Final = "relates_to"


def mine(
    conn: sqlite3.Connection, *, floor: float, k: int = PER_SOURCE_K, limit: int = PAIR_LIMIT
) -> list[tuple[str, str, float]]:
    """(src, dst, cosine) pairs, src < dst, best first (nothing written)."""
    from memhtml.domain.neighbors import neighbor_pairs

    keys, matrix = first_chunk_vectors(conn, "f.archived = 0 AND f.memory_type <> 'task'")
    if matrix is None:
        return []
    return [(keys[i], keys[j], sim) for i, j, sim in neighbor_pairs(matrix, floor, k, limit)]


def replace_edges(conn: sqlite3.Connection, pairs: list[tuple[str, str, float]], at: str) -> int:
    """Replace every derived `relates_to` edge with `pairs`, in one transaction; returns
    how many derived edges there were before."""
    # A deferred transaction: it locks only the index (the state plane may be attached
    # read-only, and BEGIN IMMEDIATE would ask it for a write lock too).
    conn.execute("BEGIN")
    try:
        before = conn.execute(
            "SELECT count(*) FROM edges WHERE derived = 1 AND provenance = 'sleep' AND rel = ?",
            (REL,),
        ).fetchone()[0]
        conn.execute(
            "DELETE FROM edges WHERE derived = 1 AND provenance = 'sleep' AND rel = ?", (REL,)
        )
        conn.executemany(
            "INSERT INTO edges (src_path, dst_path, rel, edge_class, derived, strength,"
            " provenance, created_at) VALUES (?, ?, ?, 'memory', 1, ?, 'sleep', ?)"
            " ON CONFLICT (src_path, rel, dst_path, derived) DO UPDATE SET"
            " strength = excluded.strength, created_at = excluded.created_at",
            [(src, dst, REL, max(0.0, min(1.0, sim)), at) for src, dst, sim in pairs],
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return int(before)


def derive(conn: sqlite3.Connection, *, deep: bool = False, at: str = "") -> int:
    """Mine and replace the derived edges over `conn` (main's index after a merge); the count."""
    pairs = mine(conn, floor=DEEP_MINING_FLOOR if deep else MINING_FLOOR)
    replace_edges(conn, pairs, at)
    return len(pairs)


class RelationshipMining(BasePhase):
    """Index-only similarity edges."""

    name = "relationship-mining"
    commits = False

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Mine the pairs; unless a dry run, replace the run index's derived edges."""
        floor = DEEP_MINING_FLOOR if ctx.deep else MINING_FLOOR
        pairs = mine(ctx.conn, floor=floor)
        counts = {"candidates": len(pairs), "mined": 0, "replaced": 0}
        out = PhaseOutcome(counts=counts, subject=f"mine {len(pairs)} relates_to edges")
        if ctx.dry_run:
            return out
        counts["replaced"] = replace_edges(ctx.conn, pairs, ctx.at)
        counts["mined"] = len(pairs)
        return out

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """The mining is the pairwise scan itself; what the index holds now is cheap."""
        held = ctx.conn.execute(
            "SELECT count(*) FROM edges WHERE derived = 1 AND provenance = 'sleep' AND rel = ?",
            (REL,),
        ).fetchone()[0]
        return {
            "counts": {"derived_edges_now": int(held)},
            "unknown": {"mined": "counting the pairs is the pairwise vector scan the phase runs"},
        }


PHASE = RelationshipMining()
