"""Loading a whole index plane at once (rebuild): the per-row upkeep set aside, then redone in bulk.

A rebuild empties the plane and inserts every file's rows in one write
transaction. Kept row by row, that upkeep is most of the insert work: every
row of every secondary index, every FTS5 trigger, every pending-vector
trigger, every foreign-key probe. Here each is done once at the end instead:

- the triggers on `files` and `chunks` are dropped and recreated (FTS5 is
  rebuilt from `files` in one pass; `pending_vectors` is recomputed with the
  query its migration seeds it with);
- the secondary indexes of the rebuilt tables are dropped and recreated, in
  their original order, so each is built from sorted keys once;
- foreign keys are off for the connection (the rows are consistent by
  construction: children are inserted only with their file) and the page
  cache holds a 10k plane, so pages are not spilled and re-read
  mid-transaction.

The drops and recreations are inside the caller's transaction: a rebuild that
is killed or fails rolls back to the plane as it was, triggers and indexes
included. The connection's settings are restored on the way out.

`in_path_order` is the stream the rows come from: HEAD's parse results, chunk
by chunk as the workers finish them, with the working tree's edits put in
their paths' places (HEAD is parsed while `git status` still runs).
"""

from __future__ import annotations

import bisect
import heapq
import sqlite3
import subprocess
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from memhtml.index.writer import CHILD_TABLES, FileRows

# The tables a rebuild empties and refills.
REBUILT_TABLES: Final[tuple[str, ...]] = ("files", *CHILD_TABLES, "chunks", "edges")
# Triggers whose work is redone in bulk by `restore` (FTS5 and pending vectors).
TRIGGER_TABLES: Final[tuple[str, ...]] = ("files", "chunks")
# Page cache for the rebuild's connection, in KiB. A 10k plane is ~48 MB: held whole,
# nothing is spilled mid-transaction and the index builds at the end read no page
# back (measured: 2 and 16 MB alike, 64 and 256 MB alike, ~25 % less insert CPU).
# Memory is taken only as pages are touched, and given back when the size is restored.
REBUILD_CACHE_KIB: Final = 64 * 1024
PENDING_SEED: Final = (
    "INSERT INTO pending_vectors (chunk_id) SELECT DISTINCT c.chunk_id FROM chunks c"
    " WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.chunk_id = c.chunk_id)"
)


@dataclass(frozen=True)
class SetAside:
    """What `set_aside` dropped, in sqlite_master order: (name, sql) of each."""

    triggers: tuple[tuple[str, str], ...]
    indexes: tuple[tuple[str, str], ...]


def _schema_objects(
    conn: sqlite3.Connection, kind: str, tables: tuple[str, ...]
) -> list[tuple[str, str]]:
    marks = ", ".join("?" for _ in tables)
    rows = conn.execute(
        f"SELECT name, sql FROM main.sqlite_master WHERE type = ? AND tbl_name IN ({marks})"
        " AND sql IS NOT NULL ORDER BY rowid",
        (kind, *tables),
    ).fetchall()
    return [(str(name), str(sql)) for name, sql in rows]


def set_aside(conn: sqlite3.Connection) -> SetAside:
    """Drop the triggers and secondary indexes `restore` rebuilds (inside a transaction)."""
    dropped = SetAside(
        triggers=tuple(_schema_objects(conn, "trigger", TRIGGER_TABLES)),
        indexes=tuple(_schema_objects(conn, "index", REBUILT_TABLES)),
    )
    for name, _ in dropped.triggers:
        conn.execute(f'DROP TRIGGER main."{name}"')
    for name, _ in dropped.indexes:
        conn.execute(f'DROP INDEX main."{name}"')
    return dropped


def restore(conn: sqlite3.Connection, dropped: SetAside) -> None:
    """Rebuild in bulk what the dropped triggers and indexes kept row by row, then recreate them.

    The unique partial index (one active copy of any content) is recreated
    over rows the rebuild already deduplicated; were a duplicate there, the
    CREATE fails and the whole rebuild rolls back.
    """
    for _, sql in dropped.indexes:
        conn.execute(sql)
    conn.execute("INSERT INTO files_fts(files_fts) VALUES ('rebuild')")
    conn.execute("DELETE FROM pending_vectors")
    conn.execute(PENDING_SEED)
    for _, sql in dropped.triggers:
        conn.execute(sql)


@contextmanager
def loading(conn: sqlite3.Connection) -> Iterator[None]:
    """Connection settings for a bulk load, restored afterwards (outside any transaction).

    `PRAGMA foreign_keys` is a no-op inside a transaction, so this wraps the
    write transaction rather than sitting in it.
    """
    fk = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    cache = conn.execute("PRAGMA main.cache_size").fetchone()[0]
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute(f"PRAGMA main.cache_size = {-REBUILD_CACHE_KIB}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA main.cache_size = {int(cache)}")
        conn.execute(f"PRAGMA foreign_keys = {'ON' if fk else 'OFF'}")


# -- the rebuild's stream of parse results -------------------------------------------
ParseJob = Callable[[], list[FileRows]]


def in_path_order(
    tree: Iterable[ParseJob],
    edited: Iterable[ParseJob],
    replaced: Collection[str],
    timings: dict[str, float],
) -> Iterator[list[FileRows]]:
    """HEAD's parse results with the working tree's in place of `replaced` paths, in path
    order, a tree chunk at a time (each waited for as late as possible: `parse_ms`).

    Both inputs are in path order; an edited path is emitted with the first tree chunk
    that reaches past it (or at the end).
    """
    pending = [result for job in edited for result in job()]
    taken = 0
    for job in tree:
        t0 = time.perf_counter()
        results = job()
        timings["parse_ms"] += (time.perf_counter() - t0) * 1000
        kept = [r for r in results if r[0] not in replaced]
        if not kept:
            continue
        upto = bisect.bisect_right([r[0] for r in pending], kept[-1][0], lo=taken)
        if upto > taken:
            kept = list(heapq.merge(kept, pending[taken:upto], key=lambda r: r[0]))
            taken = upto
        yield kept
    if taken < len(pending):
        yield pending[taken:]


def reap(proc: subprocess.Popen[bytes]) -> None:
    """End a background git process nobody will read (a rebuild that failed early)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
