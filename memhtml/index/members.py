"""The default scope's members in memory, for a process that searches again and again.

Both content arms rank candidates outside SQL (the fts arm from cached
postings, memhtml.index.bm25; the vector arm from the matrix scan) and then
ask SQLite which of them are in scope and under which paths, most of it
statement overhead for a few dozen rows. For the
default scope (active memories, tasks excluded: `Scope()`), the answer is a
pure function of the files table, so a long-lived process keeps it: each
member's rowid and content hash with its path.

The copy is keyed by the database's change counters: `PRAGMA data_version`
(changes committed by any other connection) and the connection's own
`total_changes`. Any write anywhere drops it, so it can never answer for a
state it did not read. Like the postings, nothing is loaded on the first
query after a change (a one-shot CLI search costs what it did); the second
query over an unchanged index loads it (~one indexed scan of `files`), and
later ones are served from memory.

A write this process makes itself (the write doors) patches the copy instead
of dropping it (`before_write`, `after_write`): files rows change only by
path, so the rows of the written paths, read before and after the write, are
the whole difference. The patch applies only when nothing else changed the
index meanwhile: the copy was current when the write began, and no other
connection committed since (`data_version` unchanged); otherwise it is
dropped as before.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memhtml.index.scope import Scope

_DEFAULT = Scope()
# A write naming more paths than this drops the copy (the next queries reload it).
MAX_PATCH = 512


def state_key(conn: sqlite3.Connection) -> tuple[int, int]:
    """The index's change counters: others' commits, and this connection's own changes."""
    return int(conn.execute("PRAGMA main.data_version").fetchone()[0]), conn.total_changes


@dataclass(frozen=True)
class Members:
    """The default scope's memories (path by rowid, paths by content hash) at `key`."""

    key: tuple[int, int]
    path_of_row: dict[int, str]
    paths_of_hash: dict[str, tuple[str, ...]]

    def current(self, conn: sqlite3.Connection) -> bool:
        """True while the index is still the state these members were read from."""
        return state_key(conn) == self.key


@dataclass(frozen=True)
class WriteMark:
    """The members a write began over, and the in-scope rows of its paths before it."""

    members: Members
    paths: tuple[str, ...]
    rows: list[tuple[int, str, str]]


def _rows_of(conn: sqlite3.Connection, paths: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """(rowid, path, content hash) of `paths`' rows in the default scope."""
    if not paths:
        return []
    where, params = _DEFAULT.sql("f")
    marks = ",".join(f":mp_{i}" for i in range(len(paths)))
    return [
        (int(r[0]), str(r[1]), str(r[2]))
        for r in conn.execute(
            f"SELECT f.id, f.path, f.content_hash FROM files f WHERE f.path IN ({marks})"
            f" AND {where}",
            {**params, **{f"mp_{i}": p for i, p in enumerate(paths)}},
        )
    ]


class ScopeMembers:
    """Per-connection cache of the default scope's members (see the module doc)."""

    def __init__(self) -> None:
        # The connection the counters belong to (a new connection restarts them).
        self._conn: sqlite3.Connection | None = None
        self._seen: tuple[int, int] | None = None
        self._members: Members | None = None
        self.loads = 0  # members read from the whole files table (tests count them)
        self.patches = 0  # members patched after this process's own write

    def get(self, conn: sqlite3.Connection, scope: Scope) -> Members | None:
        """Once per query: the members when `scope` is the default and the index is the one
        the previous query saw; None otherwise (the caller asks SQL). An arm that uses them
        checks `Members.current` in the read transaction whose state it must match."""
        from memhtml.index.db import read_snapshot

        if scope != _DEFAULT:
            return None
        if conn is not self._conn:
            self._conn, self._seen, self._members = conn, None, None
        with read_snapshot(conn):  # the key and the rows read: one state of the index
            key = state_key(conn)
            if self._members is not None and self._members.key == key:
                return self._members
            self._members = None
            if key != self._seen:  # the first query over this state: SQL answers it
                self._seen = key
                return None
            where, params = _DEFAULT.sql("f")
            path_of_row: dict[int, str] = {}
            by_hash: dict[str, list[str]] = {}
            for rowid, path, chash in conn.execute(
                f"SELECT f.id, f.path, f.content_hash FROM files f WHERE {where}", params
            ):
                path_of_row[rowid] = path
                by_hash.setdefault(chash, []).append(path)
        self.loads += 1
        self._members = Members(key, path_of_row, {h: tuple(p) for h, p in by_hash.items()})
        return self._members

    # -- this process's own writes ----------------------------------------------------
    def before_write(self, conn: sqlite3.Connection, paths: set[str]) -> WriteMark | None:
        """Before a write of `paths` on `conn` (under the repository lock, before its index
        transaction): what `after_write` needs to patch the members, or None (they drop)."""
        from memhtml.index.db import read_snapshot

        members = self._members
        if members is None or conn is not self._conn or len(paths) > MAX_PATCH:
            return None
        ordered = tuple(sorted(paths))
        with read_snapshot(conn):
            if state_key(conn) != members.key:
                return None
            rows = _rows_of(conn, ordered)
        return WriteMark(members, ordered, rows)

    def after_write(self, conn: sqlite3.Connection, mark: WriteMark | None) -> bool:
        """After the write `mark` began (its index transaction committed): patch the members
        with the rows of its paths. True when patched; False leaves the usual reload."""
        from memhtml.index.db import read_snapshot

        if mark is None or conn is not self._conn or self._members is not mark.members:
            return False
        with read_snapshot(conn):
            key = state_key(conn)
            if key[0] != mark.members.key[0]:  # another connection committed meanwhile
                self._members = None
                return False
            rows = _rows_of(conn, mark.paths)
        path_of_row = dict(mark.members.path_of_row)
        by_hash = dict(mark.members.paths_of_hash)
        for rowid, path, chash in mark.rows:
            path_of_row.pop(rowid, None)
            left = tuple(p for p in by_hash.get(chash, ()) if p != path)
            if left:
                by_hash[chash] = left
            else:
                by_hash.pop(chash, None)
        for rowid, path, chash in rows:
            path_of_row[rowid] = path
            by_hash[chash] = (*by_hash.get(chash, ()), path)
        self._members = Members(key, path_of_row, by_hash)
        self._seen = key
        self.patches += 1
        return True
