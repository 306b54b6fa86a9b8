"""Vector spaces beside the live one, and the model migrations that build and switch them.

`embeddings` holds exactly the active space (`index_state`'s model and dim),
so the read and write paths never look past it. A migration builds its target
space in `space_vectors`, keyed by (model, dim, chunk id): a chunk already
there is never sent again, whichever run of the migration embedded it, and a
space parked there by `--keep-old` makes the rollback free for every chunk that
did not change meanwhile. `space_migrations` records each migration: what it
moves to, how many chunks it embedded, why its last run stopped, the gate's
verdict, and when it switched.

The switch is one transaction (`switch_space`): under the write lock it
checks that every live chunk has a vector in the target space (a memory
written since the last catch-up makes it refuse, and the caller embeds the
rest and tries again), then the active space's rows leave `embeddings`
(parked in `space_vectors` with `--keep-old`), the target's rows take their
place, `index_state` names the new space and epoch, and the migration is
marked switched. A reader sees the old space or the new one, never a mix.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

OPEN_STATES: Final = ("building", "gate_failed")
_COLUMNS: Final = (
    "id, embedder, from_embedder, from_model, from_dim, to_model, to_dim, state, keep_old,"
    " embedded, runs, last_error, gate, started_at, updated_at, switched_at"
)
_MISSING: Final = (
    "NOT EXISTS (SELECT 1 FROM space_vectors s"
    " WHERE s.model = ? AND s.dim = ? AND s.chunk_id = c.chunk_id)"
)


def space_name(model: str | None, dim: int | None) -> str | None:
    """``model@dim`` (what `memhtml.embed.space_id` names), None for no space."""
    return None if model is None or dim is None else f"{model}@{dim}"


@dataclass
class Migration:
    """One row of `space_migrations`."""

    id: int
    embedder: str
    from_embedder: str | None
    from_model: str | None
    from_dim: int | None
    to_model: str
    to_dim: int
    state: str
    keep_old: bool
    embedded: int
    runs: int
    last_error: str | None
    gate: dict[str, Any] | None
    started_at: str
    updated_at: str
    switched_at: str | None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Migration:
        """A row selected with `_COLUMNS`."""
        values = list(row)
        values[8] = bool(values[8])
        values[12] = json.loads(values[12]) if values[12] else None
        return cls(*values)

    @property
    def from_space(self) -> str | None:
        """``model@dim`` of the space it moves away from."""
        return space_name(self.from_model, self.from_dim)

    @property
    def to_space(self) -> str:
        """``model@dim`` of the space it builds."""
        return f"{self.to_model}@{self.to_dim}"

    def to_data(self) -> dict[str, Any]:
        """The envelope's view of the record."""
        return {
            "id": self.id,
            "embedder": self.embedder,
            "from_embedder": self.from_embedder,
            "from": self.from_space,
            "to": self.to_space,
            "state": self.state,
            "keep_old": self.keep_old,
            "embedded": self.embedded,
            "runs": self.runs,
            "last_error": self.last_error,
            "gate": self.gate,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
            "switched_at": self.switched_at,
        }


def open_migration(conn: sqlite3.Connection) -> Migration | None:
    """The migration still building or refused by the gate, if any."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM space_migrations WHERE state IN ('building', 'gate_failed')"
        " ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return Migration.from_row(row) if row else None


def migration_by_id(conn: sqlite3.Connection, mid: int) -> Migration | None:
    """One migration by its id."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM space_migrations WHERE id = ?", (mid,)).fetchone()
    return Migration.from_row(row) if row else None


def last_switch(conn: sqlite3.Connection) -> Migration | None:
    """The most recent migration that switched the active space."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM space_migrations WHERE state = 'switched'"
        " ORDER BY switched_at DESC, id DESC LIMIT 1"
    ).fetchone()
    return Migration.from_row(row) if row else None


def history(conn: sqlite3.Connection, limit: int = 10) -> list[Migration]:
    """The latest migrations, newest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM space_migrations ORDER BY id DESC LIMIT ?", (limit,)
    ).fetchall()
    return [Migration.from_row(r) for r in rows]


def start_migration(
    conn: sqlite3.Connection,
    *,
    embedder: str,
    from_embedder: str | None,
    to_model: str,
    to_dim: int,
    keep_old: bool,
    clock: str,
) -> Migration:
    """Record a new building migration from the active space (the caller holds the lock)."""
    from memhtml.index.embedding import stored_space

    model, dim, _ = stored_space(conn)
    cur = conn.execute(
        "INSERT INTO space_migrations (embedder, from_embedder, from_model, from_dim, to_model,"
        " to_dim, state, keep_old, started_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 'building', ?, ?, ?)",
        (embedder, from_embedder, model, dim, to_model, to_dim, int(keep_old), clock, clock),
    )
    made = migration_by_id(conn, int(cur.lastrowid or 0))
    assert made is not None
    return made


def update_migration(conn: sqlite3.Connection, mid: int, clock: str, **fields: Any) -> None:
    """Set some columns of a migration and stamp `updated_at`."""
    allowed = {"state", "keep_old", "last_error", "gate", "runs", "switched_at", "embedder"}
    unknown = set(fields) - allowed - {"add_embedded"}
    if unknown:
        raise ValueError(f"not a migration column: {sorted(unknown)}")
    sets = ["updated_at = ?"]
    params: list[Any] = [clock]
    for name, value in fields.items():
        sets.append("embedded = embedded + ?" if name == "add_embedded" else f"{name} = ?")
        if name == "gate" and value is not None:
            params.append(json.dumps(value, sort_keys=True))
        elif name == "keep_old":
            params.append(int(value))
        else:
            params.append(value)
    conn.execute(f"UPDATE space_migrations SET {', '.join(sets)} WHERE id = ?", (*params, mid))


def missing_chunks(
    conn: sqlite3.Connection, model: str, dim: int, *, after: str = "", limit: int = 256
) -> list[tuple[str, str, str]]:
    """(chunk_id, content_hash, text) of live chunks lacking a vector in the space, by chunk id.

    `after` continues from the last chunk id of the previous page, so a pass
    over a large store reads each chunk once.
    """
    return [
        (str(r[0]), str(r[1]), str(r[2]))
        for r in conn.execute(
            "SELECT c.chunk_id, min(c.content_hash), min(c.text) FROM chunks c"
            f" WHERE c.chunk_id > ? AND {_MISSING} GROUP BY c.chunk_id ORDER BY c.chunk_id LIMIT ?",
            (after, model, dim, limit),
        )
    ]


def missing_estimate(conn: sqlite3.Connection, model: str, dim: int) -> dict[str, int]:
    """What remains to embed into the space: chunks, the memories holding them, text bytes."""
    row = conn.execute(
        "SELECT count(*), coalesce(sum(bytes), 0) FROM (SELECT c.chunk_id,"
        " length(CAST(min(c.text) AS BLOB)) AS bytes FROM chunks c"
        f" WHERE {_MISSING} GROUP BY c.chunk_id)",
        (model, dim),
    ).fetchone()
    files = conn.execute(
        f"SELECT count(DISTINCT c.path) FROM chunks c WHERE {_MISSING}", (model, dim)
    ).fetchone()[0]
    return {"chunks": int(row[0]), "memories": int(files), "text_bytes": int(row[1])}


def live_chunks(conn: sqlite3.Connection) -> int:
    """Distinct chunk ids in the index."""
    return int(conn.execute("SELECT count(DISTINCT chunk_id) FROM chunks").fetchone()[0])


def store_vectors(
    conn: sqlite3.Connection,
    model: str,
    dim: int,
    rows: Iterable[tuple[str, str, bytes]],
    clock: str,
) -> int:
    """Insert (chunk_id, content_hash, vector blob) rows of the space (the caller's transaction)."""
    cur = conn.executemany(
        "INSERT OR REPLACE INTO space_vectors (model, dim, chunk_id, content_hash, vector,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?)",
        [(model, dim, cid, chash, blob, clock) for cid, chash, blob in rows],
    )
    return int(cur.rowcount)


def drop_space(conn: sqlite3.Connection, model: str, dim: int) -> int:
    """Delete a parked or half-built space (the caller's transaction); rows deleted."""
    cur = conn.execute("DELETE FROM space_vectors WHERE model = ? AND dim = ?", (model, dim))
    return int(cur.rowcount)


def parked_spaces(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every space held beside the active one, with its row count."""
    return [
        {"space": f"{m}@{d}", "model": m, "dim": d, "vectors": n}
        for m, d, n in conn.execute(
            "SELECT model, dim, count(*) FROM space_vectors GROUP BY model, dim ORDER BY model, dim"
        )
    ]


def switch_space(conn: sqlite3.Connection, migration: Migration, *, epoch: str, clock: str) -> int:
    """Make the migration's space the active one; inside the caller's write transaction.

    Returns the number of live chunks still lacking a vector in the target
    space: when it is not 0 nothing was changed (the caller embeds them and
    calls again). Otherwise the switch is done when the caller commits.
    """
    from memhtml.index.embedding import stored_space

    model, dim = migration.to_model, migration.to_dim
    missing = conn.execute(
        f"SELECT count(*) FROM (SELECT DISTINCT c.chunk_id FROM chunks c WHERE {_MISSING})",
        (model, dim),
    ).fetchone()[0]
    if missing:
        return int(missing)
    old_model, old_dim, _ = stored_space(conn)
    if migration.keep_old and old_model is not None:
        conn.execute(
            "INSERT OR REPLACE INTO space_vectors (model, dim, chunk_id, content_hash, vector,"
            " created_at) SELECT model, dim, chunk_id, content_hash, vector, created_at"
            " FROM embeddings"
        )
    conn.execute("DELETE FROM embeddings")
    conn.execute(
        "INSERT INTO embeddings (chunk_id, content_hash, model, dim, vector, created_at)"
        " SELECT s.chunk_id, s.content_hash, s.model, s.dim, s.vector, s.created_at"
        " FROM space_vectors s WHERE s.model = ? AND s.dim = ?"
        " AND s.chunk_id IN (SELECT chunk_id FROM chunks) ORDER BY s.chunk_id",
        (model, dim),
    )
    drop_space(conn, model, dim)
    conn.execute(
        "UPDATE index_state SET embed_model = ?, embed_dim = ?, vector_epoch = ? WHERE id = 1",
        (model, dim, epoch),
    )
    conn.execute(
        "UPDATE space_migrations SET state = 'switched', switched_at = ?, updated_at = ?,"
        " from_model = ?, from_dim = ?, last_error = NULL WHERE id = ?",
        (clock, clock, old_model, old_dim, migration.id),
    )
    return 0
