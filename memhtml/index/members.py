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
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memhtml.index.scope import Scope

_DEFAULT = Scope()


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


class ScopeMembers:
    """Per-connection cache of the default scope's members (see the module doc)."""

    def __init__(self) -> None:
        # The connection the counters belong to (a new connection restarts them).
        self._conn: sqlite3.Connection | None = None
        self._seen: tuple[int, int] | None = None
        self._members: Members | None = None

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
        self._members = Members(key, path_of_row, {h: tuple(p) for h, p in by_hash.items()})
        return self._members
