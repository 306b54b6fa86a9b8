"""Indexing a write door's commit while the commit is being made.

A write door knows every path it will commit, and their bytes, before a file
is written: the index rows do not depend on the commit id. So the door opens
the index transaction and projects and inserts the rows on a helper thread
while it writes the files and runs git (kernel work and subprocesses, which
leave the interpreter free); once the commit landed it stamps the new HEAD and
commits the transaction. Should the git commit fail, the transaction rolls
back and the index stays at the parent, exactly as if nothing had been tried.
A killed process leaves an uncommitted SQLite transaction, which SQLite rolls
back: the index is then behind HEAD (if the commit landed), which the next
writer's catch-up repairs, as before.

The rows and their order are those of a serial `Indexer.apply_commit`: the
same statements run in the same order, only earlier.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from memhtml.index import writer
from memhtml.index.db import rollback_quietly
from memhtml.index.project import Parsed, project_bytes
from memhtml.store import faults
from memhtml.store.git import blob_sha

if TYPE_CHECKING:
    from memhtml.html import MemoryDocument
    from memhtml.index.indexer import Indexer, IndexReport

Change = tuple[str, bytes | None, str | None]  # (path, bytes or None, moved_from)


def _existing(conn: sqlite3.Connection, paths: Sequence[str]) -> set[str]:
    """Which of `paths` the index holds rows for, in one statement per 500 paths."""
    found: set[str] = set()
    for start in range(0, len(paths), 500):
        part = paths[start : start + 500]
        marks = ",".join("?" * len(part))
        found.update(
            str(r[0]) for r in conn.execute(f"SELECT path FROM files WHERE path IN ({marks})", part)
        )
    return found


class PendingIndex:
    """One write door's index transaction: `start` it, then `finish` or `abandon` it.

    Between `start` and the end of `finish`/`abandon` the connection belongs to
    this object (the door touches no SQL meanwhile).
    """

    def __init__(
        self,
        indexer: Indexer,
        parent: str,
        changes: Sequence[Change],
        parsed: Mapping[bytes, MemoryDocument] | None,
    ) -> None:
        from memhtml.index.indexer import IndexReport

        self._indexer = indexer
        self._changes = changes
        self._parsed = parsed
        self._started = time.perf_counter()
        self.report = IndexReport("update", previous_head=parent)
        self._now = indexer.clock()
        self._failure: BaseException | None = None
        self._open = False  # the transaction is open (prepared, not yet ended)
        self._thread: threading.Thread | None = None

    @classmethod
    def start(
        cls,
        indexer: Indexer,
        parent: str | None,
        changes: Sequence[Change],
        parsed: Mapping[bytes, MemoryDocument] | None = None,
        *,
        background: bool = True,
    ) -> PendingIndex | None:
        """Begin indexing `changes` as the commit on top of `parent`; None when the index is
        not at `parent` (other commits landed: the door runs a full update afterwards)."""
        if parent is None or indexer.watermark() != parent:
            return None
        pending = cls(indexer, parent, changes, parsed)
        if background:
            pending._thread = threading.Thread(
                target=pending._run, name="memhtml-index", daemon=False
            )
            pending._thread.start()
        else:
            pending._run()
        return pending

    def _run(self) -> None:
        try:
            self._prepare()
        except BaseException as exc:  # handed to the door's thread by _wait
            self._failure = exc

    def _prepare(self) -> None:
        """Everything `apply_commit` does before stamping HEAD, inside an open transaction."""
        from memhtml.index.indexer import indexable

        ix, conn, report, now = self._indexer, self._indexer.conn, self.report, self._now
        conn.execute("BEGIN IMMEDIATE")
        self._open = True
        try:
            faults.sqlite_step("index rows")
            ordered = sorted(self._changes, key=lambda c: c[1] is not None)
            overlay = {str(r[0]) for r in conn.execute("SELECT path FROM worktree_overlay")}
            # Paths that may hold rows: those found now, and any a change already named
            # (rows at a path only appear while a change naming that path is applied).
            maybe = _existing(conn, [p for p, data, _ in ordered if data is not None])
            fresh: list[tuple[str, str | None, Parsed]] = []
            for path, data, moved_from in ordered:
                if moved_from is not None and indexable(moved_from):
                    ix._retire([moved_from])
                    if ix._move(moved_from, path):
                        report.moved += 1
                    writer.clear_skip(conn, [moved_from])
                    if moved_from in overlay:
                        conn.execute("DELETE FROM worktree_overlay WHERE path = ?", (moved_from,))
                        overlay.discard(moved_from)
                if not indexable(path):
                    continue
                named = path in maybe
                maybe.add(path)
                if path in overlay:
                    conn.execute("DELETE FROM worktree_overlay WHERE path = ?", (path,))
                    overlay.discard(path)
                if data is None:
                    ix._retire([path])
                    ix._delete(path)
                    report.deleted += 1
                    continue
                doc = self._parsed.get(data) if self._parsed else None
                sha = blob_sha(data)
                if moved_from is None and (not named or writer.previous_hash(conn, path) is None):
                    # a new path: no rows of its own to replace
                    fresh.append((path, sha, project_bytes(path, data, sha, doc)))
                else:
                    ix._store_bytes(path, data, sha, report, now, doc=doc)
            ix._store_fresh(fresh, report, now)
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        if self._open:
            self._open = False
            rollback_quietly(self._indexer.conn)

    def _wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def finish(self, new_head: str) -> IndexReport:
        """The commit landed at `new_head`: settle duplicates, stamp HEAD, commit the rows."""
        self._wait()
        ix, conn, report, now = self._indexer, self._indexer.conn, self.report, self._now
        try:
            ix._retry_duplicates(report, now)
            writer.drop_orphan_embeddings(conn, ix._take_left_hashes())
            conn.execute(
                "UPDATE index_state SET head_sha = ?, updated_at = ? WHERE id = 1", (new_head, now)
            )
            faults.sqlite_step("index commit")
            ix.commit_batch(len(self._changes))  # a big batch: its WAL checkpoint on a thread
        except BaseException:
            self._rollback()  # a COMMIT refused (a full disk) leaves the transaction open
            raise
        self._open = False
        report.head_sha = new_head
        report.elapsed_ms = (time.perf_counter() - self._started) * 1000
        return report

    def abandon(self) -> None:
        """The commit did not happen (or the door is unwinding): roll the rows back."""
        # A failure of _prepare rolled back already; the door re-raises its own.
        with contextlib.suppress(BaseException):
            self._wait()
        self._rollback()
        self._indexer._take_left_hashes()
