"""`memhtml index migrate`: move the index to another embedding model while search keeps answering.

A migration builds the target space beside the live one (`memhtml.index.spaces`):
it pages through the live chunks that lack a vector in the target space, in
chunk-id order, embeds a page (one request's worth), and commits the page's
vectors with the migration's counter in one short transaction. A SIGKILL
therefore loses at most the page in flight, and `--resume` starts from the
chunks still missing: nothing already stored is sent again. Writes keep
landing in the old space meanwhile; each pass that ends restarts from the
first chunk id, so what they added behind the cursor is picked up, and the
last pass runs under the repository lock right before the switch, so nothing
written meanwhile is left out of the new space.

When the target covers every live chunk, the discrimination gate runs on the
target embedder (the fixture corpus, `memhtml.eval.gate`). A failing gate is
a regression unless the active space's own embedder fails it as badly (then
the new model is no worse); a regression refuses the switch
(`ERR_DISCRIMINATION_FAILED`, the migration kept as `gate_failed`) unless
`--skip-gate`. The switch is one transaction (`switch_space`); the old
space's rows leave with it, or are parked for a rollback with `--keep-old`.
Any failure of the endpoint pauses the migration with its typed error and
the reason recorded; the old space is untouched.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import (
    DiscriminationFailedError,
    EmbedContractError,
    EmbedModelMismatchError,
    InvalidFlagError,
    MemhtmlError,
    WriteConflictError,
)
from memhtml.contracts.logs import get_logger
from memhtml.index.db import write_transaction
from memhtml.index.embedding import stored_space
from memhtml.index.spaces import (
    Migration,
    drop_space,
    history,
    live_chunks,
    migration_by_id,
    missing_chunks,
    missing_estimate,
    open_migration,
    parked_spaces,
    space_name,
    start_migration,
    store_vectors,
    switch_space,
    update_migration,
)

if TYPE_CHECKING:
    from memhtml.embed.base import Embedder
    from memhtml.ops.corpus import Corpus
    from memhtml.progress import Progress

GateFn = Callable[[str, "str | None"], dict[str, Any]]
LOCK_NAME: Final = "memhtml-migrate.lock"
# Passes without the repository lock until at most this many chunks remain; the rest is
# embedded under the lock, right before the switch (writers wait that long, no longer).
LOCKED_REMAINDER: Final = 256
UNLOCKED_PASSES: Final = 4
BYTES_PER_TOKEN: Final = 3  # the estimate memhtml.embed.openai batches by


def migrate(
    corpus: Corpus,
    *,
    to: str | None = None,
    resume: bool = False,
    abort: bool = False,
    status: bool = False,
    skip_gate: bool = False,
    keep_old: bool = False,
    drop_old: bool = False,
    progress: bool | None = None,
    gate: GateFn | None = None,
) -> dict[str, Any]:
    """The `index migrate` command: start, resume, report, abort, or drop a kept space.

    `gate(new, old)` judges the target embedder against the active space's (None: the
    old embedder is not known here); the adapter passes `memhtml.eval.embedders.gate_verdict`,
    which sits above this layer. Without it only `skip_gate` may switch.
    """
    if status:
        return migration_status(corpus, to)
    if abort or drop_old:
        if to or resume or skip_gate or keep_old or (abort and drop_old):
            raise InvalidFlagError("--abort and --drop-old each go alone (or with --repo)")
        return _abort(corpus) if abort else _drop_old(corpus)
    if not to and not resume:
        raise InvalidFlagError(
            "index migrate needs --to NAME, --resume, --abort or --status",
            suggestions=["memhtml index migrate --to openai", "memhtml index migrate --status"],
        )
    tty = sys.stderr.isatty() if progress is None else progress
    if gate is None and not skip_gate:
        raise InvalidFlagError("no gate was given to judge the new space: pass --skip-gate")
    return _Run(corpus, to, skip_gate=skip_gate, keep_old=keep_old, progress=tty, gate=gate).run()


# -- reports -------------------------------------------------------------------------------
def _estimate(corpus: Corpus, model: str, dim: int) -> dict[str, Any]:
    est = missing_estimate(corpus.conn, model, dim)
    chunks = live_chunks(corpus.conn)
    return {
        "chunks_total": chunks,
        "chunks_missing": est["chunks"],
        "chunks_covered": chunks - est["chunks"],
        "memories_missing": est["memories"],
        "tokens_estimate": -(-est["text_bytes"] // BYTES_PER_TOKEN),
    }


def _running(corpus: Corpus) -> bool:
    try:
        with _lock(corpus):
            return False
    except WriteConflictError:
        return True


def migration_status(corpus: Corpus, to: str | None = None) -> dict[str, Any]:
    """The open migration (how far, why it stopped), the spaces held, and recent history.

    With `to` and no open migration: what migrating to that embedder would
    embed (its space is asked of the embedder, which may cost one call).
    """
    conn = corpus.conn
    model, dim, epoch = stored_space(conn)
    record = open_migration(conn)
    out: dict[str, Any] = {
        "mode": "status",
        "active": {"space": space_name(model, dim), "model": model, "dim": dim, "epoch": epoch},
        "migration": record.to_data() if record else None,
        "running": _running(corpus) if record else False,
        "estimate": None,
        "kept": parked_spaces(conn),
        "history": [m.to_data() for m in history(conn, 5)],
    }
    if record is not None:
        out["estimate"] = _estimate(corpus, record.to_model, record.to_dim)
    elif to:
        target = _target(to)
        out["target"] = {"embedder": to, "space": f"{target.model_id}@{target.dim}"}
        if (target.model_id, target.dim) == (model, dim):
            out["target"]["active"] = True  # nothing to migrate
        else:
            out["estimate"] = _estimate(corpus, target.model_id, target.dim)
    return out


def _abort(corpus: Corpus) -> dict[str, Any]:
    conn = corpus.conn
    record = open_migration(conn)
    if record is None:
        raise InvalidFlagError("no migration is open: nothing to abort")
    with _lock(corpus), write_transaction(conn):
        dropped = drop_space(conn, record.to_model, record.to_dim)
        update_migration(conn, record.id, corpus.clock(), state="aborted")
    return {
        "mode": "aborted",
        "migration": {**record.to_data(), "state": "aborted"},
        "dropped_vectors": dropped,
        "active": space_name(*stored_space(conn)[:2]),
    }


def _drop_old(corpus: Corpus) -> dict[str, Any]:
    conn = corpus.conn
    record = open_migration(conn)
    building = (record.to_model, record.to_dim) if record else None
    dropped: list[dict[str, Any]] = []
    with _lock(corpus), write_transaction(conn):
        for space in parked_spaces(conn):
            if (space["model"], space["dim"]) != building:
                drop_space(conn, space["model"], space["dim"])
                dropped.append(space)
    return {"mode": "dropped", "dropped": dropped, "active": space_name(*stored_space(conn)[:2])}


# -- the run ---------------------------------------------------------------------------------
@contextmanager
def _lock(corpus: Corpus) -> Iterator[None]:
    """One migration at a time per store (the kernel frees it when a killed run dies)."""
    from memhtml.store.lock import RepoLock

    try:
        with RepoLock(corpus.root / ".git" / LOCK_NAME).hold(timeout=0):
            yield
    except WriteConflictError as exc:
        if "locked by" not in exc.message:
            raise
        raise WriteConflictError(
            f"another `memhtml index migrate` is running on this store ({exc.message})",
            suggestions=["memhtml index migrate --status", "wait for it, or stop it and --resume"],
        ) from None


def _target(name: str) -> Embedder:
    from memhtml.embed.registry import get_embedder

    embedder = get_embedder(name)
    if embedder is None:
        raise InvalidFlagError(
            "--to off names no vector space",
            suggestions=["memhtml index rebuild --no-embed --force  (drops every vector)"],
        )
    return embedder


def _check_rows(vectors: Any, count: int, dim: int, model: str) -> None:
    """Whatever the backend, only finite rows of the space's width enter it."""
    import numpy as np

    if getattr(vectors, "shape", None) != (count, dim) or not np.isfinite(vectors).all():
        raise EmbedContractError(
            f"{model} returned rows of shape {getattr(vectors, 'shape', None)} with non-finite"
            f" values or another width than {dim}; nothing of this page was stored",
            details={"model": model, "expected": [count, dim], "retryable": False},
        )


class _Run:
    """One invocation that builds (or resumes) a migration, gates it and switches."""

    def __init__(
        self,
        corpus: Corpus,
        to: str | None,
        *,
        skip_gate: bool,
        keep_old: bool,
        progress: bool,
        gate: GateFn | None,
    ) -> None:
        self.c = corpus
        self.gate = gate
        self.conn = corpus.conn
        self.to = to
        self.skip_gate = skip_gate
        self.keep_old = keep_old
        self.progress = progress
        self.embedded = 0
        self.embed_s = 0.0
        self.bar: Progress | None = None

    def run(self) -> dict[str, Any]:
        from memhtml.seams import normalize

        record = open_migration(self.conn)
        if record is not None and self.to and normalize(self.to) != record.embedder:
            raise InvalidFlagError(
                f"a migration to {record.to_space} ({record.embedder}) is open",
                suggestions=["memhtml index migrate --resume", "memhtml index migrate --abort"],
            )
        if record is None and not self.to:
            raise InvalidFlagError(
                "no migration is open: nothing to resume",
                suggestions=["memhtml index migrate --to NAME"],
            )
        name = record.embedder if record is not None else normalize(self.to or "")
        try:
            target = _target(name)
            space = (target.model_id, target.dim)
        except MemhtmlError as exc:
            self._paused(record, exc)
            raise
        if record is not None and space != (record.to_model, record.to_dim):
            raise EmbedModelMismatchError(
                f"the open migration builds {record.to_space}; {name} now embeds into"
                f" {space[0]}@{space[1]}",
                suggestions=[
                    "restore the MEMHTML_EMBED_* settings the migration started with",
                    "memhtml index migrate --abort, then start again",
                ],
                details=record.to_data(),
            )
        active = stored_space(self.conn)[:2]
        if record is None and active == space:
            return {"mode": "noop", "active": space_name(*active), "to": space_name(*space)}
        started = time.perf_counter()
        with _lock(self.c):
            record = self._begin(record, name, space)
            try:
                return self._build_gate_switch(record, target, started)
            except MemhtmlError as exc:
                self._paused(record, exc)
                raise
            except KeyboardInterrupt:
                self._paused(record, None, "interrupted")
                raise
            finally:
                if self.bar is not None:
                    self.bar.close()

    def _begin(self, record: Migration | None, name: str, space: tuple[str, int]) -> Migration:
        clock = self.c.clock()
        mine = self.c.embedder  # (an endpoint may be asked its width: not inside the transaction)
        mine_space = (mine.model_id, mine.dim) if mine is not None else None
        with write_transaction(self.conn):
            if record is None:
                if open_migration(self.conn) is not None:  # another run won the race
                    raise WriteConflictError("another migration was started meanwhile")
                from_name = (
                    self.c.embedder_name if mine_space == stored_space(self.conn)[:2] else None
                )
                record = start_migration(
                    self.conn,
                    embedder=name,
                    from_embedder=from_name,
                    to_model=space[0],
                    to_dim=space[1],
                    keep_old=self.keep_old,
                    clock=clock,
                )
            update_migration(
                self.conn,
                record.id,
                clock,
                runs=record.runs + 1,
                last_error=None,
                keep_old=self.keep_old or record.keep_old,
            )
        fresh = open_migration(self.conn)
        assert fresh is not None
        return fresh

    def _paused(self, record: Migration | None, exc: MemhtmlError | None, why: str = "") -> None:
        """Record why the run stopped; the migration stays open for --resume."""
        if record is None:
            return
        reason = f"{exc.code}: {exc.message}" if exc is not None else why
        if exc is not None and not isinstance(exc, DiscriminationFailedError):
            exc.suggestions.append("memhtml index migrate --resume  (continues where it stopped)")
        try:
            with write_transaction(self.conn):
                update_migration(self.conn, record.id, self.c.clock(), last_error=reason)
        except Exception:  # the store itself failing: the error being raised says more
            pass

    def _build_gate_switch(
        self, record: Migration, target: Embedder, started: float
    ) -> dict[str, Any]:
        estimate = _estimate(self.c, record.to_model, record.to_dim)
        if self.progress:
            print(
                f"migrating to {record.to_space}: {estimate['chunks_missing']:,} chunks of"
                f" {estimate['memories_missing']:,} memories to embed"
                f" (~{estimate['tokens_estimate']:,} tokens estimated),"
                f" {estimate['chunks_covered']:,} already there",
                file=sys.stderr,
            )
            from memhtml.progress import Progress

            self.bar = Progress(estimate["chunks_missing"], "embedding")
        mark = time.perf_counter()
        while self._pass(record, target):
            pass
        phases = {"build_s": time.perf_counter() - mark}
        gate = None
        if not self.skip_gate:
            mark = time.perf_counter()
            gate = self._gate(record)
            phases["gate_s"] = time.perf_counter() - mark
        mark = time.perf_counter()
        switched = self._switch(record, target)
        phases["switch_s"] = time.perf_counter() - mark
        seconds = time.perf_counter() - started
        return {
            "mode": "switched",
            "from": switched.from_space,
            "to": switched.to_space,
            "embedder": record.embedder,
            "estimate": estimate,
            "embedded": self.embedded,
            "embedded_total": switched.embedded,
            "reused": estimate["chunks_covered"],
            "runs": switched.runs,
            "seconds": round(seconds, 3),
            "phases": {k: round(v, 3) for k, v in phases.items()},
            "embed_seconds": round(self.embed_s, 3),
            "docs_per_s": round(self.embedded / self.embed_s, 1) if self.embed_s else None,
            "gate": gate if gate is not None else {"skipped": True},
            "kept_old": switched.keep_old and switched.from_space is not None,
            "migration": switched.to_data(),
        }

    def _pass(self, record: Migration, target: Embedder) -> int:
        """Embed the chunks missing from the target space, in chunk-id order; how many."""
        from memhtml.domain.vectors import vector_to_blob

        model, dim = record.to_model, record.to_dim
        page_size = max(1, int(getattr(target, "batch_size", 64)))
        after, done = "", 0
        while True:
            page = missing_chunks(self.conn, model, dim, after=after, limit=page_size)
            if not page:
                return done
            after = page[-1][0]
            mark = time.perf_counter()
            vectors = target.embed_documents([text for _, _, text in page])
            self.embed_s += time.perf_counter() - mark
            _check_rows(vectors, len(page), dim, model)
            rows = [
                (cid, chash, vector_to_blob(vec))
                for (cid, chash, _), vec in zip(page, vectors, strict=True)
            ]
            with write_transaction(self.conn):
                store_vectors(self.conn, model, dim, rows, self.c.clock())
                update_migration(self.conn, record.id, self.c.clock(), add_embedded=len(rows))
            done += len(rows)
            self.embedded += len(rows)
            if self.bar is not None:
                self.bar.advance(len(rows))

    def _gate(self, record: Migration) -> dict[str, Any]:
        """Run the gate on the target; refuse (and record) a regression."""
        assert self.gate is not None
        verdict = self.gate(record.embedder, self._baseline_name(record))
        with write_transaction(self.conn):
            update_migration(
                self.conn,
                record.id,
                self.c.clock(),
                gate=verdict,
                state="building" if verdict["passed"] else "gate_failed",
            )
        if not verdict["passed"]:
            raise DiscriminationFailedError(
                f"the new space {record.to_space} regressed on the discrimination gate"
                f" ({verdict['reason']}); the index still answers from"
                f" {record.from_space or 'no vector space'}",
                suggestions=[
                    "memhtml index migrate --resume --skip-gate  (switch anyway)",
                    "memhtml index migrate --abort  (drop the new space)",
                    "memhtml eval compare-embedders OLD NEW  (the figures side by side)",
                ],
                details=verdict,
            )
        return verdict

    def _baseline_name(self, record: Migration) -> str | None:
        if record.from_embedder and record.from_embedder != record.embedder:
            return record.from_embedder
        mine = self.c.embedder
        if mine is not None and (mine.model_id, mine.dim) == stored_space(self.conn)[:2]:
            return None if self.c.embedder_name == record.embedder else self.c.embedder_name
        return None

    def _switch(self, record: Migration, target: Embedder) -> Migration:
        """Catch up with what was written meanwhile, then switch in one transaction."""
        import secrets

        from memhtml.index.embedding import sync_matrix

        for _ in range(UNLOCKED_PASSES):  # writers may still land; the lock is not held yet
            if self._pass(record, target) <= LOCKED_REMAINDER:
                break
        with self.c.lock.hold():
            self.c.recover()
            self.c.update_index()  # commits and hand edits nobody indexed yet join too
            epoch = secrets.token_hex(8)
            while True:
                self._pass(record, target)
                with write_transaction(self.conn):
                    missing = switch_space(self.conn, record, epoch=epoch, clock=self.c.clock())
                if not missing:
                    break
        self.c.forget_vectors()
        sync_matrix(self.conn, self.c.root, epoch)  # the new matrix now, not at the next search
        try:  # and the new space's graph (the old one left with the old matrix's files)
            self.c.ann.refresh()
        except Exception as exc:  # the next search builds it
            get_logger("memhtml").warning(
                "building the vector graph after the switch failed: %s", exc
            )
        done = migration_by_id(self.conn, record.id)
        assert done is not None
        return done
