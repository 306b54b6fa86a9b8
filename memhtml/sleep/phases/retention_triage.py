"""retention-triage: score every memory on eight signals; archive the evict band.

The score is the original's (SLEEP-FACTS 4.4; `memhtml.domain.retention`):
recency by type half-life, access frequency (state plane), confidence,
PageRank and bridges over the memory graph, inbound `supports`, content
density and inbound authored `contradicts`, weighted per memory type. A
score at or below 0.3 is the evict band, and those memories are archived
through the Planner (`git mv` into `archive/<YYYY>/`, inbound links
relinked, exactly as the `archive` write door). Arcs, tasks and
`resources/people/` records are never scored; nothing is deleted.

Where we differ from the original, each for a reason:

* **age is measured from `memhtml-created`**, not `memhtml-updated`:
  confidence-decay stamps `memhtml-updated` every night it decays a memory
  (that is what makes it once a night), so the original's recency saw a
  decaying memory as new for its first 27 nights;
* **a memory younger than GRACE_DAYS (14) is never evicted**: access
  frequency and links need time to accrue, and without a grace period a
  freshly written, unread, unlinked procedural memory scores at most 0.35
  and is evicted the night after it was written;
* **eviction needs usage evidence, and a night evicts a bounded share.**
  Access frequency is one of the eight signals; in a store whose state plane
  has recorded no read at all (a new install, a fresh clone, an imported
  corpus) every memory scores as never read, and the original's formula
  would archive most of the corpus the first night (65 % of the eval
  fixture). So with no usage rows nothing is evicted (the bands are still
  reported), and otherwise at most EVICT_SHARE of the corpus is archived in
  any WINDOW_DAYS (archives of any kind in that window count against it),
  lowest scores first: a reviewer reads a bounded diff, and a second run in
  the same window evicts nothing more (sleep stays idempotent);
* **the graph is the authored memory-class links over every non-task file,
  archived ones included** (the original: authored and mined edges between
  active files). Archiving relinks a memory's inbound links to its archive
  copy, so the graph keeps its shape and one night's evictions do not lower
  the next memory's PageRank: a second run evicts nothing new (sleep is
  idempotent), where the original's graph shrank with every eviction.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Final

from memhtml.contracts.dates import as_datetime
from memhtml.contracts.vocab import PEOPLE_DIR
from memhtml.domain.graph import bridge_counts, communities, pagerank
from memhtml.domain.retention import RetentionInputs, band, retention_score
from memhtml.ops.fold import archive
from memhtml.sleep.changes import content_hash
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase, access_rows, listed, relink_touches

GRACE_DAYS: Final = 14
EVICT_SHARE: Final = 0.05  # of the active corpus, per rolling window
WINDOW_DAYS: Final = 7
REASON: Final = "retention: evict band"


def _days_between(earlier: str | None, later: str) -> float:
    if not earlier:
        return 0.0
    try:
        return max(0.0, (as_datetime(later) - as_datetime(earlier)).total_seconds() / 86400)
    except (ValueError, TypeError):
        return 0.0


def score_all(
    ctx: SleepContext, signals: dict[str, dict[str, str]] | None = None
) -> list[tuple[str, str, float, float]]:
    """(path, type, score, age in days) of every scored memory, path order; `signals`, when
    given, gets each memory's inputs to the score (what a reviewer is shown)."""
    conn = ctx.conn
    nodes = [str(p) for (p,) in conn.execute("SELECT path FROM files WHERE memory_type <> 'task'")]
    edges: list[tuple[str, str, float]] = [
        (str(s), str(d), 1.0 if w is None else float(w))
        for s, d, w in conn.execute(
            "SELECT src_path, dst_path, strength FROM edges"
            " WHERE edge_class = 'memory' AND derived = 0"
        )
    ]
    rank = pagerank(nodes, edges)
    max_rank = max(rank.values(), default=0.0) if edges else 0.0
    bridges = bridge_counts(edges, communities(nodes, edges))
    inbound: dict[tuple[str, str], int] = defaultdict(int)
    for dst, rel in conn.execute(
        "SELECT dst_path, rel FROM edges WHERE edge_class = 'memory' AND derived = 0"
        " AND rel IN ('supports', 'contradicts')"
    ):
        inbound[(str(dst), str(rel))] += 1
    access = access_rows(conn)
    out = []
    for path, memory_type, confidence, created, words in conn.execute(
        "SELECT path, memory_type, confidence, created_at, word_count FROM files"
        " WHERE archived = 0 AND memory_type NOT IN ('task', 'arc') AND path NOT LIKE ?"
        " ORDER BY path",
        (PEOPLE_DIR + "/%",),
    ):
        age = _days_between(created, ctx.at)
        inputs = RetentionInputs(
            memory_type=str(memory_type),
            age_days=age,
            access_count=access.get(path, (0, 0, 0.0, None))[0],
            confidence=1.0 if confidence is None else float(confidence),
            graph_rank=rank.get(path, 0.0),
            max_graph_rank=max_rank,
            bridge_count=bridges.get(path, 0),
            reinforcement_count=inbound[(path, "supports")],
            contradiction_count=inbound[(path, "contradicts")],
            word_count=int(words or 0),
        )
        out.append((str(path), str(memory_type), retention_score(inputs), age))
        if signals is not None:
            signals[str(path)] = {
                "age_days": f"{age:.1f}",
                "reads": str(inputs.access_count),
                "confidence": f"{inputs.confidence:.2f}",
                "graph_rank": f"{inputs.graph_rank:.4f}",
                "bridges": str(inputs.bridge_count),
                "supported_by": str(inputs.reinforcement_count),
                "contradicted_by": str(inputs.contradiction_count),
                "words": str(inputs.word_count),
            }
    return out


def eviction_budget(ctx: SleepContext, active: int) -> int | None:
    """How many memories this night may evict (None: no usage evidence at all)."""
    if ctx.conn.execute("SELECT 1 FROM state.access LIMIT 1").fetchone() is None:
        return None
    since = _minus_days(ctx.at, WINDOW_DAYS)
    recent = ctx.conn.execute(
        "SELECT count(*) FROM files WHERE archived = 1 AND archived_at >= ?", (since,)
    ).fetchone()[0]
    return max(0, math.ceil(EVICT_SHARE * (active + recent)) - int(recent))


def _minus_days(instant: str, days: int) -> str:
    from datetime import timedelta

    return (as_datetime(instant) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


class RetentionTriage(BasePhase):
    """Keep / compress / evict; the evict band is archived."""

    name = "retention-triage"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Score, then archive every memory past its grace period in the evict band."""
        counts = dict.fromkeys(
            (
                "scored",
                "keep",
                "compress",
                "evict",
                "in_grace",
                "evicted",
                "capped",
                "failed",
                "relinked",
            ),
            0,
        )
        out = PhaseOutcome(counts=counts)
        lines: list[str] = []
        moves = []
        signals: dict[str, dict[str, str]] = {}
        scored = score_all(ctx, signals)
        evictable: list[tuple[float, str]] = []
        for done, (path, _type, score, age) in enumerate(scored, start=1):
            ctx.progress(done, len(scored))
            counts["scored"] += 1
            where = band(score)
            counts[where] += 1
            if where != "evict":
                continue
            if age < GRACE_DAYS:
                counts["in_grace"] += 1
                continue
            evictable.append((score, path))
        budget = eviction_budget(ctx, len(scored))
        evictable.sort()
        if budget is None:
            out.detail = (
                f"no usage recorded in the state plane: {len(evictable)} in the evict band,"
                " none evicted"
            )
            budget = 0
        else:
            counts["capped"] = max(0, len(evictable) - budget)
        for score, path in evictable[:budget]:
            if ctx.dry_run:
                counts["evicted"] += 1
                continue
            change = ctx.changes.propose(
                "archive",
                {"path": path, "hash": content_hash(ctx.conn, ctx.view, path)},
                summary=f"archive {path}",
                reason={
                    "score": f"{score:.4f}",
                    "band": "evict",
                    "floor": "0.3",
                    "signals": signals.get(path, {}),
                },
                reads=(path,),
            )
            if change is None:  # a person refused this archive: it stays
                counts["refused"] = counts.get("refused", 0) + 1
                continue
            moved = archive(ctx, path, REASON)
            ctx.changes.done(change, ok=moved is not None)
            if moved is None:
                counts["failed"] += 1
                continue
            counts["evicted"] += 1
            moves.append(moved)
            out.touched.append(Touched(moved.to, "archived", from_path=path))
            lines.append(f"evict {path} (score {score:.4f}) -> {moved.to}")
        counts["relinked"] = sum(len(m.relinked) for m in moves)
        out.touched += relink_touches(ctx, moves)
        out.subject = f"evict {counts['evicted']} memories below the retention floor"
        out.body = listed(lines)
        return out

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """The scores are cheap (one pass over the index and the link graph)."""
        return super().plan(ctx)


PHASE = RetentionTriage()
