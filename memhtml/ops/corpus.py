"""The Corpus facade: one object per memory root that every entry point calls.

It owns the wiring (git, the repository lock, the index connection, the
embedder) and the write-door sequence: lock -> catch the index up -> refuse a
vector-space mismatch -> plan the whole batch against a tree view -> write the
files -> one commit -> index exactly the touched paths -> embed them.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import (
    InvalidMemoryError,
    InvalidOpError,
    MemhtmlError,
    ModelUnavailableError,
    RepoRequiredError,
)
from memhtml.contracts.logs import get_logger
from memhtml.ops.config import Clock, embedder_name, make_clock, resolve_root
from memhtml.store.git import Git
from memhtml.store.lock import RepoLock

# The op models (pydantic) load on the first write: a cold read or search never pays for them.
if TYPE_CHECKING:
    from memhtml.embed.ann import AnnGraph
    from memhtml.embed.base import Embedder
    from memhtml.embed.matrix import LoadedMatrix
    from memhtml.index.bm25 import Postings
    from memhtml.index.bm25 import WriteMark as PostingsMark
    from memhtml.index.indexer import Indexer, IndexReport
    from memhtml.index.members import ScopeMembers, WriteMark
    from memhtml.index.retrieval import SearchResult
    from memhtml.index.scoped import CheckScope, ScopedStatus
    from memhtml.ops.ann import GraphKeeper
    from memhtml.ops.batch import AnyOp
    from memhtml.ops.indexing import IndexFacade
    from memhtml.ops.outcome import BatchOutcome
    from memhtml.ops.tree import TreeView
    from memhtml.ops.write_checks import WriteChecks
    from memhtml.ops.writes import Planner
    from memhtml.store.files import FileChange
    from memhtml.store.watch import TreeWatcher

log = get_logger("memhtml")
# A watcher-scoped check looks at the paths it names plus the overlay's; past this
# many, the full `git status` is about as cheap.
SCOPE_MAX = 1024


def _op(raw: dict[str, Any]) -> AnyOp:
    """One op from keyword arguments; a refused field is ERR_INVALID_MEMORY, not a crash."""
    from memhtml.ops.batch import validate_op

    try:
        return validate_op(raw)
    except InvalidOpError as exc:
        raise InvalidMemoryError(
            exc.message, suggestions=exc.suggestions, details=exc.details
        ) from exc


class Corpus:
    """A memory root: its git tree, its index, its embedder."""

    def __init__(
        self,
        root: Path,
        *,
        embedder: str | None = None,
        now: str | None = None,
        require_repo: bool = True,
    ) -> None:
        self.root = root
        self.embedder_name = embedder_name(embedder)
        self.clock: Clock = make_clock(now)
        self.git = Git(root)
        self.lock = RepoLock(root / ".git" / "memhtml.lock")
        if require_repo:
            self.require_repo()
        self._conn: sqlite3.Connection | None = None
        self._embedder_error: MemhtmlError | None = None
        self._width_known = False
        self._matrix: tuple[str, LoadedMatrix | None] | None = None
        self._vectors_root = root  # where .memhtml/vectors/ lives (a sleep run's: its folder)
        self._norms: tuple[tuple[int, int], Any] | None = None
        self._watcher: TreeWatcher | None = None
        # With a watcher: (HEAD, repo stamp) of the last exact check, None when the
        # watcher was drained since without an exact check (see _take_scope).
        self._exact_at: tuple[str | None, Any] | None = None
        self._checks = {"skipped": 0, "scoped": 0, "full": 0}  # freshness checks by kind
        # Paths this process's own commit wrote since the last drain (see own_commit_landed).
        self._own_paths: set[str] = set()
        self._ranked_reads = 0  # begin_catch_up calls: a second one starts the watcher
        self._postings: Postings | None = None
        self._members: ScopeMembers | None = None

    # -- wiring ----------------------------------------------------------------
    def require_repo(self) -> None:
        """Raise RepoRequiredError unless the root is a memory root `init` made.

        Any git repository is not a memory root: pointed at a code repository
        by mistake, a write would commit `areas/inbox/...` into it and leave the
        index files untracked and unignored. A root is initialised when it holds
        the side folders `init` creates (ours or the original memhtml's), or a
        `.gitignore` that names the index.
        """
        if not (self.root / ".git").exists():
            raise RepoRequiredError(
                f"no memhtml repository at {self.root}",
                suggestions=[f"memhtml init --repo {self.root}", "set MEMHTML_ROOT"],
            )
        if not is_initialised(self.root):
            raise RepoRequiredError(
                f"{self.root} is a git repository but not a memory root (never initialised)",
                suggestions=[
                    f"memhtml init --repo {self.root}",
                    "point --repo or MEMHTML_ROOT at your memory root",
                ],
            )

    @property
    def conn(self) -> sqlite3.Connection:
        """The index connection (state attached), opened and migrated on first use."""
        if self._conn is None:
            from memhtml.index.planes import connect

            state_dir = self.root / ".memhtml"
            self._conn = connect(state_dir / "index.db", state_dir / "state.db")
        return self._conn

    @property
    def fts_postings(self) -> Postings:
        """The fts arm's BM25 from memory (memhtml.index.bm25), for a process's repeat searches."""
        if self._postings is None:
            from memhtml.index.bm25 import Postings

            self._postings = Postings()
        return self._postings

    @property
    def scope_members(self) -> ScopeMembers:
        """The default scope's members in memory (memhtml.index.members), for repeat searches."""
        if self._members is None:
            from memhtml.index.members import ScopeMembers

            self._members = ScopeMembers()
        return self._members

    @cached_property
    def indexer(self) -> Indexer:
        """The indexer over this root."""
        from memhtml.index.indexer import Indexer

        return Indexer(self.conn, self.git, self.root, self.clock)

    @cached_property
    def index(self) -> IndexFacade:
        """rebuild(), update(), embed(), status()."""
        from memhtml.ops.indexing import IndexFacade

        return IndexFacade(self)

    @cached_property
    def _embedder(self) -> Embedder | None:
        if self.embedder_name == "off":  # the registry's answer, without loading the registry
            return None
        from memhtml.embed.registry import get_embedder

        try:
            return get_embedder(self.embedder_name)
        except ModelUnavailableError as exc:
            self._embedder_error = exc
            log.warning("embedder unavailable: %s", exc.message)
            return None

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, or None when off or unavailable (see embedder_error).

        An endpoint's width may be asked of it on first use: while it cannot be
        (the endpoint is down), the embedder counts as unavailable, and a later
        access asks again (the embedder spaces its own attempts)."""
        embedder = self._embedder
        if embedder is None or self._width_known:
            return embedder
        try:
            _ = embedder.dim
        except ModelUnavailableError as exc:
            self._embedder_error = exc
            log.warning("embedder unavailable: %s", exc.message)
            return None
        self._width_known, self._embedder_error = True, None
        return embedder

    @property
    def embedder_error(self) -> MemhtmlError | None:
        """Why the configured embedder is not available, if it is not."""
        _ = self.embedder
        return self._embedder_error

    def vector_matrix(self) -> LoadedMatrix | None:
        """The memory-mapped vector matrix, synced to the embeddings table, cached per process."""
        from memhtml.index.embedding import stored_space, sync_matrix

        _, _, epoch = stored_space(self.conn)
        if epoch is None:
            return None
        max_seq = self.conn.execute("SELECT coalesce(max(seq), 0) FROM embeddings").fetchone()[0]
        if self._matrix is not None and self._matrix[0] == epoch:
            cached = self._matrix[1]
            if cached is not None and cached.max_seq >= max_seq:
                return cached
        loaded = sync_matrix(self.conn, self.root, epoch)
        self._matrix = (epoch, loaded)
        return loaded

    @property
    def vectors_root(self) -> Path:
        """The folder whose `.memhtml/vectors/` holds the matrix and its graph."""
        return self._vectors_root

    @cached_property
    def ann(self) -> GraphKeeper:
        """The vector arm's graph (memhtml.ops.ann): mapped, built and folded when due."""
        from memhtml.ops.ann import GraphKeeper

        return GraphKeeper(self)

    def ann_graph(self, matrix: LoadedMatrix) -> AnnGraph | None:
        """A graph over a prefix of `matrix` (built or extended first when due), or None."""
        return self.ann.graph(matrix)

    def vector_norms(self, matrix: LoadedMatrix) -> Any:
        """Row norms of the loaded matrix, computed once per matrix generation."""
        from memhtml.domain.vectors import row_norms

        key = (id(matrix), matrix.rows)
        if self._norms is None or self._norms[0] != key:
            self._norms = (key, row_norms(matrix.vectors[: matrix.rows]))
        return self._norms[1]

    def watch_tree(self) -> bool:
        """For a long-lived process: skip a read's `git status` while the kernel reports no
        change under the memory folders (memhtml.store.watch), and check only the paths it
        names when it names a few (memhtml.index.scoped). True when watching works."""
        from memhtml.contracts.vocab import PARA_BUCKETS
        from memhtml.store.watch import TreeWatcher

        if self._watcher is None:
            self._watcher = TreeWatcher(self.root, PARA_BUCKETS)
            self._exact_at = None
        return self._watcher.active

    @property
    def watching(self) -> bool:
        """True once the kernel watches the tree for this process (`watch_tree`)."""
        return self._watcher is not None

    def _take_scope(self, head: str | None, at_head: bool) -> CheckScope:
        """Drain the watcher before an exact check: the paths that check must look at.

        A finite set only when the watcher names one and nothing it cannot see
        moved since the last exact check: HEAD is the watermark and the HEAD that
        check saw, and the git index (staging, read-tree), config and excludes are
        as they were (`repo_stamp`). Otherwise `paths` is None: the whole tree.
        """
        from memhtml.index.indexer import indexable
        from memhtml.index.scoped import CheckScope, repo_stamp

        stamp = repo_stamp(self.root) if self._watcher is not None else ()
        if self._watcher is None:
            return CheckScope(head, stamp, None)
        changes = self._watcher.changes()
        last, self._exact_at = self._exact_at, None  # back only when this check is exact
        own, self._own_paths = self._own_paths, set()
        if changes.unknown or not at_head or last != (head, stamp):
            return CheckScope(head, stamp, None)
        paths = changes.paths | own
        return CheckScope(head, stamp, frozenset(p for p in paths if indexable(p)))

    def _scoped_dirty(self, scope: CheckScope) -> set[str] | None:
        """The dirty set over the scope's paths and the overlay's (None: ask `git status`)."""
        if scope.paths is None or scope.head is None:
            return None
        overlay = self.indexer.overlay().keys()
        paths = scope.paths | overlay
        if len(paths) > SCOPE_MAX:
            return None
        return self._scoped_status.dirty(scope.head, scope.stamp, paths, overlay)

    @cached_property
    def _scoped_status(self) -> ScopedStatus:
        from memhtml.index.scoped import ScopedStatus

        return ScopedStatus(self.git, self.root)

    @property
    def freshness_checks(self) -> dict[str, int]:
        """How this process checked the tree: skipped (the watcher vouched), scoped (only the
        paths it named), full (`git status`)."""
        return dict(self._checks)

    def _count(self, scope: CheckScope, dirty: set[str] | None) -> None:
        kind = "full" if dirty is None else "scoped" if scope.paths else "skipped"
        self._checks[kind] += 1

    def _verified(self, key: tuple[str | None, Any], exact: bool) -> bool:
        """Record an exact check (HEAD and repo stamp it ran against) for the watcher's sake."""
        if exact and self._watcher is not None:
            self._exact_at = key
        return exact

    def close(self) -> None:
        """Close the index connection and let go of every file of the store it holds."""
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        self._drop_text_caches()
        # The mapped vector files and the graph's map go with the corpus: a closed corpus
        # holds no file of the store open (its folder can be moved, deleted or unmounted).
        self._matrix = None
        self._norms = None
        self.__dict__.pop("ann", None)
        if "indexer" in self.__dict__:  # a checkpoint still running ends before its connection
            self.indexer.settle()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- index sync --------------------------------------------------------------
    def sync(
        self, *, embed: bool = True, worktree: bool = False, dirty: set[str] | None = None
    ) -> IndexReport | None:
        """Catch the index up with HEAD (and, with `worktree`, the working tree's edits).

        `dirty`: the working tree's dirty set when a scoped check knows it (else
        `git status`). The paths it reprojects are embedded right away (when the
        embedder is available and matches the index), so a hand commit never
        leaves chunks without vectors that a rebuild would have.
        """
        watermark = self.indexer.watermark()
        if not worktree and watermark is not None and watermark == self.git.head_fast():
            return None
        report = self.indexer.update(include_worktree=worktree, dirty=dirty)
        embedder = self.embedder if embed else None
        if report.touched and embedder is not None:
            from memhtml.index.embedding import embed_missing, space_matches

            if space_matches(self.conn, embedder):
                paths = None if report.mode == "rebuild" else report.touched
                embed_missing(self.conn, embedder, self.root, paths=paths, clock=self.clock())
        return report

    def catch_up(self) -> bool:
        """Before a read: make the index equal HEAD plus the working tree as it is now.

        A read's answer must not depend on whether someone ran `index update`:
        commits that landed behind the index's back and uncommitted hand edits
        (including edits since reverted, files made unparseable and repaired,
        deletions restored) are both followed. The check is one `git status`
        that takes no git lock (with a watcher: nothing while nothing changed,
        or only the paths it names); only when something drifted does the read
        take the repository lock, briefly, and reproject what changed. When a
        writer holds the lock, that writer is about to index anyway, and the
        read proceeds on what is there. Returns True when the index is exact.
        """
        from memhtml.index.db import watermark

        head = self.git.head_fast()
        at_head = head is not None and watermark(self.conn) == head
        return self._check(self._take_scope(head, at_head), at_head)

    def _check(self, scope: CheckScope, at_head: bool) -> bool:
        """`catch_up` after the drain: check what the scope says, reproject what drifted."""
        from memhtml.contracts.errors import WriteConflictError

        if scope.paths is not None and not scope.paths:
            self._checks["skipped"] += 1
            return self._verified(scope.key, True)  # the watcher vouches: nothing changed
        dirty = self._scoped_dirty(scope) if at_head else None
        self._count(scope, dirty)
        if at_head and not self.indexer.worktree_drift(dirty):
            return self._verified(scope.key, True)
        try:
            with self.lock.hold(timeout=0.5):
                key, _ = self._sync_worktree(scope, dirty)
        except WriteConflictError:
            return False
        return self._verified(key, True)

    def _sync_worktree(
        self, scope: CheckScope, dirty: set[str] | None, *, embed: bool = True
    ) -> tuple[tuple[str | None, Any], IndexReport]:
        """Under the lock: `sync(worktree=True)`, with the scoped dirty set while HEAD and
        the git index are still what the scope saw. The exact check's (HEAD, stamp), and
        what the update did."""
        from memhtml.index.scoped import repo_stamp

        stamp = repo_stamp(self.root) if self._watcher is not None else ()
        if dirty is not None and (self.git.head_fast(), stamp) == scope.key:
            report = self.sync(embed=embed, worktree=True, dirty=dirty)
            key = scope.key
        else:
            # A watching process asks git read-only: a status that refreshed .git/index
            # would change the stamp and cost the next check its scope.
            full = self.indexer.dirty_paths(read_only=True) if self._watcher is not None else None
            report = self.sync(embed=embed, worktree=True, dirty=full)
            key = (report.head_sha if report is not None else None, stamp)
        assert report is not None  # a worktree sync always runs an update
        return key, report

    def update_index(self) -> IndexReport:
        """`index update` under the caller's lock (no embedding): catch up from the
        watermark, then the working tree. In a watching process only the paths the
        watcher names (and the overlay's) are checked; a cold process runs the full
        `git status`."""
        from memhtml.index.db import watermark

        head = self.git.head_fast()
        at_head = head is not None and watermark(self.conn) == head
        scope = self._take_scope(head, at_head)
        dirty = self._scoped_dirty(scope) if at_head else None
        self._count(scope, dirty)
        key, report = self._sync_worktree(scope, dirty, embed=False)
        self._verified(key, True)
        return report

    def begin_catch_up(self) -> Any:
        """Start a read's freshness check without waiting for it (see `end_catch_up`).

        Commits behind the index are caught up now (rare: a hand commit); the
        working-tree check (`git status`) starts in the background, so a read
        ranks its query while git stats the tree on the other core. A process
        that ranks a second query is a long-lived reader (a library loop, a
        server): from then on the kernel watches the tree (`watch_tree`), so
        the check is skipped while nothing changed, and covers only the paths
        the kernel names when it names a few. A one-shot CLI never pays for
        the watcher.
        """
        from memhtml.index.db import watermark
        from memhtml.index.indexer import PREFIXES

        self._ranked_reads += 1
        if self._ranked_reads == 2 and self._watcher is None:
            self.watch_tree()  # before this read's exact check, so no change slips between
        head = self.git.head_fast()
        if head is None or watermark(self.conn) != head:
            return self.catch_up()
        scope = self._take_scope(head, True)
        if scope.paths is not None:
            return self._check(scope, True)  # a few paths: checked in a few ms, here
        return (scope, self.git.start_status(PREFIXES, read_only=True))

    def end_catch_up(self, probe: Any) -> bool | None:
        """Finish a `begin_catch_up`: True or False as `catch_up` answers, or None when the
        tree had drifted and the index was just caught up (the read must run again)."""
        if isinstance(probe, bool):
            return probe
        from memhtml.index.indexer import dirty_of

        scope, proc = probe
        self._checks["full"] += 1
        entries = self.git.finish_status(proc)
        if self.git.head_fast() == scope.head and not self.indexer.worktree_drift(
            dirty_of(entries)
        ):
            return self._verified(scope.key, True)
        return None if self.catch_up() else False

    # -- this process's own writes: its caches follow them ------------------------------
    def own_write_begin(self, parent: str | None, paths: set[str]) -> OwnWrite:
        """Before a write door's commit of `paths` on `parent` (under the lock, before the
        index transaction): what its caches need to follow the write instead of reloading.

        `exact`: the last exact freshness check ran against `parent` and the git state
        as it still is, and the watcher was not drained since, so after our own commit
        the watcher's events plus our paths are the whole difference (`own_commit_landed`).
        """
        from memhtml.index.scoped import repo_stamp

        try:
            exact = None
            if self._watcher is not None and self._exact_at is not None and parent is not None:
                key = (parent, repo_stamp(self.root))
                exact = key if self._exact_at == key else None
            members = self._members.before_write(self.conn, paths) if self._members else None
            postings = self._postings.before_write(self.conn, paths) if self._postings else None
        except Exception as exc:  # the caches then reload as they always could
            log.warning("preparing the caches for a write failed: %s", exc)
            return OwnWrite(None, None, None)
        return OwnWrite(exact, members, postings)

    def own_commit_landed(self, mark: OwnWrite, sha: str, touched: Sequence[str]) -> None:
        """Our commit `sha` (parent: the HEAD the last exact check saw) landed, changing git's
        index only at `touched`: the next check looks at the watcher's paths and ours."""
        from memhtml.index.scoped import repo_stamp

        if mark.exact is None or self._watcher is None or self._exact_at != mark.exact:
            return
        try:
            stamp = repo_stamp(self.root)
            if self.git.head_fast() != sha:  # someone else's commit too: the next check is full
                return
        except Exception as exc:  # the commit landed: the next check is simply full
            log.warning("carrying the freshness check over to %s failed: %s", sha, exc)
            return
        self._own_paths |= set(touched)
        self._exact_at = (sha, stamp)

    def own_commit_starts(self, mark: OwnWrite) -> OwnWrite:
        """Right before the commit: the git state must still be what the last exact check saw
        (a hand `git add` while the files were written makes the next check full)."""
        from memhtml.index.scoped import repo_stamp

        if mark.exact is None:
            return mark
        try:
            same = (mark.exact[0], repo_stamp(self.root)) == mark.exact
        except Exception:
            same = False
        return mark if same else OwnWrite(None, mark.members, mark.postings)

    def own_write_done(self, mark: OwnWrite) -> None:
        """The write's index transaction committed: patch the default scope's members and
        the BM25 row sizes from the written paths' rows (each refuses when anything else
        changed the index meanwhile, and then reloads as after anyone's write)."""
        try:
            if self._members is not None:
                self._members.after_write(self.conn, mark.members)
            if self._postings is not None:
                self._postings.after_write(self.conn, mark.postings)
        except Exception as exc:  # the write stands; the caches reload instead
            log.warning("patching the search caches after a write failed: %s", exc)
            self._drop_text_caches()

    def _drop_text_caches(self) -> None:
        """Forget the default scope's members and the BM25 postings (reloaded on next use)."""
        self._members = None
        if self._postings is not None:
            self._postings.close()
            self._postings = None

    # -- the write doors (memhtml.ops.write_door) ---------------------------------
    def run_ops(
        self,
        ops: Sequence[AnyOp],
        *,
        continue_on_error: bool = False,
        embed: bool = True,
        checks: WriteChecks | None = None,
    ) -> BatchOutcome:
        """Plan every op, then commit the batch once (atomically unless continue_on_error).

        `checks` adds the write-time checks (memhtml.ops.write_checks): frame
        conflicts, last-wins consolidation, likely restatements.
        """
        from memhtml.ops.write_door import run_ops

        return run_ops(self, ops, continue_on_error=continue_on_error, embed=embed, checks=checks)

    def _planner(self, view: TreeView, now: str) -> Planner:
        """A Planner over `view` wired to this root's index and tree (caller holds the lock)."""
        from memhtml.ops.write_door import make_planner

        return make_planner(self, view, now)

    def plan_commit(
        self,
        plan: Callable[[Planner], dict[str, Any]],
        message: Callable[[dict[str, Any]], str],
        *,
        embed: bool = True,
    ) -> dict[str, Any]:
        """The write-door sequence for one custom plan (the task commands).

        Under the lock: settle leftovers, catch the index up, refuse a vector
        space mismatch, let `plan` plan against a fresh tree view, then commit
        what it planned as one commit (nothing when it planned no change). The
        plan's payload comes back with `commit_sha`, `index` and `vectors`.
        """
        from memhtml.ops.write_door import plan_commit

        return plan_commit(self, plan, message, embed=embed)

    def commit_changes(
        self,
        changes: Sequence[FileChange],
        message: str,
        *,
        docs: Mapping[bytes, Any] | None = None,
        embedder: Embedder | None = None,
        now: str | None = None,
    ) -> tuple[str, IndexReport, dict[str, Any]]:
        """Write a change set, commit it as one commit, index and embed exactly those paths
        (the caller holds the repository lock; see memhtml.ops.write_door.commit_changes)."""
        from memhtml.ops.write_door import commit_changes

        return commit_changes(self, changes, message, docs=docs, embedder=embedder, now=now)

    def recover(self) -> dict[str, Any]:
        """Settle what a killed command left (under the repository lock): an interrupted
        batch's files, its temp files, a stale git index lock."""
        from memhtml.ops.write_door import recover

        return recover(self)

    def forget_vectors(self) -> None:
        """Drop the cached matrix (after the vector space was reset)."""
        self._matrix = None
        self._norms = None
        if "ann" in self.__dict__:
            self.ann.forget()

    def vectors_off(self) -> dict[str, Any]:
        """The vectors report of a pass that could not embed (embedder off or unavailable)."""
        error = self.embedder_error
        return {
            "embedded": 0,
            "pending": self.conn.execute("SELECT count(*) FROM pending_vectors").fetchone()[0],
            "model": None,
            "error": f"{error.code}: {error.message}"
            if error
            else "embedder off (MEMHTML_EMBED=off)",
        }

    def _single(self, op: AnyOp) -> dict[str, Any]:
        outcome = self.run_ops([op])
        if outcome.failure is not None:
            raise outcome.failure
        result = {
            k: v
            for k, v in outcome.results[0].items()
            if k not in ("index", "op", "ok", "skipped", "changed")
        }
        result["commit_sha"] = outcome.commit_sha
        result["vectors"] = outcome.vectors
        if outcome.index.get("warnings"):  # the commit landed; what did not follow it
            result["warnings"] = outcome.index["warnings"]
        return result

    def write(
        self,
        title: str,
        claim: str | None = None,
        type: str = "semantic",
        body: str | Sequence[str] | None = None,
        **metas: Any,
    ) -> dict[str, Any]:
        """Write one memory (one commit); a duplicate returns `deduped: True` and the holder."""
        fields: dict[str, Any] = {"title": title, "type": type, "claim": claim, **metas}
        if body is not None:
            fields["body"] = [body] if isinstance(body, str) else list(body)
        return self._single(_op({"op": "write", **fields}))

    def correct(self, path: str, **fields: Any) -> dict[str, Any]:
        """Replace a memory and archive the original, linked both ways, in one commit."""
        if isinstance(fields.get("body"), str):
            fields["body"] = [fields["body"]]
        return self._single(_op({"op": "correct", "target_path": path, **fields}))

    def archive(self, path: str, reason: str | None = None) -> dict[str, Any]:
        """Move a memory into archive/<YYYY>/<path> (git mv, never a delete)."""
        from memhtml.contracts.ops import ArchiveOp

        return self._single(ArchiveOp(op="archive", path=path, reason=reason))

    def link(self, src: str, rel: str, dst: str) -> dict[str, Any]:
        """Add an authored link SRC -rel-> DST (idempotent)."""
        from memhtml.contracts.ops import LinkOp

        return self._single(LinkOp(op="link", src=src, rel=rel, dst=dst))

    def apply(
        self,
        ops: Iterable[Mapping[str, Any] | AnyOp],
        *,
        continue_on_error: bool = False,
        checks: WriteChecks | None = None,
    ) -> BatchOutcome:
        """Apply many ops as one commit (`checks`: the write-time checks, see run_ops).

        Raises InvalidOpError (or InvalidPathError for a bad memory path) naming
        the first op refused up front; nothing runs then.
        """
        from memhtml.ops.batch import validate_ops

        return self.run_ops(validate_ops(ops), continue_on_error=continue_on_error, checks=checks)

    # -- tasks (memhtml.ops.tasks) ---------------------------------------------------
    def task_add(self, title: str, **fields: Any) -> dict[str, Any]:
        """Write one task (never deduped), with its blocks/subtask_of links, as one commit."""
        from memhtml.ops.tasks import task_add

        return task_add(self, title, **fields)

    def task_status(self, path: str, status: str) -> dict[str, Any]:
        """Set a task's status (a head-only edit, one commit; the same status commits nothing)."""
        from memhtml.ops.tasks import task_status

        return task_status(self, path, status)

    def task_list(self, **filters: Any) -> dict[str, Any]:
        """Open tasks (or by status), due date first, each with the open tasks blocking it."""
        from memhtml.ops.tasks import task_list

        return task_list(self, **filters)

    # -- reads and queries live in their own modules -------------------------------
    def read(
        self, path: str, *, bump: bool = True, session_id: str | None = None
    ) -> dict[str, Any]:
        """One memory in full; counts as an access (salience) unless bump=False.

        With `session_id`, the read is linked to that agent session in the state
        plane (`trace links`); `session_linked` says whether the link is new.
        """
        from memhtml.ops.reads import read_memory

        data = read_memory(self, path, bump=bump)
        if session_id:
            from memhtml.ops.traces import record_read

            data["session_linked"] = record_read(self, path, session_id)
        return data

    def publish(self, out: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Regenerate the static site (listings, sitemap, stylesheet): one commit, none when
        nothing changed; with `out`, write it and the memories into that directory instead."""
        from memhtml.ops.publish import publish

        return publish(self, out=out)

    def health(self) -> dict[str, Any]:
        """`doctor`: unparseable files, dangling links, orphan usage rows, leftovers, freshness."""
        from memhtml.ops.health import corpus_health

        return corpus_health(self)

    def fix(self) -> dict[str, Any]:
        """`doctor --fix`: repair dangling links, moved usage rows and killed leftovers."""
        from memhtml.ops.repair import fix_corpus

        return fix_corpus(self)

    def resolve(self, path: str) -> dict[str, Any]:
        """What a path became: archive moves and supersedes links, followed to the live memory."""
        from memhtml.ops.reads import resolve

        return resolve(self, path)

    def list(self, **filters: Any) -> dict[str, Any]:
        """A page of memories by type, workspace, tag, entity or bucket."""
        from memhtml.ops.reads import list_memories

        return list_memories(self, **filters)

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        weights: Mapping[str, float] | None = None,
        k: int | None = None,
        mmr_lambda: float | None = None,
        explain: bool = False,
        near_duplicates: bool | None = None,
        exact: bool = False,
        **filters: Any,
    ) -> SearchResult:
        """Four arms fused by RRF in one statement, near-duplicate arbitration, then MMR.

        Never bumps salience. `exact` scans every vector even where the graph would
        answer (memhtml.ops.ann): the oracle approximate search is measured against.
        """
        from memhtml.ops.query import search

        return search(
            self,
            query,
            limit=limit,
            weights=weights,
            k=k,
            mmr_lambda=mmr_lambda,
            explain=explain,
            near_duplicates=near_duplicates,
            exact=exact,
            **filters,
        )

    def capture_arms(self, query: str, **options: Any) -> dict[str, Any]:
        """Each arm's ranked list and the fused order, for offline replay (memhtml.analysis)."""
        from memhtml.ops.query import capture_arms

        return capture_arms(self, query, **options)

    def recall(self, query: str, budget: int = 16000, **filters: Any) -> dict[str, Any]:
        """A disclosure pack under a character budget."""
        from memhtml.ops.query import recall

        return recall(self, query, budget=budget, **filters)

    def reinforce(self, paths: Sequence[str], signal: str = "neutral") -> dict[str, Any]:
        """The explicit outcome channel: move salience for paths a caller used."""
        from memhtml.contracts.paths import memory_path
        from memhtml.index.access import bump
        from memhtml.ops.reads import existing_paths

        for p in paths:
            memory_path(p)  # a malformed path is an error, not merely "missing"
        known = existing_paths(self, paths)
        bumped, cooled = bump(self.conn, known, signal, self.clock())
        missing = [p for p in paths if p not in known]
        return {"bumped": bumped, "cooled_down": cooled, "missing": missing, "signal": signal}


@dataclass(frozen=True)
class OwnWrite:
    """What `Corpus.own_write_begin` saw: the exact check's key (None: none to carry over),
    the members' mark and the BM25 row sizes' (memhtml.index.members, memhtml.index.bm25)."""

    exact: tuple[str, Any] | None
    members: WriteMark | None
    postings: PostingsMark | None


def is_initialised(root: Path) -> bool:
    """True when `root` carries what `memhtml init` lays down (either implementation's)."""
    side = root / ".memhtml"
    if (side / "state").is_dir() or (side / "sleep").is_dir():
        return True
    try:
        ignore = (root / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return ".memhtml/index.db" in ignore


def open_corpus(
    root: str | os.PathLike[str] | None = None,
    *,
    embedder: str | None = None,
    now: str | None = None,
    require_repo: bool = True,
) -> Corpus:
    """The composition root: resolve the root and configuration, build a Corpus."""
    return Corpus(resolve_root(root), embedder=embedder, now=now, require_repo=require_repo)
