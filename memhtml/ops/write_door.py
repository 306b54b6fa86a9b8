"""The write-door sequence behind every `Corpus` write: lock -> settle -> catch up -> plan ->
write the files -> one commit -> index exactly the touched paths -> embed them.

`Corpus` keeps the public methods (run_ops, plan_commit, commit_changes,
recover); they call these functions. The steps and their guarantees are in
docs/design.md, section 4 (the store).

Where the time of a large batch goes, and what overlaps what:

* planning: the write renders run ahead on forked workers
  (`rendering_ahead`) while this process plans each op in turn;
* committing: the index transaction (rows projected and inserted, on a
  helper thread: memhtml.index.commit) runs beside the blob pack
  (`git fast-import`), the file writes and the git commit; only the HEAD
  stamp and the SQLite COMMIT wait for the commit to land.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from memhtml.contracts.errors import MemhtmlError
from memhtml.contracts.logs import get_logger
from memhtml.ops.outcome import BatchOutcome, commit_message
from memhtml.telemetry import traced

log = get_logger("memhtml.store")

if TYPE_CHECKING:
    from memhtml.embed.base import Embedder
    from memhtml.index.indexer import IndexReport
    from memhtml.ops.batch import AnyOp
    from memhtml.ops.corpus import Corpus
    from memhtml.ops.tree import TreeView
    from memhtml.ops.write_checks import BatchChecks, WriteChecks
    from memhtml.ops.writes import Planner
    from memhtml.store.files import FileChange


@traced("memhtml.store.write")
def run_ops(
    corpus: Corpus,
    ops: Sequence[AnyOp],
    *,
    continue_on_error: bool = False,
    embed: bool = True,
    checks: WriteChecks | None = None,
) -> BatchOutcome:
    """Plan every op, then commit the batch once (atomically unless continue_on_error)."""
    with write_door(corpus, embed) as door:
        planner = door.planner
        batch = None
        if checks is not None and checks.active:
            from memhtml.ops.write_checks import BatchChecks

            batch = BatchChecks(corpus, checks, ops)
        with rendering_ahead(planner, ops):
            results, failure = _plan_all(planner, ops, batch, continue_on_error)
        if batch is not None:
            batch.settle_losers(results)
        if failure is not None and not continue_on_error:
            # Nothing lands: planned paths would mislead, so skipped ops carry none
            # (a conflict found stays: it is about the claim, not the plan).
            results = [
                r
                if not r["ok"]
                else {
                    "index": r["index"],
                    "op": r["op"],
                    "ok": False,
                    "skipped": True,
                    **{k: r[k] for k in ("conflict", "conflicts") if k in r},
                }
                for r in results
            ]
            report_checks = None if batch is None else batch.report(results, None)
            return BatchOutcome(results, None, aborted=True, failure=failure, checks=report_checks)
        changes = planner.view.changes()
        if not changes:
            return BatchOutcome(
                results, None, checks=None if batch is None else batch.report(results, None)
            )
        effective = (
            ops if batch is None else [batch.replacement.get(i, o) for i, o in enumerate(ops)]
        )
        message = commit_message(effective, results)
        sha, report, vectors = commit_changes(
            corpus,
            changes,
            message,
            docs=planner.docs,
            embedder=door.embedder,
            now=door.now,
        )
        near = None
        if batch is not None and batch.checks.detect_near_duplicates:
            near = batch.near_duplicates(results)
        return BatchOutcome(
            results,
            sha,
            index=report.to_data(),
            vectors=vectors,
            checks=None if batch is None else batch.report(results, near),
        )


def _plan_all(
    planner: Planner,
    ops: Sequence[AnyOp],
    batch: BatchChecks | None,
    continue_on_error: bool,
) -> tuple[list[dict[str, Any]], MemhtmlError | None]:
    """Each op's result in order, and the first failure (later ops are skipped after it
    unless continue_on_error)."""
    results: list[dict[str, Any]] = []
    failure: MemhtmlError | None = None
    for i, op in enumerate(ops):
        if failure is not None and not continue_on_error:
            results.append({"index": i, "op": op.op, "ok": False, "skipped": True})
            continue
        if batch is not None and i in batch.losers:
            results.append(batch.loser_result(i))
            continue
        try:
            payload = (
                plan_op(planner, op)
                if batch is None
                else batch.plan(planner, op, i, lambda o: plan_op(planner, o))
            )
        except MemhtmlError as exc:
            results.append(
                {
                    "index": i,
                    "op": op.op,
                    "ok": False,
                    "skipped": False,
                    "code": exc.code,
                    "error": exc.message,
                    **({"details": exc.details} if exc.details else {}),
                }
            )
            failure = failure or exc
            continue
        changed = bool(payload.get("created", True)) and not payload.get("deduped")
        results.append(
            {"index": i, "op": op.op, "ok": True, "skipped": False, "changed": changed, **payload}
        )
    return results, failure


def plan_op(planner: Planner, op: AnyOp) -> dict[str, Any]:
    """Plan one op of any kind against the planner's view; its result payload."""
    from memhtml.contracts.ops import ArchiveOp, CorrectOp, WriteOp

    if isinstance(op, WriteOp):
        return dict(planner.write(op))
    if isinstance(op, CorrectOp):
        return dict(planner.correct(op))
    if isinstance(op, ArchiveOp):
        return dict(planner.archive(op))
    return dict(planner.link(op))


@contextmanager
def rendering_ahead(planner: Planner, ops: Sequence[AnyOp]) -> Iterator[None]:
    """While a large batch plans, its write renders run ahead on worker processes
    (Planner.render_ahead); a small batch renders as it plans."""
    from memhtml.contracts.ops import WriteOp
    from memhtml.ops.writes import RENDER_AHEAD_MIN

    writes = sum(isinstance(op, WriteOp) for op in ops)
    if writes < RENDER_AHEAD_MIN:
        yield
        return
    from memhtml.index.parallel import ParsePool

    with ParsePool(writes, min_items=RENDER_AHEAD_MIN) as pool:
        planner.render_ahead(ops, pool)
        yield


class Door(NamedTuple):
    """An open write door: the embedder (None: off or unavailable), the instant, the
    Planner."""

    embedder: Embedder | None
    now: str
    planner: Planner


@contextmanager
def write_door(corpus: Corpus, embed: bool) -> Iterator[Door]:
    """Every write door's preamble, under the repository lock held for the whole door.

    Settle what a killed writer left, catch the index up with HEAD, refuse a
    vector-space mismatch before anything is written, then plan against a
    fresh tree view.
    """
    from memhtml.ops.sync import refuse_unresolved
    from memhtml.ops.tree import TreeView

    embedder = corpus.embedder if embed else None
    with corpus.lock.hold(), answering_disk_full(corpus):
        recover(corpus)
        refuse_unresolved(corpus.root)  # no write mixes into a merge a person must resolve
        corpus.sync()
        if embedder is not None:  # no vectors, no space to mix (and no module to load)
            from memhtml.index.embedding import check_space

            check_space(corpus.conn, embedder)
        now = corpus.clock()
        yield Door(embedder, now, make_planner(corpus, TreeView(corpus.root), now))


def make_planner(corpus: Corpus, view: TreeView, now: str) -> Planner:
    """A Planner over `view` wired to the corpus's index and tree (caller holds the lock)."""
    from memhtml.index.identity import path_ever_held
    from memhtml.ops.writes import Planner

    dirty_cache: dict[str, set[str]] = {}
    # A watching process asks git read-only: a status that refreshed .git/index would
    # change the repo stamp and cost the next read its scoped check (Corpus.own_write_begin).
    read_only = corpus.watching

    def is_dirty(path: str) -> bool:
        if "paths" not in dirty_cache:
            dirty_cache["paths"] = {
                p
                for e in corpus.git.status(
                    ("projects/", "areas/", "resources/", "archive/"), read_only=read_only
                )
                for p in (e.path, e.old_path)
                if p
            }
        return path in dirty_cache["paths"]

    conn = corpus.conn
    return Planner(
        view=view,
        now=now,
        year=int(now[:4]),
        active_path_for_hash=lambda h: active_path_for_hash(conn, h),
        is_dirty=is_dirty,
        ever_held=lambda p: path_ever_held(conn, p),
        inbound=lambda p: inbound_links(conn, p),
    )


def plan_commit(
    corpus: Corpus,
    plan: Callable[[Planner], dict[str, Any]],
    message: Callable[[dict[str, Any]], str],
    *,
    embed: bool = True,
) -> dict[str, Any]:
    """The write-door sequence for one custom plan (see `Corpus.plan_commit`)."""
    with write_door(corpus, embed) as door:
        planner = door.planner
        payload = dict(plan(planner))
        changes = planner.view.changes()
        if not changes:
            return {**payload, "commit_sha": None, "index": {}, "vectors": {}}
        sha, report, vectors = commit_changes(
            corpus,
            changes,
            message(payload),
            docs=planner.docs,
            embedder=door.embedder,
            now=door.now,
        )
        done = {**payload, "commit_sha": sha, "index": report.to_data(), "vectors": vectors}
        if report.warnings:  # the commit landed; what did not follow it
            done["warnings"] = report.warnings
        return done


def commit_changes(
    corpus: Corpus,
    changes: Sequence[FileChange],
    message: str,
    *,
    docs: Mapping[bytes, Any] | None = None,
    embedder: Embedder | None = None,
    now: str | None = None,
) -> tuple[str, IndexReport, dict[str, Any]]:
    """Write a change set, commit it as one commit, index and embed exactly those paths.

    The caller holds the repository lock and planned the changes against the
    tree. A journal brackets the window between the first file written and
    the commit: a failure (an exception, SIGTERM or SIGINT) puts the exact
    previous bytes back; a SIGKILL leaves the journal, and the next writer
    settles it (see memhtml.store.recovery). The index rows are prepared in
    an open transaction beside the files and the commit (memhtml.index.commit),
    committed once the commit landed and rolled back otherwise.

    Once the commit has landed the write is acknowledged, whatever fails
    after it: indexing or embedding it (a full disk, most often) becomes a
    warning on the report (`IndexReport.warnings`), the journal stays, and
    the next command catches the index up and embeds what landed.
    """
    from memhtml.index.commit import PendingIndex
    from memhtml.store import recovery
    from memhtml.store.files import Undo, apply_changes
    from memhtml.store.git import PACK_THRESHOLD

    git, root = corpus.git, corpus.root
    with answering_disk_full(corpus):
        parent = git.head_fast()  # under the lock: only a hand commit moves it
        index_changes = [(c.path, c.content, c.moved_from) for c in changes]
        # Before the index transaction: what the process's caches need to follow this write.
        own = corpus.own_write_begin(
            parent, {p for c in changes for p in (c.path, c.moved_from) if p}
        )
        recovery.begin(root, parent, changes)
        # A failure below puts the tree back and re-raises; the journal stays only
        # where that restore did not complete (the next writer then settles it,
        # which is a no-op for paths already back at HEAD).
        undo = Undo()
        packing = pending = None
        try:
            try:
                blobs = list(dict.fromkeys(c.content for c in changes if c.content))
                # A large batch's blobs go into one pack while the files are written.
                packing = git.store_blobs(blobs) if len(blobs) >= PACK_THRESHOLD else None
                pending = PendingIndex.start(corpus.indexer, parent, index_changes, docs)
                touched, _ = apply_changes(root, changes, undo)  # restores itself on failure
            except BaseException:
                if packing is not None:
                    packing.kill()
                if undo.restored or not undo.previous:  # the tree is as it was
                    recovery.end(root)
                raise
            try:
                if packing is not None:
                    packing.wait()
                own = corpus.own_commit_starts(own)
                sha = git.commit_paths(touched, message, parent)
            except BaseException:
                if packing is not None:
                    packing.kill()
                if git.head() == parent:  # the commit did not land: put the tree back
                    if _unwind(git, root, undo, touched):
                        recovery.end(root)
                else:
                    recovery.end(root)
                raise
        except BaseException:
            if pending is not None:
                pending.abandon()
            raise
        corpus.own_commit_landed(own, sha, touched)
    result = _after_commit(
        corpus,
        sha,
        parent=parent,
        changes=changes,
        index_changes=index_changes,
        docs=docs,
        pending=pending,
        embedder=embedder,
        now=now,
    )
    corpus.own_write_done(own)
    return result


def _unwind(git: Any, root: Any, undo: Any, touched: Sequence[str]) -> bool:
    """Put the tree and git's index back after a commit that did not land; False when the
    full disk refused part of it (the journal then stays for the next writer)."""
    try:
        undo.restore(root)
    except Exception as exc:  # the commit's own failure is the one to answer with
        log.warning("putting the tree back after a failed commit failed: %s", exc)
        return False
    return bool(git.reset_paths(touched))


def _after_commit(
    corpus: Corpus,
    sha: str,
    *,
    parent: str | None,
    changes: Sequence[FileChange],
    index_changes: list[tuple[str, bytes | None, str | None]],
    docs: Mapping[bytes, Any] | None,
    pending: Any,
    embedder: Embedder | None,
    now: str | None,
) -> tuple[str, IndexReport, dict[str, Any]]:
    """Index and embed a landed commit; a failure here is a warning, never the answer."""
    from memhtml.index.indexer import IndexReport
    from memhtml.store import recovery
    from memhtml.store.upkeep import keep_in_shape

    root = corpus.root
    warnings: list[dict[str, str]] = []
    try:
        if pending is None:
            report = corpus.indexer.apply_commit(parent, sha, index_changes, docs)
        else:
            report = pending.finish(sha)
    except Exception as exc:
        if pending is not None:
            pending.abandon()
        report = IndexReport("update", previous_head=parent)
        warnings.append(landed_warning(corpus, "index-behind", sha, exc))
    vectors: dict[str, Any]
    if warnings:
        vectors = {"embedded": 0, "pending": None, "model": None, "error": "the index is behind"}
    elif embedder is not None:
        from memhtml.index.embedding import embed_missing

        try:
            vectors = embed_missing(
                corpus.conn,
                embedder,
                root,
                paths=[c.path for c in changes if c.content],
                clock=now or corpus.clock(),
            ).to_data()
        except Exception as exc:
            warnings.append(landed_warning(corpus, "vectors-pending", sha, exc))
            vectors = {"embedded": 0, "pending": None, "model": embedder.model_id}
            vectors["error"] = warnings[-1]["message"]
    else:
        vectors = corpus.vectors_off()
    # The journal stays until the batch is indexed and its vectors exist: a kill, or a
    # failure above, leaves it, and the next writer settles what landed.
    if not warnings:
        recovery.end(root)
        if embedder is not None and vectors.get("embedded"):
            try:  # the tail of new vectors joins the graph once it is long (memhtml.ops.ann)
                corpus.ann.after_write()
            except Exception as exc:  # a search scans the tail exactly meanwhile
                log.warning("folding new vectors into the graph failed: %s", exc)
    report.warnings = warnings
    try:  # under the lock still: repack when git's gc limits are passed
        keep_in_shape(corpus.git)
    except Exception as exc:  # the commit has landed; a repack is only upkeep
        log.warning("object store upkeep failed after %s: %s", sha, exc)
    return sha, report, vectors


def landed_warning(corpus: Corpus, kind: str, sha: str, exc: BaseException) -> dict[str, str]:
    """A warning for what failed after commit `sha` landed (the write stands)."""
    from memhtml.ops.errors import as_memhtml_error

    typed = as_memhtml_error(exc, root=corpus.root)
    what = "indexing it" if kind == "index-behind" else "embedding it"
    message = (
        f"the commit {sha[:12]} landed; {what} failed ({typed.message}); the next command"
        " catches up once it can write"
    )
    log.warning("%s", message)
    return {"code": kind, "error": typed.code, "message": message}


@contextmanager
def answering_disk_full(corpus: Corpus) -> Iterator[None]:
    """Answer a full disk met inside as DiskFullError naming the root's file system, and say
    what became of the write: nothing committed, and whether anything is left to settle."""
    try:
        yield
    except Exception as exc:
        from memhtml.contracts.errors import DiskFullError
        from memhtml.store.recovery import journal_path
        from memhtml.store.space import disk_full_cause, disk_full_error

        cause = disk_full_cause(exc)
        if cause is None or (isinstance(exc, DiskFullError) and "committed" in exc.details):
            raise
        left = journal_path(corpus.root).exists()
        consequence = "nothing was committed" + (
            "; the next command settles what the full disk left unfinished"
            if left
            else " and nothing was left behind"
        )
        typed = disk_full_error(corpus.root, cause, consequence=consequence)
        typed.details["committed"] = False
        raise typed from exc


def recover(corpus: Corpus) -> dict[str, Any]:
    """Settle what a killed command left (under the repository lock): an interrupted
    batch's files, its temp files, a stale git index lock."""
    from memhtml.store import recovery

    with corpus.lock.hold():
        # The lock first: settling resets git's index entries, which a stale lock refuses.
        lock_removed = recovery.clear_stale_git_lock(corpus.root)
        found = recovery.recover(corpus.git, corpus.root, keep_journal=True)
        report = found.to_data()
        report["stale_git_lock_removed"] = lock_removed
        if found.settled:
            # The commit landed but its writer died (or the disk filled) before indexing
            # or embedding it. The journal goes only once both are done.
            corpus.sync()
            embedder = corpus.embedder
            if embedder is not None:
                from memhtml.index.embedding import embed_missing, space_matches

                if space_matches(corpus.conn, embedder):
                    embed_missing(
                        corpus.conn,
                        embedder,
                        corpus.root,
                        paths=found.settled,
                        clock=corpus.clock(),
                    )
            if not found.unsettled:
                recovery.end(corpus.root)
        return report


def active_path_for_hash(conn: sqlite3.Connection, content_hash: str) -> str | None:
    """The committed active memory holding `content_hash`, if any (dedup's "existing copy")."""
    # Only a committed memory can be "the existing copy": a file the working
    # tree holds uncommitted (a hand edit, a killed batch's leftover) is not.
    row = conn.execute(
        "SELECT path FROM files WHERE content_hash = ? AND archived = 0"
        " AND memory_type <> 'task'"
        " AND path NOT IN (SELECT path FROM worktree_overlay) ORDER BY path LIMIT 1",
        (content_hash,),
    ).fetchone()
    return None if row is None else str(row[0])


def inbound_links(conn: sqlite3.Connection, path: str) -> list[tuple[str, str]]:
    """(src_path, rel) of every authored link pointing at `path`."""
    return [
        (str(src), str(rel))
        for src, rel in conn.execute(
            "SELECT src_path, rel FROM edges WHERE dst_path = ? AND derived = 0"
            " ORDER BY src_path, rel",
            (path,),
        )
    ]
