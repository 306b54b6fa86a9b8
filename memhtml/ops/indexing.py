"""`Corpus.index`: rebuild, update, embed and status of the index plane."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import RebuildNoEmbedRefusedError
from memhtml.index.db import write_transaction
from memhtml.index.embedding import (
    EmbedReport,
    check_space,
    count_pending,
    coverage,
    embed_missing,
    mismatch_error,
    reset_space,
    space_matches,
    stored_space,
)
from memhtml.index.planes import set_aside_planes

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus


class IndexFacade:
    """The index operations of one corpus."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus

    def _progress(self, progress: bool | None) -> bool:
        return sys.stderr.isatty() if progress is None else progress

    def _embed(self, paths: list[str] | None, progress: bool | None) -> dict[str, Any]:
        c = self.corpus
        embedder = c.embedder
        if embedder is None:
            return c.vectors_off()
        if not space_matches(c.conn, embedder):
            err = mismatch_error(c.conn, embedder)
            return EmbedReport(
                model=embedder.model_id, error=f"{err.code}: {err.message}"
            ).to_data()
        report = embed_missing(
            c.conn,
            embedder,
            c.root,
            paths=paths,
            clock=c.clock(),
            progress=self._progress(progress),
        )
        return report.to_data()

    def rebuild(
        self, *, embed: bool | None = None, force: bool = False, progress: bool | None = None
    ) -> dict[str, Any]:
        """Reproject the whole tree; keep vectors whose chunks come back; embed when asked.

        embed=None embeds when an embedder is configured. embed=False over a
        store that carries vectors needs force (ERR_REBUILD_NO_EMBED_REFUSED).
        embed=True with another model's vectors needs force, which resets the
        vector space (the explicit migration).
        """
        c = self.corpus
        with c.lock.hold():
            c.recover()
            has_vectors = c.conn.execute("SELECT 1 FROM embeddings LIMIT 1").fetchone() is not None
            if embed is False and has_vectors and not force:
                raise RebuildNoEmbedRefusedError(
                    "this index carries vectors; a rebuild without embedding leaves changed"
                    " chunks without them",
                    suggestions=["memhtml index rebuild --embed", "add --force to proceed anyway"],
                )
            embedder = c.embedder if embed is not False else None
            if embedder is not None and not space_matches(c.conn, embedder):
                if not force:
                    check_space(c.conn, embedder)
                with write_transaction(c.conn):
                    reset_space(c.conn, embedder, c.root)
                c.forget_vectors()
            data = c.indexer.rebuild().to_data()
            if embed is False:
                model = stored_space(c.conn)[0]
                pending = count_pending(c.conn)
                data["vectors"] = {"embedded": 0, "pending": pending, "model": model, "error": None}
            else:
                data["vectors"] = self._embed(None, progress) if embedder else c.vectors_off()
            self._graph(data, force=True)
            return data

    def _graph(self, data: dict[str, Any], *, force: bool = False) -> None:
        """Build or extend the vector arm's graph when due (memhtml.ops.ann); report it."""
        c = self.corpus
        embedder = c.embedder
        if embedder is None or not space_matches(c.conn, embedder):
            return
        graph = c.ann.refresh(force=force)
        if graph is not None:
            data["graph"] = graph

    def update(self, *, embed: bool = True, progress: bool | None = None) -> dict[str, Any]:
        """Catch up from the watermark (committed changes, then the working tree)."""
        c = self.corpus
        with c.lock.hold():
            c.recover()
            report = c.update_index()  # a watching process checks only what changed
            data = report.to_data()
            if embed and report.mode == "rebuild":
                data["vectors"] = self._embed(None, progress)
            elif embed:
                data["vectors"] = self._embed(report.touched, progress)
            return data

    def embed(self, *, dry_run: bool = False, progress: bool | None = None) -> dict[str, Any]:
        """Close a store-wide vector gap (chunks without a vector of the configured model)."""
        c = self.corpus
        embedder = c.embedder
        if embedder is None:
            if c.embedder_error is not None:
                raise c.embedder_error
            return {"mode": "embed", "dry_run": dry_run, **c.vectors_off()}
        check_space(c.conn, embedder)
        pending = count_pending(c.conn)
        if dry_run:
            return {
                "mode": "embed",
                "dry_run": True,
                "pending": pending,
                "model": embedder.model_id,
            }
        with c.lock.hold():
            report = embed_missing(
                c.conn, embedder, c.root, clock=c.clock(), progress=self._progress(progress)
            )
            data = {"mode": "embed", "dry_run": False, **report.to_data()}
            self._graph(data)
        return data

    def status(self) -> dict[str, Any]:
        """Watermark, HEAD, staleness, row counts and the vector space."""
        c = self.corpus
        state = c.indexer.state()
        head = c.git.head()
        conn = c.conn
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        model, dim, epoch = stored_space(conn)
        configured = c.embedder
        have, total = coverage(conn, exact=True)
        drift = c.indexer.worktree_drift()
        return {
            "mode": "status",
            "head_sha": head,
            "watermark": state.get("head_sha"),
            # Exact: the index equals a rebuild of HEAD plus the working tree as it is now.
            "index_fresh": state.get("head_sha") == head
            and not state.get("rebuilding")
            and not drift,
            "worktree_drift": drift[:50],
            "worktree_drift_count": len(drift),
            "rebuilding": bool(state.get("rebuilding")),
            "rebuilt_at": state.get("rebuilt_at"),
            "updated_at": state.get("updated_at"),
            "files": one("SELECT count(*) FROM files"),
            "active_files": one("SELECT count(*) FROM files WHERE archived = 0"),
            "archived_files": one("SELECT count(*) FROM files WHERE archived = 1"),
            "skipped_files": one("SELECT count(*) FROM skipped_files"),
            "worktree_overlay": one("SELECT count(*) FROM worktree_overlay"),
            "chunks": one("SELECT count(*) FROM chunks"),
            "embeddings": one("SELECT count(*) FROM embeddings"),
            "edges": one("SELECT count(*) FROM edges"),
            "derived_edges": one("SELECT count(*) FROM edges WHERE derived = 1"),
            "tags": one("SELECT count(DISTINCT tag) FROM file_tags"),
            "entities": one(
                "SELECT count(*) FROM (SELECT DISTINCT entity_type, entity_name FROM file_entities)"
            ),
            "access_rows": one("SELECT count(*) FROM state.access"),
            # Planes another build of memhtml left here, set aside (and usage rows imported).
            "set_aside": set_aside_planes(conn),
            "vector_space": {
                "model": model,
                "dim": dim,
                "epoch": epoch,
                "configured_model": configured.model_id if configured else None,
                "configured_dim": configured.dim if configured else None,
                "matches": configured is not None and space_matches(conn, configured),
                "coverage": (have / total) if total else None,
                "chunks_with_vectors": have,
                "chunks_active": total,
                "embedder_error": (
                    f"{c.embedder_error.code}: {c.embedder_error.message}"
                    if c.embedder_error
                    else None
                ),
                "migration": _open_migration(conn),
                # Why the configured embedder may not write here (names a past migration).
                "mismatch": (
                    mismatch_error(conn, configured).message
                    if configured is not None and not space_matches(conn, configured)
                    else None
                ),
            },
        }


def _open_migration(conn: Any) -> dict[str, Any] | None:
    """The model migration still building or refused by the gate (`index migrate --status`)."""
    from memhtml.index.spaces import open_migration

    record = open_migration(conn)
    if record is None:
        return None
    return {k: record.to_data()[k] for k in ("to", "embedder", "state", "embedded", "last_error")}
