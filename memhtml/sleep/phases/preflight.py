"""Phase 1, preflight: refuse what a night must not run on, catch main's index up, count.

`prepare` runs under the repository lock before the branch exists: a dirty
working tree (ERR_DIRTY_TREE; untracked files count), an index built with
another embedding model (ERR_EMBED_MODEL_MISMATCH) and an index that is not a
complete projection of HEAD after catching up (ERR_INDEX_STALE: a rebuild left
half done, or chunks without vectors when an embedder is configured) stop the
run with nothing created. The phase itself never commits; it snapshots the
run index's counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import IndexStaleError
from memhtml.sleep.phase import PhaseOutcome, SleepContext

if TYPE_CHECKING:
    import sqlite3

    from memhtml.ops.corpus import Corpus


def prepare(corpus: Corpus) -> dict[str, int]:
    """The preflight gates and the index catch-up (the caller holds the repository lock)."""
    from memhtml.index.db import watermark
    from memhtml.index.embedding import check_space, embed_missing, space_matches
    from memhtml.ops.dirty import dirty_tree_error

    dirty = sorted({e.path for e in corpus.git.status(())})
    if dirty:
        raise dirty_tree_error(corpus.root, dirty, needs="sleep runs on a clean tree")
    embedder = corpus.embedder
    check_space(corpus.conn, embedder)  # ERR_EMBED_MODEL_MISMATCH before anything is written
    report = corpus.indexer.update(include_worktree=True)
    embedded = 0
    if embedder is not None and space_matches(corpus.conn, embedder):
        vec = embed_missing(corpus.conn, embedder, corpus.root, clock=corpus.clock())
        embedded = vec.embedded
        if vec.error:
            raise IndexStaleError(
                f"{vec.pending} chunk(s) could not be embedded ({vec.error}); the index is half"
                " built",
                suggestions=["memhtml index embed", "MEMHTML_EMBED=off memhtml sleep run"],
            )
    head = corpus.git.head()
    row = corpus.conn.execute("SELECT rebuilding FROM index_state WHERE id = 1").fetchone()
    if watermark(corpus.conn) != head or (row is not None and row[0]):
        raise IndexStaleError(
            "the index is not a complete projection of HEAD (a rebuild was left half done)",
            suggestions=["memhtml index rebuild"],
        )
    pending = 0
    if embedder is not None:
        pending = int(corpus.conn.execute("SELECT count(*) FROM pending_vectors").fetchone()[0])
        if pending:
            raise IndexStaleError(
                f"{pending} chunk(s) have no vector of {embedder.model_id}: the index is half"
                " built",
                suggestions=["memhtml index embed"],
            )
    return {
        "indexed": report.projected,
        "indexed_deleted": report.deleted,
        "indexed_moved": report.moved,
        "embeddings_written": embedded,
    }


def snapshot(conn: sqlite3.Connection) -> dict[str, int]:
    """What the index holds: memories by state, chunks, vectors, edges, skipped files."""

    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    return {
        "active": one("SELECT count(*) FROM files WHERE archived = 0 AND memory_type <> 'task'"),
        "archived": one("SELECT count(*) FROM files WHERE archived = 1"),
        "tasks": one("SELECT count(*) FROM files WHERE memory_type = 'task' AND archived = 0"),
        "chunks": one("SELECT count(*) FROM chunks"),
        "embeddings": one("SELECT count(*) FROM embeddings"),
        "edges": one("SELECT count(*) FROM edges WHERE derived = 0"),
        "derived_edges": one("SELECT count(*) FROM edges WHERE derived = 1"),
        "index_skipped": one(
            "SELECT count(*) FROM skipped_files WHERE reason NOT LIKE 'duplicate content of %'"
        ),
    }


@dataclass(frozen=True)
class Preflight:
    """Never commits; on a dry run it counts too."""

    name: str = "preflight"
    needs_model: bool = False
    commits: bool = False
    deep_only: bool = False

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Snapshot the run index (the gates ran in `prepare`)."""
        counts = snapshot(ctx.conn)
        skipped = [
            str(r[0])
            for r in ctx.conn.execute(
                "SELECT path FROM skipped_files WHERE reason NOT LIKE 'duplicate content of %'"
                " ORDER BY path LIMIT 20"
            )
        ]
        detail = (
            f"{counts['index_skipped']} unparseable file(s) skipped, never rewritten: "
            + ", ".join(skipped)
            if skipped
            else None
        )
        return PhaseOutcome(counts=counts, detail=detail)

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """The same counts, against main now."""
        return {"would_commit": False, **snapshot(ctx.conn)}


PHASE = Preflight()
