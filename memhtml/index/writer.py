"""Writing projections into the index plane.

Four narrow rules, each avoiding a specific loss:
- files is upserted on path, so an in-place rewrite keeps the row (and with
  it the chunks whose vectors we already paid for);
- chunk deletion is narrowed to `content_hash <> ?`, so a metadata-only edit
  re-embeds nothing;
- authored edges are cleared by src_path only, since an inbound edge is
  another file's assertion;
- one column list (FILE_COLUMNS) spells the insert, its placeholders and the
  upsert's assignments.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

from memhtml.index.project import FILE_COLUMNS, Parsed, Projection

_COLS: Final = ", ".join(FILE_COLUMNS)
_MARKS: Final = ", ".join("?" for _ in FILE_COLUMNS)
_ASSIGN: Final = ", ".join(f"{c} = excluded.{c}" for c in FILE_COLUMNS if c != "path")
UPSERT_FILE: Final = (
    f"INSERT INTO files ({_COLS}) VALUES ({_MARKS}) ON CONFLICT(path) DO UPDATE SET {_ASSIGN}"
)
CHILD_TABLES: Final[tuple[str, ...]] = (
    "file_tags",
    "file_entities",
    "file_aliases",
    "file_facets",
    "file_citations",
)


# A projection's file dict holds every column but the stamp, which comes last.
_PROJECTED: Final = operator.itemgetter(*FILE_COLUMNS[:-1])
if FILE_COLUMNS[-1] != "indexed_at":  # pragma: no cover - a schema edit must keep this
    raise ImportError("FILE_COLUMNS must end with indexed_at")
# Where the rebuild's duplicate rule reads a files row.
HASH_AT: Final = FILE_COLUMNS.index("content_hash")
ARCHIVED_AT: Final = FILE_COLUMNS.index("archived")
TYPE_AT: Final = FILE_COLUMNS.index("memory_type")

# The child tables' inserts, in the order a file's rows are written; `child_rows`
# spells each one's rows in the same order.
CHILD_INSERTS: Final[tuple[str, ...]] = (
    "INSERT INTO file_tags (path, tag) VALUES (?, ?)",
    "INSERT INTO file_entities (path, entity_type, entity_name, source) VALUES (?, ?, ?, ?)",
    "INSERT INTO file_aliases (path, alias) VALUES (?, ?)",
    "INSERT INTO file_facets (path, ordinal, name, value, numeric_value) VALUES (?, ?, ?, ?, ?)",
    "INSERT INTO file_citations (path, ordinal, text, url) VALUES (?, ?, ?, ?)",
    "INSERT OR IGNORE INTO edges (src_path, dst_path, rel, edge_class, derived, provenance,"
    " created_at) VALUES (?, ?, ?, ?, 0, 'authored', ?)",
    "INSERT OR IGNORE INTO chunks (path, ordinal, content_hash, chunk_id, text)"
    " VALUES (?, ?, ?, ?, ?)",
)
Row = tuple[object, ...]


class FileRows(NamedTuple):
    """One file's rows as the inserts bind them (what a rebuild's worker sends back), or,
    with `file` None, why the file has none."""

    path: str
    sha: str | None
    reason: str | None
    file: Row | None  # the files row, FILE_COLUMNS order
    children: tuple[list[Row], ...]  # one list per CHILD_INSERTS statement


def file_values(proj: Projection, indexed_at: str) -> tuple[object, ...]:
    """The files row in FILE_COLUMNS order (one C-level lookup: rebuild calls this per file)."""
    return (*_PROJECTED(proj.file), indexed_at)


def child_rows(proj: Projection, created: str) -> tuple[list[Row], ...]:
    """The file's child rows, one list per CHILD_INSERTS statement (edges are stamped
    with the file's creation time, else `created`)."""
    path = proj.path
    file = proj.file
    stamp = file["created_at"] or created
    content_hash = file["content_hash"]
    return (
        [(path, t) for t in proj.tags],
        [(path, t, n, s) for (t, n, s) in proj.entities],
        [(path, a) for a in proj.aliases],
        [(path, *f) for f in proj.facets],
        [(path, *c) for c in proj.citations],
        [(path, d, r, c, stamp) for (d, r, c) in proj.edges],
        [(path, o, content_hash, cid, text) for (o, cid, text) in proj.chunks],
    )


def file_rows(path: str, sha: str | None, parsed: Parsed, indexed_at: str) -> FileRows:
    """Every row `parsed` contributes at `path`, stamped `indexed_at` (or why it has none)."""
    proj = parsed.proj
    if proj is None:
        return FileRows(path, sha, parsed.reason or "unparseable", None, ())
    return FileRows(path, sha, None, file_values(proj, indexed_at), child_rows(proj, indexed_at))


def _insert_children(conn: sqlite3.Connection, projs: Sequence[Projection], created: str) -> None:
    rows = [child_rows(p, created) for p in projs]
    for k, sql in enumerate(CHILD_INSERTS):
        conn.executemany(sql, [row for kids in rows for row in kids[k]])


def previous_hash(conn: sqlite3.Connection, path: str) -> str | None:
    """The content hash the index holds for `path`, if any."""
    row = conn.execute("SELECT content_hash FROM files WHERE path = ?", (path,)).fetchone()
    return None if row is None else str(row[0])


def upsert(conn: sqlite3.Connection, proj: Projection, indexed_at: str) -> None:
    """Write one file's rows in place (raises sqlite3.IntegrityError on duplicate content)."""
    path = proj.path
    conn.execute(UPSERT_FILE, file_values(proj, indexed_at))
    for table in CHILD_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE path = ?", (path,))
    conn.execute("DELETE FROM edges WHERE src_path = ? AND derived = 0", (path,))
    conn.execute(
        "DELETE FROM chunks WHERE path = ? AND content_hash <> ?", (path, proj.file["content_hash"])
    )
    _insert_children(conn, [proj], indexed_at)


def insert_files(conn: sqlite3.Connection, rows: Sequence[tuple[object, ...]]) -> None:
    """INSERT many files rows, as few multi-row statements as the variable limit allows.

    Not one executemany: the FTS trigger's insert into the FTS5 table runs
    under a statement savepoint, and FTS5 flushes its pending terms to a new
    segment at every savepoint, so one statement per row writes one segment
    per row (and merges them). One statement per few hundred rows writes the
    same terms for the same rowids with a fraction of the work (about half of
    a 1,000-memory batch's SQL time).
    """
    if not rows:
        return
    width = len(FILE_COLUMNS)
    per = max(1, min(500, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
    tuple_marks = f"({_MARKS})"
    for start in range(0, len(rows), per):
        part = rows[start : start + per]
        conn.execute(
            f"INSERT INTO files ({_COLS}) VALUES " + ", ".join([tuple_marks] * len(part)),
            [value for row in part for value in row],
        )


def bulk_insert(conn: sqlite3.Connection, projs: Sequence[Projection], indexed_at: str) -> None:
    """Insert many new files with their children (a batch of new paths)."""
    insert_files(conn, [file_values(p, indexed_at) for p in projs])
    _insert_children(conn, projs, indexed_at)


def insert_rows(conn: sqlite3.Connection, rows: Sequence[FileRows]) -> None:
    """Insert many new files' rows (`file_rows`, none of them a skip): the rebuild's inserts."""
    insert_files(conn, [r.file for r in rows if r.file is not None])
    for k, sql in enumerate(CHILD_INSERTS):
        conn.executemany(sql, [row for r in rows for row in r.children[k]])


def delete(conn: sqlite3.Connection, path: str) -> None:
    """Remove a file's rows (children cascade) and the edges it authored."""
    conn.execute("DELETE FROM files WHERE path = ?", (path,))
    conn.execute("DELETE FROM edges WHERE src_path = ? AND derived = 0", (path,))
    conn.execute("DELETE FROM skipped_files WHERE path = ?", (path,))


def move(conn: sqlite3.Connection, old: str, new: str) -> bool:
    """Rename a file's rows in place (an UPDATE; children follow by cascade). False if absent."""
    conn.execute("DELETE FROM files WHERE path = ?", (new,))
    conn.execute("DELETE FROM edges WHERE src_path = ? AND derived = 0", (new,))
    cur = conn.execute("UPDATE files SET path = ? WHERE path = ?", (new, old))
    if cur.rowcount == 0:
        return False
    conn.execute("UPDATE edges SET src_path = ? WHERE src_path = ?", (new, old))
    # Derived edges are the index's own assertions: they follow the file.
    conn.execute("UPDATE edges SET dst_path = ? WHERE dst_path = ? AND derived = 1", (new, old))
    move_access(conn, old, new)
    return True


def move_access(conn: sqlite3.Connection, old: str, new: str) -> bool:
    """Usage history follows its memory to a new path (archive, correct, `git mv`).

    The state plane is path-keyed with no foreign key; left behind, the rows
    would be orphans and the moved memory would lose its salience. When the
    destination already has a row (rare: a path that was reused by hand), the
    counts are merged and the newer timestamps kept.
    """
    if old == new:
        return False
    row = conn.execute("SELECT 1 FROM state.access WHERE path = ?", (old,)).fetchone()
    if row is None:
        return False
    conn.execute(
        "INSERT INTO state.access (path, access_count, reinforcement_count, outcome_score,"
        " last_accessed_at, last_reinforced_at, updated_at)"
        " SELECT ?, access_count, reinforcement_count, outcome_score, last_accessed_at,"
        " last_reinforced_at, updated_at FROM state.access WHERE path = ?"
        " ON CONFLICT(path) DO UPDATE SET"
        " access_count = access_count + excluded.access_count,"
        " reinforcement_count = reinforcement_count + excluded.reinforcement_count,"
        " last_accessed_at = nullif(max(coalesce(last_accessed_at, ''),"
        " coalesce(excluded.last_accessed_at, '')), ''),"
        " last_reinforced_at = nullif(max(coalesce(last_reinforced_at, ''),"
        " coalesce(excluded.last_reinforced_at, '')), ''),"
        " updated_at = max(updated_at, excluded.updated_at)",
        (new, old),
    )
    conn.execute("DELETE FROM state.access WHERE path = ?", (old,))
    return True


def record_skip(conn: sqlite3.Connection, path: str, blob: str | None, reason: str) -> None:
    """Remember a file the projection could not index (doctor reports it)."""
    conn.execute(
        "INSERT INTO skipped_files (path, blob_sha, reason) VALUES (?, ?, ?)"
        " ON CONFLICT(path) DO UPDATE SET blob_sha = excluded.blob_sha, reason = excluded.reason",
        (path, blob, reason),
    )


def clear_skip(conn: sqlite3.Connection, paths: Iterable[str]) -> None:
    """Forget skips for paths that now index (or vanished)."""
    conn.executemany("DELETE FROM skipped_files WHERE path = ?", [(p,) for p in paths])


def drop_orphan_embeddings(conn: sqlite3.Connection, hashes: Iterable[str] | None = None) -> int:
    """Delete vectors no chunk refers to any more; scoped to `hashes` when given."""
    orphan = "NOT EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = embeddings.chunk_id)"
    if hashes is None:
        return conn.execute(f"DELETE FROM embeddings WHERE {orphan}").rowcount
    removed = 0
    for h in set(hashes):
        removed += conn.execute(
            f"DELETE FROM embeddings WHERE content_hash = ? AND {orphan}", (h,)
        ).rowcount
    return removed
