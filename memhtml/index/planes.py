"""Opening the planes (`connect`), and planes another build of memhtml left in `.memhtml/`:
detected, set aside, usage imported.

A `.memhtml/` written by another build of memhtml (the TypeScript original
shares our ledger's name and some of its file names, but not its schema; a
newer build has migrations this one lacks) is never migrated over. A plane is
ours when its header carries our application id and its ledger names only our
migrations, in order; an unstamped file is ours when its tables have exactly
the columns our ledger's migrations create. Anything else is set aside as
`<plane>.db-foreign-<UTC stamp>` (a log line on stderr says so) and recreated:
the index is then rebuilt by the normal path (no watermark means the next
update is a rebuild), and the usage rows a foreign state plane holds that we
can recognise (a path with an access count) are imported into ours. A JSON
report lies next to each set-aside file; `set_aside_planes` lists them.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.errors import StorageError
from memhtml.contracts.logs import get_logger
from memhtml.contracts.paths import is_memory_path
from memhtml.index.db import (
    APPLICATION_ID,
    BUSY_TIMEOUT_MS,
    FOREIGN_INFIX,
    PLANES,
    migrate,
    migration_files,
    open_planes,
    split_statements,
    write_transaction,
)
from memhtml.telemetry import traced

log = get_logger("memhtml.index")
_SCHEMA_OF: Final = {"index": "main", "state": "state"}
_UNREADABLE: Final = ("not a database", "malformed", "unsupported file format")


@traced("memhtml.sqlite.open")
def connect(index_path: Path, state_path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    """Open index.db with state.db attached as `state`, configured and migrated.

    Unless read-only, a plane another build of memhtml left is set aside and
    recreated first (module docstring), and a set-aside state plane's usage
    rows are imported once ours exists.
    """
    index_path.parent.mkdir(parents=True, exist_ok=True)
    paths = {"index": index_path, "state": state_path}
    try:
        if not read_only:
            _set_aside_foreign(paths, lambda plane, path: _foreign_reason(path, plane))
        conn = open_planes(index_path, state_path)
        if read_only:
            return conn
        newer = {plane: why for plane in PLANES if (why := _ledger_reason(conn, plane))}
        if newer:
            conn.close()
            _set_aside_foreign(
                {plane: paths[plane] for plane in newer},
                lambda plane, path: _foreign_reason(path, plane, trust_stamp=False),
            )
            conn = open_planes(index_path, state_path)
        migrate(conn)
        _stamp(conn)
        _finish_imports(conn, state_path)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open the index at {index_path}: {exc}") from exc
    return conn


# -- planes another build left -------------------------------------------------------
def _header_application_id(path: Path) -> int | None:
    """The application id in a database file's header (None: no file, or not SQLite)."""
    try:
        with path.open("rb") as fh:
            header = fh.read(100)
    except OSError:
        return None
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return None
    return int.from_bytes(header[68:72], "big")


@functools.lru_cache(maxsize=16)
def _reference_columns(plane: str, names: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Table -> sorted columns our migrations `names` create (applied to an in-memory database)."""
    files = {p.name: p for p in migration_files(plane)}
    schema = _SCHEMA_OF[plane]
    ref = sqlite3.connect(":memory:", isolation_level=None)
    try:
        ref.execute("ATTACH DATABASE ':memory:' AS state")
        for name in names:
            for statement in split_statements(files[name].read_text(encoding="utf-8")):
                ref.execute(statement)
        return _columns(ref, schema)
    finally:
        ref.close()


def _columns(conn: sqlite3.Connection, schema: str) -> dict[str, tuple[str, ...]]:
    tables = [
        str(r[0])
        for r in conn.execute(
            f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'"
        )
    ]
    return {
        t: tuple(sorted(str(r[1]) for r in conn.execute(f"PRAGMA {schema}.table_info('{t}')")))
        for t in tables
    }


def _ledger_problem(plane: str, applied: list[str]) -> str | None:
    ours = [p.name for p in migration_files(plane)]
    unknown = [n for n in applied if n not in ours]
    if unknown:
        return (
            f"its migration ledger names {len(unknown)} migration(s) this build does not have"
            f" ({', '.join(unknown[:3])}): another build of memhtml, or a newer one"
        )
    if applied != ours[: len(applied)]:
        return "its migration ledger is not a prefix of this build's migrations"
    return None


def _ledger_reason(conn: sqlite3.Connection, plane: str) -> str | None:
    """Why an open plane's ledger is not ours (the fast check for a stamped file)."""
    schema = _SCHEMA_OF[plane]
    if not conn.execute(
        f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone():
        return None
    applied = sorted(
        str(r[0]) for r in conn.execute(f"SELECT name FROM {schema}.schema_migrations")
    )
    return _ledger_problem(plane, applied)


def _foreign_reason(path: Path, plane: str, *, trust_stamp: bool = True) -> str | None:
    """Why the database at `path` is not a (possibly older) `plane` of this build; None if it is."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    app_id = _header_application_id(path)
    if trust_stamp and app_id == APPLICATION_ID:
        return None  # ours; the open connection still checks the ledger (_ledger_reason)
    if app_id is None:
        return "it is not an SQLite database"
    raw = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        app_id = int(raw.execute("PRAGMA application_id").fetchone()[0])
        if trust_stamp and app_id == APPLICATION_ID:
            return None  # stamped in a WAL not yet folded into the file's header
        actual = _columns(raw, "main")
        ledger = raw.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        if ledger is None:
            return (
                f"it has tables ({', '.join(sorted(actual)[:4])}) but no migration ledger"
                if actual
                else None
            )
        ledger_cols = {str(r[1]) for r in raw.execute("PRAGMA table_info('schema_migrations')")}
        if ledger_cols != {"name", "applied_at"}:
            return "its migration ledger has other columns than this build's"
        applied = sorted(str(r[0]) for r in raw.execute("SELECT name FROM schema_migrations"))
    except sqlite3.DatabaseError as exc:
        if any(word in str(exc) for word in _UNREADABLE):
            return f"this SQLite cannot read it ({exc})"
        raise
    finally:
        raw.close()
    problem = _ledger_problem(plane, applied)
    if problem is not None:
        return problem
    if app_id not in (0, APPLICATION_ID):
        return f"its application id {app_id:#x} is not memhtml's"
    reference = _reference_columns(plane, tuple(applied))
    for table, columns in sorted(reference.items()):  # a table of another shape says most
        if table in actual and actual[table] != columns:
            extra = sorted(set(actual[table]) - set(columns))
            missing = sorted(set(columns) - set(actual[table]))
            return (
                f"table {table} is not this build's (missing columns: {', '.join(missing) or '-'};"
                f" other columns: {', '.join(extra) or '-'})"
            )
    absent = sorted(set(reference) - set(actual))
    return f"its ledger's migrations did not create {', '.join(absent[:4])}" if absent else None


@contextmanager
def _planes_lock(folder: Path) -> Iterator[None]:
    """Serializes setting planes aside between processes opening the same `.memhtml/`."""
    with (folder / "planes.lock").open("a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _stamp_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _sidecar(moved: Path) -> Path:
    return moved.with_name(moved.name + ".json")


def _set_aside_foreign(paths: dict[str, Path], reason_of: Any) -> None:
    """Move every plane `reason_of` calls foreign out of the way (under the planes lock)."""
    reasons = {plane: why for plane, path in paths.items() if (why := reason_of(plane, path))}
    if not reasons:
        return
    folder = next(iter(paths.values())).parent
    with _planes_lock(folder):
        for plane, path in paths.items():
            if plane in reasons and (why := reason_of(plane, path)):  # re-checked under the lock
                _set_aside(plane, path, why)


def _set_aside(plane: str, path: Path, reason: str) -> Path:
    with contextlib.suppress(sqlite3.Error):  # fold a WAL into the file before it moves
        raw = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            raw.close()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = path.with_name(f"{path.name}{FOREIGN_INFIX}{stamp}")
    n = 2
    while moved.exists() or _sidecar(moved).exists():
        moved = path.with_name(f"{path.name}{FOREIGN_INFIX}{stamp}-{n}")
        n += 1
    if plane == "index":  # a projection: the latest copy is kept for inspection, older ones go
        for old in path.parent.glob(f"{path.name}{FOREIGN_INFIX}*"):
            old.unlink(missing_ok=True)
    report: dict[str, Any] = {
        "plane": plane,
        "original": path.name,
        "moved_to": moved.name,
        "reason": reason,
        "at": _stamp_now(),
        "status": "pending import" if plane == "state" else "set aside",
        "imported": {},
    }
    _sidecar(moved).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, moved.with_name(moved.name + suffix))
    os.replace(path, moved)
    if plane == "index":
        log.warning(
            "%s was written by another build of memhtml (%s); it is a projection, so it was set"
            " aside as %s and is rebuilt from the tree",
            path.name,
            reason,
            moved.name,
        )
    else:
        log.warning(
            "%s was written by another build of memhtml (%s); it was moved to %s (kept) and a new"
            " one created; the usage rows it holds that this build recognises are imported",
            path.name,
            reason,
            moved.name,
        )
    return moved


# Column names another build may give what our state.access holds.
_PATH_COLS: Final = ("path", "file_path", "memory_path", "filepath", "file")
_COUNT_COLS: Final = ("access_count", "accesses", "read_count", "times_accessed", "hits", "count")
_LAST_COLS: Final = (
    "last_accessed_at",
    "last_accessed",
    "last_access",
    "accessed_at",
    "last_read_at",
)
_OPTIONAL_COLS: Final = ("reinforcement_count", "outcome_score", "last_reinforced_at", "updated_at")
_EDGE_COUNT_COLS: Final = ("count", "detections", "corroborations")


def _pick(columns: set[str], names: tuple[str, ...]) -> str | None:
    return next((n for n in names if n in columns), None)


def _time_sql(column: str) -> str:
    """A stored time (ISO text, or epoch seconds or milliseconds) in our strict UTC form."""
    c = f'"{column}"'
    return (
        f"CASE WHEN typeof({c}) IN ('integer','real') THEN strftime('%Y-%m-%dT%H:%M:%SZ',"
        f" CASE WHEN {c} > 1e11 THEN {c} / 1000.0 ELSE {c} END, 'unixepoch')"
        f" ELSE strftime('%Y-%m-%dT%H:%M:%SZ', {c}) END"
    )


def _import_state(conn: sqlite3.Connection, moved: Path) -> dict[str, Any]:
    """Copy recognisable usage rows from a set-aside state plane into ours (idempotent)."""
    out: dict[str, Any] = {"access": 0, "edge_corroboration": 0, "skipped_rows": 0}
    try:
        conn.execute("ATTACH DATABASE ? AS foreign_state", (str(moved),))
    except sqlite3.Error as exc:
        out["error"] = f"cannot read it: {exc}"
        return out
    try:
        tables = _columns(conn, "foreign_state")
    except sqlite3.DatabaseError as exc:
        conn.execute("DETACH DATABASE foreign_state")
        out["error"] = f"cannot read it: {exc}"
        return out
    now = _stamp_now()
    try:
        with write_transaction(conn):  # all or nothing; a failure is reported, never raised
            access = sorted(
                (
                    t
                    for t, cols in tables.items()
                    if _pick(set(cols), _PATH_COLS) and _pick(set(cols), _COUNT_COLS)
                ),
                key=lambda t: (t != "access", "access" not in t, t),
            )
            if access:
                out.update(_import_access(conn, access[0], set(tables[access[0]]), now))
            edges = tables.get("edge_corroboration")
            if edges and {"src_path", "dst_path", "rel"} <= set(edges):
                out["edge_corroboration"] = _import_edges(conn, set(edges), now)
    except sqlite3.Error as exc:
        out = {"access": 0, "edge_corroboration": 0, "skipped_rows": 0, "error": str(exc)}
    finally:
        conn.execute("DETACH DATABASE foreign_state")
    return out


def _import_access(
    conn: sqlite3.Connection, table: str, columns: set[str], now: str
) -> dict[str, Any]:
    path_col, count_col = _pick(columns, _PATH_COLS), _pick(columns, _COUNT_COLS)
    last_col = _pick(columns, _LAST_COLS)
    select = [
        f'"{path_col}"',
        f'CAST("{count_col}" AS INTEGER)',
        _time_sql(last_col) if last_col else "NULL",
    ]
    casts = {"reinforcement_count": "INTEGER", "outcome_score": "REAL"}  # text becomes 0
    select += [
        "NULL"
        if c not in columns
        else _time_sql(c)
        if c.endswith("_at")
        else f'CAST("{c}" AS {casts[c]})'
        for c in _OPTIONAL_COLS
    ]
    rows = conn.execute(f'SELECT {", ".join(select)} FROM foreign_state."{table}"').fetchall()
    taken, skipped = 0, 0
    for raw_path, count, last, reinf, outcome, last_reinf, updated in rows:
        path = str(raw_path or "").lstrip("/")
        if not is_memory_path(path) or count is None or count < 0:
            skipped += 1
            continue
        conn.execute(
            "INSERT INTO state.access (path, access_count, reinforcement_count, outcome_score,"
            " last_accessed_at, last_reinforced_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (path) DO UPDATE SET"
            " access_count = max(access_count, excluded.access_count),"
            " reinforcement_count = max(reinforcement_count, excluded.reinforcement_count),"
            " last_accessed_at = max(coalesce(last_accessed_at, ''),"
            " coalesce(excluded.last_accessed_at, '')),"
            " updated_at = excluded.updated_at",
            (
                path,
                int(count),
                max(0, int(reinf or 0)),
                min(1.0, max(-1.0, float(outcome or 0.0))),
                last,
                last_reinf,
                updated or now,
            ),
        )
        taken += 1
    conn.execute("UPDATE state.access SET last_accessed_at = NULL WHERE last_accessed_at = ''")
    return {"access": taken, "skipped_rows": skipped, "access_table": table}


def _import_edges(conn: sqlite3.Connection, columns: set[str], now: str) -> int:
    count_col = _pick(columns, _EDGE_COUNT_COLS)
    count = f'max(1, CAST("{count_col}" AS INTEGER))' if count_col else "1"
    first = _time_sql("first_seen") if "first_seen" in columns else None
    last = _time_sql("last_seen") if "last_seen" in columns else None
    fallback = _time_sql("updated_at") if "updated_at" in columns else None
    first_sql = f"coalesce({first or 'NULL'}, {fallback or 'NULL'}, :now)"
    last_sql = f"coalesce({last or 'NULL'}, {fallback or 'NULL'}, :now)"
    cur = conn.execute(
        "INSERT OR IGNORE INTO state.edge_corroboration (src_path, dst_path, rel, count,"
        f" first_seen, last_seen) SELECT src_path, dst_path, rel, {count}, {first_sql}, {last_sql}"
        " FROM foreign_state.edge_corroboration"
        " WHERE src_path IS NOT NULL AND dst_path IS NOT NULL AND rel IS NOT NULL",
        {"now": now},
    )
    return max(cur.rowcount, 0)


def _finish_imports(conn: sqlite3.Connection, state_path: Path) -> None:
    """Import every set-aside state plane whose report still says `pending import`."""
    pattern = f"{state_path.name}{FOREIGN_INFIX}*.json"
    pending = [p for p in state_path.parent.glob(pattern) if '"pending import"' in p.read_text()]
    if not pending:
        return
    with _planes_lock(state_path.parent):
        for report_path in pending:
            report = json.loads(report_path.read_text(encoding="utf-8"))
            if report.get("status") != "pending import":
                continue  # another process finished it
            moved = state_path.with_name(report["moved_to"])
            if not moved.exists():
                report_path.unlink(missing_ok=True)  # the move never happened
                continue
            report["imported"] = _import_state(conn, moved)
            report["status"] = "imported"
            report_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            log.warning(
                "imported %d access row(s) and %d edge corroboration(s) from %s into %s%s",
                report["imported"].get("access", 0),
                report["imported"].get("edge_corroboration", 0),
                moved.name,
                state_path.name,
                f" ({report['imported']['error']})" if "error" in report["imported"] else "",
            )


def _stamp(conn: sqlite3.Connection) -> None:
    for schema in ("main", "state"):
        if conn.execute(f"PRAGMA {schema}.application_id").fetchone()[0] != APPLICATION_ID:
            conn.execute(f"PRAGMA {schema}.application_id = {APPLICATION_ID}")


def set_aside_planes(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """The reports of planes another build left that were set aside (for doctor and status)."""
    files = {str(r[1]): str(r[2]) for r in conn.execute("PRAGMA database_list") if r[2]}
    out: list[dict[str, Any]] = []
    for schema in ("main", "state"):
        if schema not in files:
            continue
        path = Path(files[schema])
        for report in sorted(path.parent.glob(f"{path.name}{FOREIGN_INFIX}*.json")):
            with contextlib.suppress(OSError, ValueError):
                out.append(json.loads(report.read_text(encoding="utf-8")))
    return out
