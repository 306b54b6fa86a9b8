"""The embed pipeline and the vector space's identity.

- `embed_missing` asks vectors only for chunks that have none (or another
  model's); the write doors scope it to their own paths; `index embed` closes
  a store-wide gap.
- The index records which model made its vectors. A write or search under
  another model is refused (search degrades to the lexical arms); nothing
  re-embeds silently, and opening a store never touches the vector space.
- A model failure never fails the pass: the lexical rows have landed, and the
  report says how many chunks still lack vectors.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import EmbedModelMismatchError, MemhtmlError
from memhtml.index.db import rollback_quietly
from memhtml.store.faults import sqlite_step
from memhtml.telemetry import traced

if TYPE_CHECKING:
    from memhtml.embed.base import Embedder
    from memhtml.embed.matrix import LoadedMatrix
    from memhtml.index.spaces import Migration

log = logging.getLogger("memhtml.embed")
EMBED_BATCH: Final = 64
SYNC_PAGE: Final = 32768  # vectors a matrix sync reads per query (~50 MB at 384 dims)
_SCOPE_CHUNK: Final = 500


@dataclass
class EmbedReport:
    """What an embed pass did."""

    embedded: int = 0
    pending: int = 0
    error: str | None = None
    model: str | None = None

    def to_data(self) -> dict[str, Any]:
        """The envelope payload."""
        return {
            "embedded": self.embedded,
            "pending": self.pending,
            "model": self.model,
            "error": self.error,
        }


def stored_space(conn: sqlite3.Connection) -> tuple[str | None, int | None, str | None]:
    """(model id, dim, epoch) recorded in index_state."""
    row = conn.execute(
        "SELECT embed_model, embed_dim, vector_epoch FROM index_state WHERE id = 1"
    ).fetchone()
    return (row[0], row[1], row[2]) if row else (None, None, None)


def space_matches(conn: sqlite3.Connection, embedder: Embedder) -> bool:
    """True when the index has no vector space yet or it is this embedder's."""
    model, dim, _ = stored_space(conn)
    return model is None or (model == embedder.model_id and dim == embedder.dim)


def mismatch_error(conn: sqlite3.Connection, embedder: Embedder) -> EmbedModelMismatchError:
    """The refusal for a vector-space mismatch; it names the migration that switched the
    index away from the configured embedder's space, when one did."""
    model, dim, _ = stored_space(conn)
    mine = f"{embedder.model_id}@{embedder.dim}"
    switch = _switched_to(conn, f"{model}@{dim}")
    if switch is not None:
        when = switch.switched_at or "?"
        back = switch.from_embedder or "<the old embedder>"
        return EmbedModelMismatchError(
            f"the index was migrated from {switch.from_space} to {model}@{dim} on {when}"
            f" (memhtml index migrate --to {switch.embedder}); the configured embedder is {mine}",
            suggestions=[
                f"set MEMHTML_EMBED={switch.embedder} (with the MEMHTML_EMBED_* settings the"
                " migration used)",
                f"memhtml index migrate --to {back}  (migrates back; free for unchanged"
                " chunks when the old space was kept with --keep-old)",
            ],
            details={
                "index_space": f"{model}@{dim}",
                "configured": mine,
                "migration": {
                    k: v
                    for k, v in switch.to_data().items()
                    if k in ("id", "embedder", "from_embedder", "from", "to", "switched_at")
                },
            },
        )
    return EmbedModelMismatchError(
        f"the index holds vectors of {model}@{dim}; the configured embedder is {mine}",
        suggestions=[
            f"set MEMHTML_EMBED to the model the index was built with ({model})",
            "memhtml index migrate --to NAME  (builds the new space beside the old one,"
            " search keeps answering meanwhile)",
            "memhtml index rebuild --embed --force  (re-embeds everything with the new model)",
        ],
        details={"index_space": f"{model}@{dim}", "configured": mine},
    )


def _switched_to(conn: sqlite3.Connection, space: str) -> Migration | None:
    """The last migration, when it switched the index to `space`."""
    from memhtml.index.spaces import last_switch

    try:
        switch = last_switch(conn)
    except sqlite3.OperationalError:  # a read-only plane from before the migrations table
        return None
    return switch if switch is not None and switch.to_space == space else None


def check_space(conn: sqlite3.Connection, embedder: Embedder | None) -> None:
    """Refuse before any write when the embedder would mix vector spaces."""
    if embedder is not None and not space_matches(conn, embedder):
        raise mismatch_error(conn, embedder)


def reset_space(conn: sqlite3.Connection, embedder: Embedder | None, root: Path) -> None:
    """Empty the vector plane and record a new space (the explicit migration)."""
    import secrets  # a new vector space only: a cold write never loads it

    from memhtml.embed.matrix import VectorMatrix

    epoch = secrets.token_hex(8)
    conn.execute("DELETE FROM embeddings")
    conn.execute(
        "UPDATE index_state SET embed_model = ?, embed_dim = ?, vector_epoch = ? WHERE id = 1",
        (
            embedder.model_id if embedder else None,
            embedder.dim if embedder else None,
            epoch if embedder else None,
        ),
    )
    if embedder is not None:
        VectorMatrix(vectors_dir(root)).reset(epoch, embedder.model_id, embedder.dim)


HASH_PREFIX: Final = "sha256:"


def matrix_key(content_hash: str) -> str:
    """A content hash as a matrix row key (the bare hex digest)."""
    return content_hash.removeprefix(HASH_PREFIX)


def content_hash_of_key(key: str) -> str:
    """A matrix row key back to the content hash spelling used in the index."""
    return HASH_PREFIX + key


def vectors_dir(root: Path) -> Path:
    """Where the memory-mapped matrix lives."""
    return root / ".memhtml" / "vectors"


def _claim_space(conn: sqlite3.Connection, embedder: Embedder, root: Path) -> str:
    model, _, epoch = stored_space(conn)
    if model is None or epoch is None:
        import secrets

        epoch = secrets.token_hex(8)
        conn.execute(
            "UPDATE index_state SET embed_model = ?, embed_dim = ?, vector_epoch = ? WHERE id = 1",
            (embedder.model_id, embedder.dim, epoch),
        )
    return epoch


def pending_chunks(
    conn: sqlite3.Connection, model: str | None, paths: Iterable[str] | None = None
) -> list[tuple[str, str, str]]:
    """(chunk_id, content_hash, text) of chunks still lacking a vector, one row per chunk id.

    Reads the trigger-kept `pending_vectors` table, so the cost follows the
    gap, not the store. (`model` is the space the vectors must belong to; a
    space change empties the embeddings, which refills the pending table.)
    """
    base = (
        "SELECT p.chunk_id, min(c.content_hash), min(c.text) FROM pending_vectors p"
        " JOIN chunks c ON c.chunk_id = p.chunk_id"
    )
    if paths is None:
        return list(conn.execute(base + " GROUP BY p.chunk_id ORDER BY p.chunk_id"))
    wanted = list(dict.fromkeys(paths))
    out: dict[str, tuple[str, str, str]] = {}
    for start in range(0, len(wanted), _SCOPE_CHUNK):
        part = wanted[start : start + _SCOPE_CHUNK]
        marks = ",".join("?" for _ in part)
        for row in conn.execute(base + f" WHERE c.path IN ({marks}) GROUP BY p.chunk_id", part):
            out[row[0]] = row
    return [out[k] for k in sorted(out)]


def count_pending(conn: sqlite3.Connection) -> int:
    """How many chunks `pending_chunks` would return, without reading their texts."""
    row = conn.execute(
        "SELECT count(DISTINCT p.chunk_id) FROM pending_vectors p"
        " JOIN chunks c ON c.chunk_id = p.chunk_id"
    ).fetchone()
    return int(row[0])


def coverage(conn: sqlite3.Connection, *, exact: bool = False) -> tuple[int, int]:
    """(distinct chunks with a vector, distinct chunks).

    Cheap when nothing is pending: (1, 1) stands for "all", unless `exact`
    asks for the real counts (status reports).
    """
    pending = conn.execute("SELECT count(*) FROM pending_vectors").fetchone()[0]
    if pending == 0 and not exact:
        return 1, 1
    total = conn.execute("SELECT count(DISTINCT chunk_id) FROM chunks").fetchone()[0]
    return int(total - pending), int(total)


@traced("memhtml.embed.documents")
def embed_missing(
    conn: sqlite3.Connection,
    embedder: Embedder,
    root: Path,
    *,
    paths: Iterable[str] | None = None,
    clock: str,
    progress: bool = False,
) -> EmbedReport:
    """Embed the chunks that lack a vector (scoped to `paths` when given)."""
    from memhtml.domain.vectors import vector_to_blob

    check_space(conn, embedder)
    report = EmbedReport(model=embedder.model_id)
    todo = pending_chunks(conn, embedder.model_id, paths)
    if not todo:
        return report
    epoch = _claim_space(conn, embedder, root)
    bar = None
    if progress:
        from memhtml.progress import Progress

        bar = Progress(len(todo), "embedding")
    try:
        for start in range(0, len(todo), EMBED_BATCH):
            batch = todo[start : start + EMBED_BATCH]
            try:
                vectors = embedder.embed_documents([text for _, _, text in batch])
            except MemhtmlError as exc:
                report.error = f"{exc.code}: {exc.message}"
                break
            except Exception as exc:  # a model failure must not fail the pass
                report.error = f"{type(exc).__name__}: {exc}"
                break
            conn.execute("BEGIN IMMEDIATE")
            try:
                sqlite_step("vectors")  # the full-disk test seam (memhtml.store.faults)
                conn.executemany(
                    "DELETE FROM embeddings WHERE chunk_id = ?", [(cid,) for cid, _, _ in batch]
                )
                conn.executemany(
                    "INSERT INTO embeddings"
                    " (chunk_id, content_hash, model, dim, vector, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (cid, chash, embedder.model_id, embedder.dim, vector_to_blob(vec), clock)
                        for (cid, chash, _), vec in zip(batch, vectors, strict=True)
                    ],
                )
                conn.execute("COMMIT")
            except BaseException:
                rollback_quietly(conn)
                raise
            report.embedded += len(batch)
            if bar is not None:
                bar.advance(len(batch))
    finally:
        if bar is not None:
            bar.close()
    report.pending = len(todo) - report.embedded
    sync_matrix(conn, root, epoch)
    return report


def sync_matrix(
    conn: sqlite3.Connection, root: Path, epoch: str | None = None, *, page: int = SYNC_PAGE
) -> LoadedMatrix | None:
    """Bring the memory-mapped matrix up to the embeddings table and return it loaded
    (reading `page` vectors per query)."""
    from memhtml.domain.vectors import vector_from_blob
    from memhtml.embed.matrix import VectorMatrix

    model, dim, stored_epoch = stored_space(conn)
    epoch = epoch or stored_epoch
    if model is None or dim is None or epoch is None:
        return None
    matrix = VectorMatrix(vectors_dir(root))
    loaded = matrix.load(epoch, model, dim)
    since = loaded.max_seq if loaded is not None else None
    if loaded is None:
        matrix.reset(epoch, model, dim)
        since = 0
    max_seq = conn.execute("SELECT coalesce(max(seq), 0) FROM embeddings").fetchone()[0]
    if since is not None and max_seq > since:
        import numpy as np

        # A page at a time: a million vectors read at once held ~3.5 GB (the BLOBs, then
        # their stacked copy); each page's header is published, so a kill keeps the pages
        # already appended.
        while True:
            rows = conn.execute(
                "SELECT seq, content_hash, vector FROM embeddings WHERE seq > ? AND model = ?"
                " AND seq <= ? ORDER BY seq LIMIT ?",
                (since, model, max_seq, page),
            ).fetchall()
            if not rows:
                break
            keys = [matrix_key(r[1]) for r in rows]
            vectors = np.stack([vector_from_blob(r[2]) for r in rows]).astype(np.float32)
            last = int(rows[-1][0]) if len(rows) == page else int(max_seq)
            matrix.append(epoch, model, dim, keys, vectors, max_seq=last)
            since = int(rows[-1][0])
            if len(rows) < page:
                break
        loaded = matrix.load(epoch, model, dim)
    return loaded
