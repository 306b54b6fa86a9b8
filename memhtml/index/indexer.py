"""Rebuild and incremental update: the git tree in, index rows out.

Rebuild lists HEAD with one `ls-tree -r` (its parse workers read the blobs,
one `cat-file --batch` per chunk), then overlays the working tree's
uncommitted edits. Update diffs the watermark to HEAD (committed changes
first, renames as UPDATEs) and then re-reads the paths the working tree has
dirty, plus the ones it had dirty last time. Both call the same projection,
so their row sets agree.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import InvalidPathError
from memhtml.contracts.paths import is_memory_path
from memhtml.contracts.vocab import GENERATED_NAMES, PARA_BUCKETS
from memhtml.html import MemoryDocument
from memhtml.index import writer
from memhtml.index.db import watermark, write_transaction
from memhtml.index.parallel import CHUNK, PARALLEL_MIN, ParsePool, project_many
from memhtml.index.project import Parsed, PathFacts, Projection, path_facts, project_bytes
from memhtml.store.git import Git, StatusEntry, blob_sha
from memhtml.telemetry import traced

if TYPE_CHECKING:
    from memhtml.index import bulk
    from memhtml.index.db import Checkpoint

PREFIXES: Final[tuple[str, ...]] = tuple(f"{b}/" for b in PARA_BUCKETS)
CAT_BATCH: Final = 4000


def indexable(path: str) -> bool:
    """A tree path the index projects: a memory path that is not a generated listing."""
    return path.rsplit("/", 1)[-1] not in GENERATED_NAMES and is_memory_path(path)


@dataclass
class IndexReport:
    """What an index pass did."""

    mode: str
    head_sha: str | None = None
    previous_head: str | None = None
    projected: int = 0
    deleted: int = 0
    moved: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    # What a write door could not finish after its commit landed (memhtml.ops.write_door).
    warnings: list[dict[str, str]] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        """The envelope payload."""
        data = {
            "mode": self.mode,
            "head_sha": self.head_sha,
            "previous_head": self.previous_head,
            "projected": self.projected,
            "deleted": self.deleted,
            "moved": self.moved,
            "skipped": self.skipped,
            "elapsed_ms": round(self.elapsed_ms, 1),
            **self.extra,
        }
        if self.warnings:
            data["warnings"] = self.warnings
        return data


def dirty_of(entries: Iterable[StatusEntry]) -> set[str]:
    """The indexable paths among `git status` entries."""
    return {
        p
        for entry in entries
        for p in (entry.path, entry.old_path)
        if p is not None and indexable(p)
    }


def tree_rows_chunk(git: Git, now: str, items: list[tuple[str, str]]) -> list[writer.FileRows]:
    """Read, parse and project each indexable (path, blob sha) of HEAD's tree, leaving the
    others out (a rebuild worker's task: the blobs are read here, by one `git cat-file`,
    rather than sent by the parent; the path is validated once, for `indexable` and the
    projection)."""
    wanted: list[tuple[str, str, PathFacts]] = []
    for path, sha in items:
        try:
            wanted.append((path, sha, path_facts(path)))  # memory_path's rules: `indexable`
        except InvalidPathError:
            continue
    blobs = git.cat_blobs(sha for _, sha, _ in wanted)
    return [
        writer.file_rows(path, sha, project_bytes(path, blobs[sha], sha, facts=facts), now)
        for path, sha, facts in wanted
        if sha in blobs
    ]


def rows_chunk(now: str, items: list[tuple[str, str | None, bytes]]) -> list[writer.FileRows]:
    """Parse and project each (path, blob sha, bytes) of the working tree's edits."""
    return [
        writer.file_rows(path, sha, project_bytes(path, data, sha), now)
        for path, sha, data in items
    ]


class Indexer:
    """Keeps one index plane in step with one repository."""

    def __init__(self, conn: sqlite3.Connection, git: Git, root: Path, clock: Callable[[], str]):
        self.conn = conn
        self.git = git
        self.root = root
        self.clock = clock
        self._left_hashes: set[str] = set()
        self._checkpoint: Checkpoint | None = None

    # -- state ---------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The index_state row."""
        cur = self.conn.execute("SELECT * FROM index_state WHERE id = 1")
        names = [d[0] for d in cur.description]
        row = cur.fetchone()
        return dict(zip(names, row, strict=True)) if row else {}

    def watermark(self) -> str | None:
        """The commit the index has caught up to."""
        return watermark(self.conn)

    def commit_batch(self, files: int) -> None:
        """COMMIT the open transaction of `files` files; from LATER_CHECKPOINT_FILES on, the
        WAL is checkpointed on a thread instead of inside the COMMIT (index.db)."""
        from memhtml.index.db import LATER_CHECKPOINT_FILES, commit_checkpointing_later

        if files < LATER_CHECKPOINT_FILES:
            self.conn.execute("COMMIT")
            return
        self.settle()
        self._checkpoint = commit_checkpointing_later(self.conn)

    def settle(self) -> None:
        """Wait for a checkpoint still running on its thread (before the connection closes)."""
        if self._checkpoint is not None:
            checkpoint, self._checkpoint = self._checkpoint, None
            checkpoint.join()

    def _take_left_hashes(self) -> set[str]:
        taken, self._left_hashes = self._left_hashes, set()
        return taken

    # -- reading the tree ----------------------------------------------------
    def _read_worktree(self, paths: Iterable[str]) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        for path in paths:
            if not indexable(path):
                continue
            target = self.root / path
            try:
                out[path] = (
                    target.read_bytes() if target.is_file() and not target.is_symlink() else None
                )
            except OSError:
                out[path] = None
        return out

    def dirty_paths(self, *, read_only: bool = False) -> set[str]:
        """Indexable paths the working tree has uncommitted (staged, unstaged, untracked)."""
        return dirty_of(self.git.status(PREFIXES, read_only=read_only))

    def overlay(self) -> dict[str, str | None]:
        """Paths indexed from the working tree -> blob id of the bytes read (None: absent)."""
        return {
            str(path): sha
            for path, sha in self.conn.execute("SELECT path, blob_sha FROM worktree_overlay")
        }

    def worktree_drift(self, dirty: set[str] | None = None) -> list[str]:
        """Paths whose working-tree bytes differ from what the index holds for them.

        The index holds HEAD's content for a clean path and the overlay's
        recorded bytes for a path it read from the working tree; a dirty path
        the overlay does not know, or an overlay path whose bytes changed
        (edited again, reverted, repaired, deleted, restored), has drifted.
        Empty means the index equals a rebuild of HEAD plus the working tree now
        (given that the watermark is HEAD).
        """
        dirty = self.dirty_paths(read_only=True) if dirty is None else dirty
        overlay = self.overlay()
        drift: list[str] = []
        for path in sorted(dirty | overlay.keys()):
            if path not in overlay:
                drift.append(path)
                continue
            data = self._read_worktree([path]).get(path)
            if (None if data is None else blob_sha(data)) != overlay[path]:
                drift.append(path)
        return drift

    def _record_overlay(self, contents: Mapping[str, bytes | None], dirty: set[str]) -> None:
        """Replace the overlay: every dirty path with the blob id of the bytes just indexed."""
        self.conn.execute("DELETE FROM worktree_overlay")
        self.conn.executemany(
            "INSERT INTO worktree_overlay (path, blob_sha) VALUES (?, ?)",
            [
                (p, None if contents.get(p) is None else blob_sha(contents[p] or b""))
                for p in sorted(dirty)
            ],
        )

    def _retire(self, paths: Iterable[str]) -> None:
        """Remember paths a memory held and left: never handed to another memory."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO retired_paths (path) VALUES (?)",
            [(p,) for p in paths if indexable(p)],
        )

    def _retired_from_history(self, head: str, since: str | None = None) -> list[str]:
        """Every memory path HEAD's history (after `since`) deleted or moved away.

        One `git log`; without rename detection a move is a deletion of its
        source, which is exactly the path that was given up.
        """
        revs = [head] if since is None else [f"{since}..{head}"]
        out = self.git.run(
            "log",
            "--no-renames",
            "--diff-filter=D",
            "--name-only",
            "-z",
            "--format=",
            *revs,
            "--",
            *PREFIXES,
        )
        return sorted(
            {p.decode("utf-8", "surrogateescape") for p in out.split(b"\x00") if p.strip()}
        )

    def _vacate(self, path: str) -> None:
        """The rows at `path` are about to be replaced or removed: their content hash
        may leave (its vectors are dropped at the end when no chunk keeps them)."""
        old = writer.previous_hash(self.conn, path)
        if old is not None:
            self._left_hashes.add(old)

    def _move(self, old: str, new: str) -> bool:
        """Rename a file's rows, replacing whatever the index held at `new`."""
        self._vacate(new)
        return writer.move(self.conn, old, new)

    def _delete(self, path: str) -> None:
        self._vacate(path)
        writer.delete(self.conn, path)

    def _store_bytes(
        self,
        path: str,
        data: bytes,
        sha: str | None,
        report: IndexReport,
        now: str,
        *,
        doc: MemoryDocument | None = None,
    ) -> None:
        self._store(path, sha, project_bytes(path, data, sha, doc), report, now)

    def _store(
        self, path: str, sha: str | None, parsed: Parsed, report: IndexReport, now: str
    ) -> None:
        """Index one parsed file at `path`, replacing its rows (duplicates arbitrated)."""
        self._vacate(path)
        if parsed.proj is None:
            self._delete(path)
            writer.record_skip(self.conn, path, sha, parsed.reason or "unparseable")
            report.skipped.append({"path": path, "reason": parsed.reason or "unparseable"})
            return
        try:
            self.conn.execute("SAVEPOINT project_one")
            writer.upsert(self.conn, parsed.proj, now)
            self.conn.execute("RELEASE project_one")
        except sqlite3.IntegrityError as exc:
            self.conn.execute("ROLLBACK TO project_one")
            self.conn.execute("RELEASE project_one")
            holder_row = self.conn.execute(
                "SELECT path FROM files WHERE content_hash = ? AND archived = 0"
                " AND memory_type <> 'task' AND path <> ?",
                (parsed.proj.file["content_hash"], path),
            ).fetchone()
            if holder_row is not None and path < holder_row[0]:
                # Among active duplicates the smallest path is indexed, as in a rebuild.
                holder = str(holder_row[0])
                self._delete(holder)
                writer.record_skip(self.conn, holder, None, f"duplicate content of {path}")
                report.skipped.append({"path": holder, "reason": f"duplicate content of {path}"})
                self._store(path, sha, parsed, report, now)
                return
            reason = f"duplicate content of {holder_row[0]}" if holder_row else f"constraint: {exc}"
            self._delete(path)
            writer.record_skip(self.conn, path, sha, reason)
            report.skipped.append({"path": path, "reason": reason})
            return
        writer.clear_skip(self.conn, [path])
        report.projected += 1
        report.touched.append(path)

    def _store_fresh(
        self,
        fresh: Sequence[tuple[str, str | None, Parsed]],
        report: IndexReport,
        now: str,
    ) -> None:
        """Index paths the index holds no rows for, each table's rows in one bulk insert.

        A batch of new memories is what the write doors mostly commit, and what a
        sync mostly receives. Should one of them collide with an active memory's
        content (a constraint error), the batch is rolled back and each path
        takes the one-at-a-time route, which arbitrates duplicates exactly as a
        rebuild does.
        """
        projected: list[tuple[str, str | None, Parsed, Projection]] = []
        for path, sha, parsed in fresh:
            if parsed.proj is None:
                self._store(path, sha, parsed, report, now)
            else:
                projected.append((path, sha, parsed, parsed.proj))
        if not projected:
            return
        self.conn.execute("SAVEPOINT project_fresh")
        try:
            writer.bulk_insert(self.conn, [proj for *_, proj in projected], now)
        except sqlite3.IntegrityError:
            self.conn.execute("ROLLBACK TO project_fresh")
            self.conn.execute("RELEASE project_fresh")
            for path, sha, parsed, _ in projected:
                self._store(path, sha, parsed, report, now)
            return
        self.conn.execute("RELEASE project_fresh")
        paths = [path for path, *_ in projected]
        writer.clear_skip(self.conn, paths)
        report.projected += len(paths)
        report.touched.extend(paths)

    # -- rebuild -------------------------------------------------------------
    @traced("memhtml.index.rebuild")
    def rebuild(self) -> IndexReport:
        """Empty the plane and project every memory at HEAD plus the working tree's edits."""
        from memhtml.index import bulk  # a rebuild's machinery: a write never loads it

        started = time.perf_counter()
        report = IndexReport("rebuild", previous_head=self.watermark())
        head = self.git.head()
        report.head_sha = head
        # `git status` (which may re-hash the whole tree) runs while HEAD's blobs are
        # read and parsed; the working tree's edits replace their paths' results after.
        status = self.git.start_status(PREFIXES, read_only=False) if head else None
        with contextlib.ExitStack() as stack:
            if status is not None:
                stack.callback(bulk.reap, status)  # on any failure before it is read
            return self._rebuild(report, head, status, started)

    def _rebuild(
        self,
        report: IndexReport,
        head: str | None,
        status: subprocess.Popen[bytes] | None,
        started: float,
    ) -> IndexReport:
        from memhtml.index import bulk

        tree = sorted((e.path, e.sha) for e in self.git.ls_tree(head, PREFIXES)) if head else []
        now = self.clock()
        conn = self.conn
        seen_hashes: dict[str, str] = {}
        skips: list[tuple[str, str | None, str]] = []
        touched: list[str] = []

        def accept(results: list[writer.FileRows]) -> list[writer.FileRows]:
            """The files to insert, in path order; the rest become skips."""
            out: list[writer.FileRows] = []
            for rows in results:
                row = rows.file
                if row is None:
                    skips.append((rows.path, rows.sha, rows.reason or "unparseable"))
                    continue
                if row[writer.ARCHIVED_AT] == 0 and row[writer.TYPE_AT] != "task":
                    content_hash = str(row[writer.HASH_AT])
                    holder = seen_hashes.get(content_hash)
                    if holder is not None:
                        skips.append((rows.path, rows.sha, f"duplicate content of {holder}"))
                        continue
                    seen_hashes[content_hash] = rows.path
                out.append(rows)
                touched.append(rows.path)
            return out

        # Path order decides which of two active duplicates is indexed (the smaller
        # path); the workers read the blobs themselves, a chunk at a time.
        timings = {"start_ms": 0.0, "parse_ms": 0.0, "write_ms": 0.0, "fts_ms": 0.0}
        with ParsePool(len(tree), min_items=PARALLEL_MIN) as pool:
            jobs = self._submit_tree(pool, tree, now)
            dirty = dirty_of(self.git.finish_status(status)) if status is not None else set()
            overlay = self._read_worktree(dirty)
            edits: list[tuple[str, str | None, bytes]] = sorted(
                (p, blob_sha(d), d) for p, d in overlay.items() if d is not None
            )
            parse_edits = functools.partial(rows_chunk, now)
            if len(edits) < PARALLEL_MIN:  # the usual handful: parsed here, not queued last
                edited: list[bulk.ParseJob] = [functools.partial(parse_edits, edits)]
            else:
                edited = [
                    pool.submit(parse_edits, edits[i : i + CHUNK])
                    for i in range(0, len(edits), CHUNK)
                ]
            # While the workers parse: the parent's own git reading.
            retired = self._retired_from_history(head) if head else []
            # The rows go in while the workers parse: each chunk as it arrives, in
            # path order (the duplicate rule depends on it).
            t_write = time.perf_counter()
            timings["start_ms"] = (t_write - started) * 1000
            commit = functools.partial(self.commit_batch, len(tree) + len(edits))
            with bulk.loading(conn), write_transaction(conn, commit=commit):
                conn.execute("UPDATE index_state SET rebuilding = 1 WHERE id = 1")
                dropped = bulk.set_aside(conn)
                for table in ("chunks", *writer.CHILD_TABLES):
                    conn.execute(f"DELETE FROM {table}")
                conn.execute("DELETE FROM edges WHERE derived = 0")
                conn.execute("DELETE FROM files")
                conn.execute("DELETE FROM skipped_files")
                conn.execute("DELETE FROM worktree_overlay")
                conn.execute("INSERT INTO files_fts(files_fts) VALUES ('delete-all')")
                for results in bulk.in_path_order(jobs, edited, overlay.keys(), timings):
                    writer.insert_rows(conn, accept(results))
                pool.close()
                t_fts = time.perf_counter()
                bulk.restore(conn, dropped)
                timings["fts_ms"] = (time.perf_counter() - t_fts) * 1000
                for path, sha, reason in skips:
                    writer.record_skip(conn, path, sha, reason)
                self._record_overlay(overlay, dirty)
                conn.execute("DELETE FROM retired_paths")
                self._retire(retired)
                writer.drop_orphan_embeddings(conn)
                conn.execute(
                    "UPDATE index_state SET head_sha = ?, rebuilt_at = ?, updated_at = ?,"
                    " rebuilding = 0 WHERE id = 1",
                    (head, now, now),
                )
                t_commit = time.perf_counter()
            timings["commit_ms"] = (time.perf_counter() - t_commit) * 1000
            timings["write_ms"] = (
                (time.perf_counter() - t_write) * 1000
                - timings["fts_ms"]
                - timings["parse_ms"]
                - timings["commit_ms"]
            )
        report.projected = len(touched)
        report.touched = touched
        report.skipped = [{"path": p, "reason": r} for p, _, r in skips]
        report.elapsed_ms = (time.perf_counter() - started) * 1000
        report.extra["timings_ms"] = {k: round(v, 1) for k, v in timings.items()}
        return report

    def _submit_tree(
        self, pool: ParsePool, tree: Sequence[tuple[str, str]], now: str
    ) -> list[bulk.ParseJob]:
        """Hand `tree`'s (path, sha) to the pool a chunk at a time (each worker reads its
        chunk's blobs)."""
        # The full `indexable` check is the worker's (tree_rows_chunk), once per path;
        # here only what spares reading an attachment's blob.
        html = [(path, sha) for path, sha in tree if path.endswith(".html")]
        task = functools.partial(tree_rows_chunk, self.git, now)
        return [pool.submit(task, html[i : i + CHUNK]) for i in range(0, len(html), CHUNK)]

    # -- update --------------------------------------------------------------
    @traced("memhtml.index.update")
    def update(
        self, *, include_worktree: bool = True, dirty: set[str] | None = None
    ) -> IndexReport:
        """Catch up from the watermark; no watermark (or a half-done rebuild) is a rebuild.

        `dirty` is the working tree's dirty set when the caller knows it exactly
        (a watcher-scoped check, memhtml.index.scoped); otherwise `git status`.
        """
        watermark = self.watermark()
        head = self.git.head()
        if watermark is None or (watermark != head and self.git.resolve_commit(watermark) is None):
            return self.rebuild()
        started = time.perf_counter()
        report = IndexReport("update", head_sha=head, previous_head=watermark)
        now = self.clock()
        conn = self.conn
        diff = self.git.diff(watermark, head, PREFIXES) if head and head != watermark else []
        names = [f"{head}:{d.path}" for d in diff if d.status != "D" and indexable(d.path)]
        blobs = self._cat_by_name(names)
        retired = self._retired_from_history(head, watermark) if head and head != watermark else []
        previous_overlay = set(self.overlay())
        if not include_worktree:
            dirty = set()
        elif dirty is None:
            dirty = self.dirty_paths()
        current = self._read_worktree(previous_overlay | dirty) if include_worktree else {}
        # Everything this pass projects is parsed up front: in worker processes when
        # the change set is large (a sync that received a thousand memories).
        todo = [(d.path, *blobs[f"{head}:{d.path}"]) for d in diff if f"{head}:{d.path}" in blobs]
        todo += [(p, blob_sha(c), c) for p, c in current.items() if c is not None]
        parsed = {(path, sha): result for path, sha, result in project_many(todo)}
        with write_transaction(conn):
            fresh: list[tuple[str, str | None, Parsed]] = []
            # Removals first, so content that moved is never a duplicate of its old self.
            for d in sorted(diff, key=lambda d: d.status not in ("D", "R")):
                # Committed content replaces whatever the overlay read for these paths;
                # the working-tree pass (now or at the next read) re-reads them if dirty.
                conn.executemany(
                    "DELETE FROM worktree_overlay WHERE path = ?",
                    [(p,) for p in (d.path, d.old_path) if p is not None],
                )
                if d.status == "R" and d.old_path is not None:
                    if indexable(d.old_path) and indexable(d.path):
                        if self._move(d.old_path, d.path):
                            report.moved += 1
                    elif indexable(d.old_path):
                        self._delete(d.old_path)
                        report.deleted += 1
                    writer.clear_skip(conn, [d.old_path])
                if not indexable(d.path):
                    continue
                if d.status == "D":
                    self._delete(d.path)
                    report.deleted += 1
                    continue
                got = blobs.get(f"{head}:{d.path}")
                if got is None:
                    self._delete(d.path)
                    continue
                sha = got[0]
                if writer.previous_hash(conn, d.path) is None:
                    fresh.append((d.path, sha, parsed[(d.path, sha)]))  # no rows to replace
                else:
                    self._store(d.path, sha, parsed[(d.path, sha)], report, now)
            self._store_fresh(fresh, report, now)
            if include_worktree:
                for path, content in sorted(current.items(), key=lambda kv: kv[1] is not None):
                    if content is None:
                        if conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone():
                            report.deleted += 1
                        self._delete(path)
                    else:
                        sha = blob_sha(content)
                        self._store(path, sha, parsed[(path, sha)], report, now)
                self._record_overlay(current, dirty)
            self._retire(retired)
            self._retry_duplicates(report, now)
            writer.drop_orphan_embeddings(conn, self._take_left_hashes())
            conn.execute(
                "UPDATE index_state SET head_sha = ?, updated_at = ? WHERE id = 1", (head, now)
            )
        report.elapsed_ms = (time.perf_counter() - started) * 1000
        return report

    def _retry_duplicates(self, report: IndexReport, now: str) -> None:
        """Index files skipped as duplicates whose holder is gone (a rebuild would index them)."""
        rows = self.conn.execute(
            "SELECT s.path FROM skipped_files s WHERE s.reason LIKE 'duplicate content of %'"
            " AND NOT EXISTS (SELECT 1 FROM files f WHERE f.path = substr(s.reason, 22))"
            " ORDER BY s.path"
        ).fetchall()
        for (path,) in rows:
            data = self._read_worktree([path]).get(path)
            if data is None:
                writer.clear_skip(self.conn, [path])
            else:
                self._store_bytes(path, data, blob_sha(data), report, now)

    def _cat_by_name(self, names: Sequence[str]) -> dict[str, tuple[str, bytes]]:
        """`<commit>:<path>` names to (blob sha, bytes), one subprocess per batch."""
        out: dict[str, tuple[str, bytes]] = {}
        for start in range(0, len(names), CAT_BATCH):
            out.update(self.git.cat_objects(names[start : start + CAT_BATCH]))
        return out

    # -- the write doors' fast path -------------------------------------------
    def apply_commit(
        self,
        parent: str | None,
        new_head: str,
        changes: Sequence[tuple[str, bytes | None, str | None]],
        parsed: Mapping[bytes, MemoryDocument] | None = None,
    ) -> IndexReport:
        """Index exactly the paths a write door committed: (path, bytes or None, moved_from).

        When the index was not at `parent`, other commits landed meanwhile and a
        full update runs instead, which covers these paths too. (A write door
        runs the same steps beside its commit: memhtml.index.commit.)
        """
        from memhtml.index.commit import PendingIndex

        pending = PendingIndex.start(self, parent, changes, parsed, background=False)
        if pending is None:
            return self.update(include_worktree=False)
        return pending.finish(new_head)
