"""The two planes' connection, its transactions and the migration runner.

`index.db` (schema main) is a projection of the tree; `state.db` (schema
state) holds what git cannot reproduce. Both are opened on one connection so
the salience arm can LEFT JOIN state.access in the same statement.

Callers open that connection with `memhtml.index.planes.connect`, which first
sets aside planes another build of memhtml left; this module is the layer
below it and imports nothing of `planes`.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import StorageError
from memhtml.domain.rrf import rrf_contribution_sql
from memhtml.telemetry import span

BUSY_TIMEOUT_MS: Final = 5000
# Stamped in both planes' headers (PRAGMA application_id) once their schema is known to be ours.
APPLICATION_ID: Final = 0x6D68746D  # "mhtm"
FOREIGN_INFIX: Final = (
    "-foreign-"  # `index.db-foreign-...` matches the `.memhtml/index.db-*` ignore
)
INDEX_LEDGER: Final = "main.schema_migrations"
STATE_LEDGER: Final = "state.schema_migrations"
PLANES: Final[dict[str, tuple[str, str]]] = {
    # plane -> (migration folder, ledger table)
    "index": ("index", INDEX_LEDGER),
    "state": ("state", STATE_LEDGER),
}


@functools.cache  # the installation does not move while a process runs
def migrations_dir() -> Path:
    """The shipped migrations: inside the wheel, or the source checkout's top-level folder."""
    # The package's own folder, not importlib.resources: that module and its readers would
    # load at every cold CLI start, and a wheel is installed unzipped.
    here = Path(__file__).resolve()
    packaged = here.parents[1] / "_migrations"
    if packaged.is_dir():
        return packaged
    source = here.parents[2] / "migrations"
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


def open_planes(index_path: Path, state_path: Path) -> sqlite3.Connection:
    """index.db with state.db attached as `state`, configured; no migration, no checks
    (`memhtml.index.planes.connect` is the door every caller uses)."""
    conn = sqlite3.connect(
        str(index_path),
        isolation_level=None,
        timeout=BUSY_TIMEOUT_MS / 1000,
        check_same_thread=False,
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        _configure(conn, "main")
        conn.execute("ATTACH DATABASE ? AS state", (str(state_path),))
        _configure(conn, "state")
        conn.create_function("vector_distance_cos", 2, _cosine_distance_blobs, deterministic=True)
        conn.create_function("memhtml_rrf", 3, rrf_contribution_sql, deterministic=True)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def _transaction(
    conn: sqlite3.Connection, begin: str, commit: Callable[[], object] | None = None
) -> Iterator[sqlite3.Connection]:
    with span("memhtml.sqlite.transaction", begin=begin):
        conn.execute(begin)
        try:
            yield conn
            if commit is None:
                conn.execute("COMMIT")
            else:
                commit()
        except BaseException:
            rollback_quietly(conn)  # a failed COMMIT (a full disk) leaves the transaction open
            raise


def rollback_quietly(conn: sqlite3.Connection) -> None:
    """ROLLBACK the open transaction unless SQLite already has: after SQLITE_FULL or an
    I/O error it may roll back by itself, and a second ROLLBACK would raise ("no
    transaction is active") over the error that matters."""
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def write_transaction(
    conn: sqlite3.Connection, *, commit: Callable[[], object] | None = None
) -> AbstractContextManager[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception; `commit`, when given,
    ends the transaction instead of a plain COMMIT (`commit_checkpointing_later`)."""
    return _transaction(conn, "BEGIN IMMEDIATE", commit)


def read_snapshot(conn: sqlite3.Connection) -> AbstractContextManager[sqlite3.Connection]:
    """Several reads in one transaction, so they see one state of the index (a writer that
    commits meanwhile is seen by the next snapshot); inside a transaction already, a no-op."""
    return nullcontext(conn) if conn.in_transaction else _transaction(conn, "BEGIN")


def watermark(conn: sqlite3.Connection) -> str | None:
    """The commit the index has caught up to (None: never built, or a rebuild is half-done)."""
    row = conn.execute("SELECT head_sha, rebuilding FROM index_state WHERE id = 1").fetchone()
    return None if row is None or row[1] else row[0]


def attached_schemas(conn: sqlite3.Connection) -> list[str]:
    """Names of the databases on this connection (main, state, ...)."""
    return [row[1] for row in conn.execute("PRAGMA database_list")]


# A write door or a rebuild that commits at least this many files checkpoints the WAL on a
# thread of its own instead of inside its COMMIT (`commit_checkpointing_later`).
LATER_CHECKPOINT_FILES: Final = 100


class Checkpoint:
    """A PASSIVE checkpoint of the index's WAL, on a thread with a connection of its own."""

    def __init__(self, path: str) -> None:
        import threading

        self.path = path
        self._thread = threading.Thread(target=self._run, name="memhtml-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        except (sqlite3.Error, OSError):
            return
        try:
            # PASSIVE waits for no reader or writer; what it cannot copy now, a later
            # automatic checkpoint or the last connection's close copies.
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except (sqlite3.Error, OSError):
            pass
        finally:
            conn.close()

    def join(self) -> None:
        """Wait until the checkpoint has ended."""
        self._thread.join()


def commit_checkpointing_later(conn: sqlite3.Connection) -> Checkpoint | None:
    """COMMIT the open transaction without SQLite's automatic checkpoint, then checkpoint
    on a thread (`Checkpoint`); None for an in-memory database.

    SQLite checkpoints inside the COMMIT that takes the WAL past its limit: for a
    large batch that is pages of copying and an fsync before the write returns.
    The commit's durability is the COMMIT's, as before;
    the checkpoint only moves pages from the WAL into the database file, and a
    kill in the middle of it loses nothing (SQLite redoes it). The caller joins the
    thread before it closes the connection (`Indexer.settle`).
    """
    (limit,) = conn.execute("PRAGMA wal_autocheckpoint").fetchone()
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        conn.execute("COMMIT")
    finally:
        conn.execute(f"PRAGMA wal_autocheckpoint = {int(limit)}")
    path = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")
    return Checkpoint(path) if path else None
