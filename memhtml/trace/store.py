"""The trace plane's database: `.memhtml/traces/traces.db`, its own SQLite file beside the index.

It is a projection of the transcripts (migrations/trace/T0001_traces.sql says
what each table holds), so anything wrong with the file itself (not SQLite,
written by a newer build, unreadable) is answered by deleting it and starting
over: the next `trace index` reads every transcript again. Its folder carries
a `.gitignore` of `*`: the plane holds transcript text and must never be
committed to the memory repository by a `git add -A`.

Migrations are `.sql` files under `migrations/trace/`, applied in filename
order, each with its ledger row in one transaction, as the index and state
planes' are (memhtml.index.db).

The read side (`sessions`, `session`, `turns`, `full_text`) is the API the
trace-consolidation sleep phase builds on: list settled sessions with their
file, size, mtime and turn counts, read a session's turns in order, and get a
turn's whole text back from the transcript when the stored copy was capped.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import astuple, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.dates import format_instant
from memhtml.contracts.errors import StorageError
from memhtml.index.db import BUSY_TIMEOUT_MS, migrations_dir, split_statements
from memhtml.trace.records import FileFacts, Problem, Turn
from memhtml.trace.watermark import Watermark

log = logging.getLogger("memhtml.trace")

PLANE_DIR: Final = "traces"
DB_NAME: Final = "traces.db"
LEDGER: Final = "schema_migrations"
FIRST_PROMPT_LIMIT: Final = 500
TURN_KINDS_COUNTED: Final = ("user", "assistant", "system", "attachment")
TURN_COLUMNS: Final = (
    "file_path",
    "session_id",
    "line_no",
    "byte_at",
    "kind",
    "role",
    "uuid",
    "parent_uuid",
    "prompt_id",
    "agent_id",
    "sidechain",
    "timestamp",
    "model",
    "tool_names",
    "tool_ids",
    "text",
    "text_chars",
    "raw",
)
_INSERT_TURN: Final = (
    f"INSERT INTO turns ({', '.join(TURN_COLUMNS)}) VALUES ({', '.join('?' * len(TURN_COLUMNS))})"
)
SESSION_COLUMNS: Final = (
    "session_id",
    "slug",
    "cwd",
    "git_branch",
    "entrypoint",
    "model",
    "version",
    "started_at",
    "ended_at",
    "prompt_count",
    "turn_count",
    "agent_count",
    "sidechain_turns",
    "first_prompt",
    "ai_title",
    "summary",
    "file_path",
    "file_size",
    "file_mtime",
    "files",
    "bytes",
)


def plane_path(memory_root: Path) -> Path:
    """Where a memory root keeps its trace plane."""
    return memory_root / ".memhtml" / PLANE_DIR / DB_NAME


def mtime_instant(mtime_ns: int) -> str:
    """A file mtime as the stored instant grammar (seconds, UTC)."""
    return format_instant(datetime.fromtimestamp(mtime_ns / 1e9, UTC))


@dataclass(frozen=True, slots=True)
class FileRow:
    """One `traces` row: a transcript file's watermark, counters and session facts."""

    file_path: str
    session_id: str
    kind: str
    agent_id: str | None
    slug: str
    size: int
    mtime_ns: int
    byte_off: int
    tail_fp: str
    lines: int
    records: int
    dropped: int
    skipped_type: int
    unknown_type: int
    cwd: str | None
    git_branch: str | None
    entrypoint: str | None
    version: str | None
    ai_title: str | None
    scanned_at: str

    @property
    def watermark(self) -> Watermark:
        """Where the last scan stopped."""
        return Watermark(self.size, self.mtime_ns, self.byte_off, self.tail_fp)

    @property
    def facts(self) -> FileFacts:
        """The session facts its records gave so far."""
        return FileFacts(self.cwd, self.git_branch, self.entrypoint, self.version, self.ai_title)


_FILE_COLUMNS: Final = tuple(FileRow.__dataclass_fields__)
_FILE_UPDATE: Final = ", ".join(f"{c} = excluded.{c}" for c in _FILE_COLUMNS[1:])


# The first migration of a plane whose text is redacted: an older plane is discarded whole.
REDACTED_FROM: Final = "T0002_redacted.sql"


def _migration_files() -> list[Path]:
    return sorted((migrations_dir() / "trace").glob("*.sql"), key=lambda p: p.name)


def _foreign(conn: sqlite3.Connection) -> str | None:
    """Why an open trace plane is not one this build can use, or None."""
    has_ledger = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (LEDGER,)
    ).fetchone()
    if not has_ledger:
        tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()
        return "it has tables but no migration ledger" if tables[0] else None
    applied = [r[0] for r in conn.execute(f"SELECT name FROM {LEDGER} ORDER BY name")]
    ours = [p.name for p in _migration_files()]
    if applied != ours[: len(applied)]:
        return "its migrations are not this build's (another or a newer memhtml)"
    if applied and REDACTED_FROM not in applied:
        return "it was built before transcript text was redacted (it may hold credentials)"
    return None


def _inspect(path: Path) -> str | None:
    """Why the file at `path` cannot serve as this build's plane; None when it can (or is new)."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    raw = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        return _foreign(raw)
    except sqlite3.DatabaseError as exc:
        return f"SQLite cannot read it ({exc})"
    finally:
        raw.close()


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute(f"CREATE TABLE IF NOT EXISTS {LEDGER} (name TEXT PRIMARY KEY, applied_at TEXT)")
    for path in _migration_files():
        statements = split_statements(path.read_text(encoding="utf-8"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute(f"SELECT 1 FROM {LEDGER} WHERE name = ?", (path.name,)).fetchone():
                conn.execute("COMMIT")
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute(f"INSERT INTO {LEDGER} VALUES (?, ?)", (path.name, stamp))
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise StorageError(f"migration trace/{path.name} failed: {exc}") from exc


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _remove(path: Path) -> None:
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with suppress(FileNotFoundError):
            p.unlink()


class TraceStore:
    """A connection to one trace plane, migrated; write helpers for the scan, reads for the rest."""

    def __init__(self, conn: sqlite3.Connection, path: Path, reset: str | None = None) -> None:
        self.conn = conn
        self.path = path
        self.reset = reset  # why a previous file was discarded on open, if it was

    @classmethod
    def open(cls, path: Path) -> TraceStore:
        """Open (creating and migrating) the plane at `path`; a foreign file is replaced."""
        path.parent.mkdir(parents=True, exist_ok=True)
        ignore = path.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text(
                "# memhtml: the trace plane holds transcript text; never commit it\n*\n"
            )
        try:
            reset = _inspect(path)
            if reset is not None:
                log.warning("trace plane %s discarded: %s", path, reset)
                _remove(path)
            conn = _connect(path)
            _migrate(conn)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the trace plane at {path}: {exc}") from exc
        return cls(conn, path, reset)

    @classmethod
    def open_existing(cls, path: Path) -> TraceStore | None:
        """The plane at `path` if one was ever built, else None (reads never create it)."""
        if not path.is_file():
            return None
        return cls.open(path)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the scan's writes -------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def files(self) -> dict[str, FileRow]:
        """Every file the plane knows, by path."""
        cur = self.conn.execute(f"SELECT {', '.join(_FILE_COLUMNS)} FROM traces")
        return {row[0]: FileRow(*row) for row in cur}

    def clear_file(self, file_path: str) -> None:
        """Forget a file's turns and problems (its row stays, to be overwritten)."""
        self.conn.execute("DELETE FROM turns WHERE file_path = ?", (file_path,))
        self.conn.execute("DELETE FROM trace_problems WHERE file_path = ?", (file_path,))

    def delete_file(self, file_path: str) -> None:
        """Forget a file entirely."""
        self.clear_file(file_path)
        self.conn.execute("DELETE FROM traces WHERE file_path = ?", (file_path,))

    def put_file(self, row: FileRow) -> None:
        """Insert or replace a file's row (before its turns: they reference it)."""
        # An upsert, not INSERT OR REPLACE: a replace deletes the row, and the
        # foreign key would take the file's turns with it.
        self.conn.execute(
            f"INSERT INTO traces ({', '.join(_FILE_COLUMNS)})"
            f" VALUES ({', '.join('?' * len(_FILE_COLUMNS))})"
            f" ON CONFLICT (file_path) DO UPDATE SET {_FILE_UPDATE}",
            astuple(row),
        )

    def add_turns(self, file_path: str, session_id: str, turns: Sequence[Turn]) -> None:
        """Insert turns of one file."""
        self.conn.executemany(
            _INSERT_TURN,
            [
                (
                    file_path,
                    session_id,
                    t.line_no,
                    t.byte_at,
                    t.kind,
                    t.role,
                    t.uuid,
                    t.parent_uuid,
                    t.prompt_id,
                    t.agent_id,
                    int(t.sidechain),
                    t.timestamp,
                    t.model,
                    t.tool_names,
                    t.tool_ids,
                    t.text,
                    t.text_chars,
                    t.raw,
                )
                for t in turns
            ],
        )

    def index_text(self, file_path: str, from_line: int) -> None:
        """Add the text of a file's turns from `from_line` on to the FTS table, in one statement.

        Called once per file read, after its turns are in: a bulk INSERT ... SELECT
        costs a third of a per-row trigger (the delete side is a trigger).
        """
        self.conn.execute(
            "INSERT INTO turns_fts (rowid, text) SELECT id, text FROM turns"
            " WHERE file_path = ? AND line_no >= ? AND text <> ''",
            (file_path, from_line),
        )

    def add_problems(self, file_path: str, problems: Iterable[Problem]) -> None:
        """Record lines that could not be read."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO trace_problems (file_path, line_no, byte_at, reason, detail)"
            " VALUES (?, ?, ?, ?, ?)",
            [(file_path, p.line_no, p.byte_at, p.reason, p.detail) for p in problems],
        )

    def refresh_session(self, session_id: str) -> None:
        """Recompute a session's row from its files and turns (deleted when none is left).

        Computed from the rows alone, never merged by hand, so a session read in
        many tails equals the same session read in one pass.
        """
        c = self.conn
        files = c.execute(
            "SELECT file_path, kind, slug, size, mtime_ns, cwd, git_branch, entrypoint, version,"
            " ai_title FROM traces WHERE session_id = ? ORDER BY kind <> 'session', file_path",
            (session_id,),
        ).fetchall()
        if not files:
            c.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            return
        main = files[0]

        def first(i: int) -> Any:
            return next((f[i] for f in files if f[i]), None)

        kinds = ", ".join(f"'{k}'" for k in TURN_KINDS_COUNTED)
        agg = c.execute(
            "SELECT min(timestamp), max(timestamp), count(DISTINCT prompt_id),"
            f" sum(uuid IS NOT NULL AND kind IN ({kinds})), sum(sidechain)"
            " FROM turns WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        model = c.execute(
            "SELECT model FROM turns WHERE session_id = ? AND model IS NOT NULL"
            " AND model <> '<synthetic>' GROUP BY model ORDER BY count(*) DESC, model LIMIT 1",
            (session_id,),
        ).fetchone()
        prompt = c.execute(
            "SELECT text FROM turns WHERE session_id = ? AND role = 'user' AND text <> ''"
            " ORDER BY file_path <> ?, file_path, line_no LIMIT 1",
            (session_id, main[0]),
        ).fetchone()
        summary = c.execute(
            "SELECT text FROM turns WHERE file_path = ? AND role = 'summary'"
            " ORDER BY line_no DESC LIMIT 1",
            (main[0],),
        ).fetchone()
        agents = c.execute(
            "SELECT count(*) FROM (SELECT agent_id FROM turns WHERE session_id = ?"
            " AND agent_id IS NOT NULL UNION SELECT agent_id FROM traces WHERE session_id = ?"
            " AND agent_id IS NOT NULL)",
            (session_id, session_id),
        ).fetchone()[0]
        values = (
            session_id,
            main[2],
            first(5),
            first(6),
            first(7),
            model[0] if model else None,
            first(8),
            agg[0],
            agg[1],
            agg[2] or 0,
            agg[3] or 0,
            agents,
            agg[4] or 0,
            " ".join(prompt[0].split())[:FIRST_PROMPT_LIMIT] if prompt else "",
            first(9),
            summary[0] if summary else None,
            main[0],
            main[3],
            mtime_instant(main[4]),
            len(files),
            sum(f[3] for f in files),
        )
        c.execute(
            f"INSERT OR REPLACE INTO sessions ({', '.join(SESSION_COLUMNS)})"
            f" VALUES ({', '.join('?' * len(SESSION_COLUMNS))})",
            values,
        )

    def set_meta(self, key: str, value: str) -> None:
        """Remember one scan fact (the root scanned, when)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO trace_meta (key, value) VALUES (?, ?)", (key, value)
        )

    def meta(self) -> dict[str, str]:
        """Every scan fact."""
        return {k: v for k, v in self.conn.execute("SELECT key, value FROM trace_meta")}

    # -- reads -------------------------------------------------------------------------
    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self.conn.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    def sessions(
        self,
        *,
        since: str | None = None,
        modified_before: str | None = None,
        min_bytes: int = 0,
        cwd: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Sessions, most recently modified first (then by id).

        `since` bounds `started_at` from below; `modified_before` bounds the main
        transcript's mtime from above (a settled session); `min_bytes` its size.
        """
        where: list[str] = ["file_size >= ?"]
        params: list[Any] = [min_bytes]
        if since:
            where.append("started_at >= ?")
            params.append(since)
        if modified_before:
            where.append("file_mtime < ?")
            params.append(modified_before)
        if cwd:
            where.append("cwd = ?")
            params.append(cwd)
        sql = (
            f"SELECT * FROM sessions WHERE {' AND '.join(where)}"
            " ORDER BY file_mtime DESC, session_id"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self._rows(sql, params)

    def session(self, session_id: str) -> dict[str, Any] | None:
        """One session's row, or None."""
        rows = self._rows("SELECT * FROM sessions WHERE session_id = ?", (session_id,))
        return rows[0] if rows else None

    def session_ids(self, prefix: str) -> set[str]:
        """The indexed sessions whose id starts with `prefix` (exactly `prefix` included)."""
        rows = self.conn.execute(
            "SELECT session_id FROM sessions WHERE session_id >= ? AND session_id < ?",
            (prefix, prefix + "\U0010ffff"),
        )
        return {str(sid) for (sid,) in rows if str(sid).startswith(prefix)}

    def session_files(self, session_id: str) -> list[dict[str, Any]]:
        """A session's transcript files: the main one first, then its subagents'."""
        return self._rows(
            "SELECT * FROM traces WHERE session_id = ? ORDER BY kind <> 'session', file_path",
            (session_id,),
        )

    def turns(
        self,
        session_id: str,
        *,
        roles: Sequence[str] | None = None,
        sidechains: bool = True,
    ) -> list[dict[str, Any]]:
        """A session's rows in reading order: the main transcript's lines, then each sidecar's."""
        where, params = ["t.session_id = ?"], [session_id]
        if roles:
            where.append(f"t.role IN ({', '.join('?' * len(roles))})")
            params += list(roles)
        if not sidechains:
            where.append("t.sidechain = 0")
        return self._rows(
            "SELECT t.* FROM turns t JOIN traces f ON f.file_path = t.file_path"
            f" WHERE {' AND '.join(where)}"
            " ORDER BY f.kind <> 'session', t.file_path, t.line_no",
            params,
        )

    def full_text(self, turn: dict[str, Any]) -> str:
        """A turn's whole text: the stored copy, or the transcript's line when that was capped.

        The line is re-read at the turn's byte offset; if it no longer starts with
        the stored text (the transcript was rewritten since the scan), the stored
        head is all there is.
        """
        stored = str(turn["text"])
        if turn["text_chars"] <= len(stored):
            return stored
        from memhtml.trace.parser import read_line_at
        from memhtml.trace.records import line_text

        line = read_line_at(Path(turn["file_path"]), int(turn["byte_at"]))
        text = line_text(line) if line is not None else None
        return text if text is not None and text.startswith(stored) else stored

    def problems(self, file_path: str | None = None) -> list[dict[str, Any]]:
        """Lines that could not be read, with their reasons."""
        if file_path is None:
            return self._rows("SELECT * FROM trace_problems ORDER BY file_path, line_no")
        return self._rows(
            "SELECT * FROM trace_problems WHERE file_path = ? ORDER BY line_no", (file_path,)
        )

    def counts(self) -> dict[str, int]:
        """How much the plane holds."""
        one = self.conn.execute(
            "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM traces),"
            " (SELECT count(*) FROM turns), (SELECT count(*) FROM trace_problems),"
            " (SELECT coalesce(sum(size - byte_off), 0) FROM traces)"
        ).fetchone()
        return {
            "sessions": one[0],
            "files": one[1],
            "turns": one[2],
            "problem_lines": one[3],
            "pending_bytes": one[4],
        }
