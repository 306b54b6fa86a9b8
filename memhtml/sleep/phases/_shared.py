"""What several phases share: the base phase, reads of the run index, and the Planner moves.

Nothing here commits or writes the state plane. Edits go through the
Planner bound to the phase's view, so a sleep archive keeps the graph whole
exactly as the write doors do (inbound links follow the memory).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.vocab import PEOPLE_DIR
from memhtml.html import MemoryDocument, add_link, parse_memory, set_meta
from memhtml.ops.fold import Moved
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched

if TYPE_CHECKING:
    import numpy.typing as npt


NO_MODEL: Final = "no model: MEMHTML_LLM=off"
BODY_LINES: Final = 100  # commit-body lines a phase lists (the counts are always whole)
DUPLICATE_REASON: Final = "duplicate content of "


class BasePhase:
    """A deterministic phase; subclasses set the name and implement `run`."""

    name: str = ""
    needs_model: bool = False
    commits: bool = True
    deep_only: bool = False

    def run(self, ctx: SleepContext) -> PhaseOutcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """By default the dry run's counts (cheap for this phase)."""
        from dataclasses import replace

        outcome = self.run(replace(ctx, dry_run=True))
        return {"counts": dict(outcome.counts), "unknown": {}}


# -- reads of the run index ------------------------------------------------------------------


def scalar(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
    """The first column of the first row (None when there is none)."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def unparseable(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Files the index could not project (not duplicates): (path, reason), path order."""
    return [
        (str(p), str(r))
        for p, r in conn.execute(
            "SELECT path, reason FROM skipped_files WHERE reason NOT LIKE ? ORDER BY path",
            (DUPLICATE_REASON + "%",),
        )
    ]


def access_rows(conn: sqlite3.Connection) -> dict[str, tuple[int, int, float, str | None]]:
    """state.access by path: (access_count, reinforcement_count, outcome_score,
    last_accessed_at); empty when the state plane is not attached."""
    try:
        return {
            str(p): (int(a or 0), int(r or 0), float(o or 0.0), last)
            for p, a, r, o, last in conn.execute(
                "SELECT path, access_count, reinforcement_count, outcome_score,"
                " last_accessed_at FROM state.access"
            )
        }
    except sqlite3.OperationalError:
        return {}


def first_chunk_vectors(
    conn: sqlite3.Connection, where: str, params: Sequence[Any] = ()
) -> tuple[list[str], npt.NDArray[Any] | None]:
    """Paths (sorted) of files matching `where` (over `files f`) that have a first-chunk
    vector of the index's model, and those vectors as one matrix (None when none)."""
    import numpy as np

    from memhtml.domain.vectors import vector_from_blob

    model = scalar(conn, "SELECT embed_model FROM index_state WHERE id = 1")
    if model is None:
        return [], None
    rows = conn.execute(
        "SELECT f.path, e.vector FROM files f"
        " JOIN chunks c ON c.path = f.path AND c.ordinal = 0"
        " JOIN embeddings e ON e.chunk_id = c.chunk_id AND e.model = ?"
        f" WHERE {where} ORDER BY f.path",
        (model, *params),
    ).fetchall()
    if not rows:
        return [], None
    return [str(r[0]) for r in rows], np.stack([vector_from_blob(r[1]) for r in rows])


def is_person_record(path: str) -> bool:
    """A `resources/people/` reference record (reached by key, never merged or evicted)."""
    return path.startswith(PEOPLE_DIR + "/")


def read_doc(ctx: SleepContext, path: str) -> MemoryDocument | None:
    """The parse of `path` in the phase's view; None when absent or not a valid memory."""
    if not ctx.view.exists(path):
        return None
    doc = parse_memory(ctx.view.read(path))
    return doc if doc.ok else None


# -- edits through the Planner -----------------------------------------------------------------


def relink_touches(ctx: SleepContext, moves: Iterable[Moved]) -> list[Touched]:
    """The sources whose links a phase rewrote and that are still where they were, as
    `rewritten` touches (a source the phase moved afterwards is listed by its move)."""
    seen = dict.fromkeys(r["src_path"] for m in moves for r in m.relinked)
    return [Touched(p, "rewritten") for p in seen if ctx.view.exists(p)]


_KIND_RANK: Final = {"created": 0, "merged": 1, "archived": 2, "moved": 3, "rewritten": 4}


def unique_touches(touched: Iterable[Touched]) -> list[Touched]:
    """One touch per path, in first-seen order: what happened to it, not that its links were
    rewritten on the way (a canonical created tonight and relinked is `created`)."""
    best: dict[str, Touched] = {}
    for t in touched:
        held = best.get(t.path)
        if held is None or _KIND_RANK[t.kind] < _KIND_RANK[held.kind]:
            best[t.path] = t
    return list(best.values())


def stamp(ctx: SleepContext, path: str, edit: Callable[[str], str]) -> bool:
    """Apply a head edit to `path` in the view; True when the bytes changed."""
    before = ctx.view.read(path)
    after = edit(before.decode("utf-8")).encode("utf-8")
    if after == before:
        return False
    ctx.view.write(path, after)
    return True


def link_stamped(ctx: SleepContext, path: str, rel: str, target: str) -> bool:
    """Add the authored link `rel` -> `target` to `path` in the view, stamping
    `memhtml-updated` when it is new; True when the file changed (the batch then knows
    the link). A missing file is no change."""

    def edit(text: str) -> str:
        linked = add_link(text, rel, target)
        return linked if linked == text else set_meta(linked, "memhtml-updated", ctx.at)

    if not ctx.view.exists(path) or not stamp(ctx, path, edit):
        return False
    ctx.planner.batch_links.append((path, rel, target))
    return True


def listed(lines: Sequence[str], limit: int = BODY_LINES) -> list[str]:
    """At most `limit` body lines, with a last line saying how many were left out."""
    if len(lines) <= limit:
        return list(lines)
    return [*lines[:limit], f"... and {len(lines) - limit} more"]
