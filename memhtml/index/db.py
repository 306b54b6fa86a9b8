"""Connections to the two planes, and the migration runner.

`index.db` (schema main) is a projection of the tree; `state.db` (schema
state) holds what git cannot reproduce. Both are opened on one connection so
the salience arm can LEFT JOIN state.access in the same statement.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import StorageError
from memhtml.domain.rrf import rrf_contribution_sql

BUSY_TIMEOUT_MS: Final = 5000
INDEX_LEDGER: Final = "main.schema_migrations"
STATE_LEDGER: Final = "state.schema_migrations"
PLANES: Final[dict[str, tuple[str, str]]] = {
    # plane -> (migration folder, ledger table)
    "index": ("index", INDEX_LEDGER),
    "state": ("state", STATE_LEDGER),
}


def migrations_dir() -> Path:
    """The shipped migrations: inside the wheel, or the source checkout's top-level folder."""
    packaged = resources.files("memhtml") / "_migrations"
    if packaged.is_dir():
        return Path(str(packaged))
    source = Path(__file__).resolve().parents[2] / "migrations"
    if source.is_dir():
        return source
    raise StorageError("migrations are missing from the installation")


def migration_files(plane: str) -> list[Path]:
    """A plane's migration files in the order they apply (filename order)."""
    folder = migrations_dir() / PLANES[plane][0]
    return sorted(folder.glob("*.sql"), key=lambda p: p.name)


def _applied(conn: sqlite3.Connection, ledger: str) -> set[str]:
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {ledger} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    table = ledger.split(".", 1)[1]
    schema = ledger.split(".", 1)[0]
    return {row[0] for row in conn.execute(f"SELECT name FROM {schema}.{table}")}


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (trigger bodies stay whole)."""
    statements: list[str] = []
    buf = ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip().strip(";").strip():
                statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply every pending migration of both planes; each file and its ledger row commit together.

    The ledger is re-read under the write lock, so two processes opening a new
    database at once apply each file exactly once.
    """
    applied_now: list[str] = []
    for plane, (_, ledger) in PLANES.items():
        done = _applied(conn, ledger)
        for path in migration_files(plane):
            if path.name in done:
                continue
            statements = split_statements(path.read_text(encoding="utf-8"))
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            try:
                conn.execute("BEGIN IMMEDIATE")
                if conn.execute(f"SELECT 1 FROM {ledger} WHERE name = ?", (path.name,)).fetchone():
                    conn.execute("COMMIT")
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {ledger} (name, applied_at) VALUES (?, ?)", (path.name, stamp)
                )
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StorageError(f"migration {plane}/{path.name} failed: {exc}") from exc
            applied_now.append(f"{plane}/{path.name}")
    return applied_now


def _cosine_distance_blobs(a: bytes | None, b: bytes | None) -> float | None:
    # numpy loads on the first call, not on every connection (cold CLI start-up).
    from memhtml.domain.vectors import cosine_distance_blobs

    return cosine_distance_blobs(a, b)


def _configure(conn: sqlite3.Connection, schema: str) -> None:
    conn.execute(f"PRAGMA {schema}.journal_mode = WAL")
    conn.execute(f"PRAGMA {schema}.synchronous = NORMAL")


def connect(index_path: Path, state_path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """Open index.db with state.db attached as `state`, configured and migrated."""
    index_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(
            str(index_path),
            isolation_level=None,
            timeout=BUSY_TIMEOUT_MS / 1000,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        _configure(conn, "main")
        conn.execute("ATTACH DATABASE ? AS state", (str(state_path),))
        _configure(conn, "state")
        conn.create_function("vector_distance_cos", 2, _cosine_distance_blobs, deterministic=True)
        conn.create_function("memhtml_rrf", 3, rrf_contribution_sql, deterministic=True)
        if not read_only:
            migrate(conn)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open the index at {index_path}: {exc}") from exc
    return conn


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def watermark(conn: sqlite3.Connection) -> str | None:
    """The commit the index has caught up to (None: never built, or a rebuild is half-done)."""
    row = conn.execute("SELECT head_sha, rebuilding FROM index_state WHERE id = 1").fetchone()
    return None if row is None or row[1] else row[0]


def attached_schemas(conn: sqlite3.Connection) -> list[str]:
    """Names of the databases on this connection (main, state, ...)."""
    return [row[1] for row in conn.execute("PRAGMA database_list")]
