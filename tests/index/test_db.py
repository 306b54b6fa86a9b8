"""Connections and migrations: pragmas, two ledgers, one transaction per file."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memhtml.contracts.errors import StorageError
from memhtml.domain.vectors import cosine_distance, vector_to_blob
from memhtml.index import db, planes


def open_db(tmp_path: Path) -> sqlite3.Connection:
    return planes.connect(tmp_path / "index.db", tmp_path / "state.db")


def test_pragmas_and_functions(tmp_path: Path) -> None:
    conn = open_db(tmp_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA state.journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == db.BUSY_TIMEOUT_MS
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert db.attached_schemas(conn) == ["main", "state"]
    a, b = np.array([1.0, 2.0, 3.0]), np.array([3.0, 1.0, 0.5])
    got = conn.execute(
        "SELECT vector_distance_cos(?, ?)", (vector_to_blob(a), vector_to_blob(b))
    ).fetchone()[0]
    assert got == pytest.approx(cosine_distance(a, b))


def test_blank_schema_and_separate_ledgers(tmp_path: Path) -> None:
    conn = open_db(tmp_path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "files",
        "file_tags",
        "file_entities",
        "file_facets",
        "file_citations",
        "chunks",
        "embeddings",
        "edges",
        "index_state",
        "schema_migrations",
    } <= tables
    state = {r[0] for r in conn.execute("SELECT name FROM state.sqlite_master WHERE type='table'")}
    assert {"access", "edge_corroboration", "schema_migrations"} <= state
    applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    assert applied == [p.name for p in db.migration_files("index")]
    assert applied[:2] == ["0001_files.sql", "0002_pending_vectors.sql"]
    state_applied = [r[0] for r in conn.execute("SELECT name FROM state.schema_migrations")]
    assert state_applied == [p.name for p in db.migration_files("state")]
    assert state_applied[0] == "S0001_access.sql"
    conn.close()
    (tmp_path / "index.db").unlink()
    conn = open_db(tmp_path)  # a rebuilt index plane never marks state migrations unapplied
    assert [r[0] for r in conn.execute("SELECT name FROM state.schema_migrations")] == (
        state_applied
    )


def test_checks_refuse_bad_rows(tmp_path: Path) -> None:
    conn = open_db(tmp_path)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO edges (src_path, dst_path, rel, edge_class) VALUES"
            " ('a', 'a', 'supports', 'memory')"
        )
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO edges (src_path, dst_path, rel, edge_class) VALUES"
            " ('a', 'b', 'blocks', 'memory')"
        )
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO edges (src_path, dst_path, rel, edge_class, derived) VALUES"
            " ('a', 'b', 'supports', 'memory', 1)"
        )
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO index_state (id) VALUES (2)")


def _copy_migrations(tmp_path: Path) -> Path:
    target = tmp_path / "migrations"
    shutil.copytree(db.migrations_dir(), target)
    return target


def test_upgrade_from_an_older_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mig = _copy_migrations(tmp_path)
    monkeypatch.setattr(db, "migrations_dir", lambda: mig)
    conn = planes.connect(tmp_path / "i.db", tmp_path / "s.db")
    conn.execute("INSERT INTO state.access (path, updated_at) VALUES ('areas/a.html', 'x')")
    conn.close()
    (mig / "index" / "0099_extra.sql").write_text(
        "CREATE TABLE extra (x INTEGER);\nINSERT INTO extra VALUES (1);\n"
    )
    conn = planes.connect(tmp_path / "i.db", tmp_path / "s.db")
    assert conn.execute("SELECT x FROM extra").fetchone() == (1,)
    names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    assert names[-1] == "0099_extra.sql" and "0001_files.sql" in names
    assert conn.execute("SELECT count(*) FROM state.access").fetchone()[0] == 1


def test_a_failing_migration_is_never_half_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mig = _copy_migrations(tmp_path)
    monkeypatch.setattr(db, "migrations_dir", lambda: mig)
    planes.connect(tmp_path / "i.db", tmp_path / "s.db").close()
    (mig / "index" / "0099_broken.sql").write_text(
        "CREATE TABLE half (x INTEGER);\nINSERT INTO nowhere VALUES (1);\n"
    )
    with pytest.raises(StorageError):
        planes.connect(tmp_path / "i.db", tmp_path / "s.db")
    raw = sqlite3.connect(tmp_path / "i.db")
    assert raw.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone()[0] == 0
    assert (
        raw.execute("SELECT count(*) FROM schema_migrations").fetchone()[0]
        == len(db.migration_files("index")) - 1
    )


def test_migrations_ship_in_the_wheel(tmp_path: Path) -> None:
    import subprocess
    import sys
    import zipfile

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(root),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0 and "hatchling" in out.stderr:
        pytest.skip("hatchling is not installed in this environment")
    assert out.returncode == 0, out.stderr
    wheel = next(tmp_path.glob("memhtml-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "memhtml/_migrations/index/0001_files.sql" in names
    assert "memhtml/_migrations/state/S0001_access.sql" in names
    assert "memhtml/_migrations/index/0004_vector_spaces.sql" in names
    # eval compare-embedders runs offline from a wheel on the bundled benchmark samples
    assert "memhtml/eval/benchmarks/samples/locomo_sample.json" in names
    assert "memhtml/eval/benchmarks/samples/beam/1/chat.json" in names


# -- planes another build left (issue 12) ------------------------------------------
# The TypeScript original shares our ledger's name and some file names
# (0001_files.sql, S0001_access.sql) but not the schema behind them.
FOREIGN_INDEX = """
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO schema_migrations VALUES ('0001_files.sql', '2026-08-01T00:00:00.000Z'),
  ('0002_chunks.sql', '2026-08-01T00:00:00.000Z');
CREATE TABLE files (path TEXT PRIMARY KEY, content_hash TEXT, title TEXT);
INSERT INTO files VALUES ('areas/inbox/a.html', 'h', 'A');
"""
FOREIGN_STATE = """
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
INSERT INTO schema_migrations VALUES ('S0001_access.sql', 'x'),
  ('S0002_entity_corroboration.sql', 'x');
CREATE TABLE access (path TEXT PRIMARY KEY, access_count INTEGER NOT NULL DEFAULT 0,
  reinforcement_count INTEGER NOT NULL DEFAULT 0, outcome_score REAL NOT NULL DEFAULT 0.0,
  last_accessed_at TEXT, last_reinforced_at TEXT, updated_at TEXT NOT NULL);
INSERT INTO access VALUES
  ('areas/inbox/a.html', 7, 2, 0.5, '2026-08-01T12:00:00.123Z', NULL, '2026-08-01T12:00:00Z'),
  ('/areas/inbox/b.html', 3, 0, 0, NULL, NULL, '2026-08-01T12:00:00Z'),
  ('../escape.html', 9, 0, 0, NULL, NULL, 'x');
CREATE TABLE edge_corroboration (src_path TEXT NOT NULL, rel TEXT NOT NULL,
  dst_path TEXT NOT NULL, detections INTEGER NOT NULL DEFAULT 1,
  confirmed INTEGER NOT NULL DEFAULT 0, promoted INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL, PRIMARY KEY (src_path, rel, dst_path));
INSERT INTO edge_corroboration VALUES
  ('areas/a.html', 'contradicts', 'areas/b.html', 2, 0, 0, '2026-08-01T12:00:00.000Z');
"""


def _fabricate(path: Path, script: str) -> None:
    raw = sqlite3.connect(path)
    raw.executescript(script)
    raw.commit()
    raw.close()


def _set_aside_files(folder: Path, plane: str) -> list[str]:
    return sorted(p.name for p in folder.glob(f"{plane}.db-foreign-*") if p.suffix != ".json")


def test_foreign_planes_are_set_aside_and_usage_is_imported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _fabricate(tmp_path / "index.db", FOREIGN_INDEX)
    _fabricate(tmp_path / "state.db", FOREIGN_STATE)
    with caplog.at_level("WARNING", logger="memhtml.index"):
        conn = open_db(tmp_path)
    # Ours now: every migration applied, stamped, no watermark (the next update rebuilds).
    names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    assert names == [p.name for p in db.migration_files("index")]
    assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    assert db.watermark(conn) is None
    assert conn.execute("PRAGMA application_id").fetchone()[0] == db.APPLICATION_ID
    assert conn.execute("PRAGMA state.application_id").fetchone()[0] == db.APPLICATION_ID
    # The usage history came across; invalid paths did not.
    assert conn.execute("SELECT * FROM state.access ORDER BY path").fetchall() == [
        ("areas/inbox/a.html", 7, 2, 0.5, "2026-08-01T12:00:00Z", None, "2026-08-01T12:00:00Z"),
        ("areas/inbox/b.html", 3, 0, 0.0, None, None, "2026-08-01T12:00:00Z"),
    ]
    assert conn.execute("SELECT * FROM state.edge_corroboration").fetchall() == [
        ("areas/a.html", "areas/b.html", "contradicts", 2, *["2026-08-01T12:00:00Z"] * 2)
    ]
    # Both files are kept; the reports say what happened.
    (index_copy,) = _set_aside_files(tmp_path, "index")
    (state_copy,) = _set_aside_files(tmp_path, "state")
    reports = {r["plane"]: r for r in planes.set_aside_planes(conn)}
    assert reports["index"]["moved_to"] == index_copy
    assert "0002_chunks.sql" in reports["index"]["reason"]
    assert reports["state"]["status"] == "imported"
    assert reports["state"]["imported"] == {
        "access": 2,
        "edge_corroboration": 1,
        "skipped_rows": 1,
        "access_table": "access",
    }
    raw = sqlite3.connect(tmp_path / state_copy)
    assert raw.execute("SELECT count(*) FROM access").fetchone()[0] == 3  # untouched
    raw.close()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "set aside as index.db-foreign-" in logged
    assert f"moved to {state_copy} (kept)" in logged
    assert "imported 2 access row(s)" in logged
    # A second open finds ours and changes nothing.
    conn.close()
    conn = open_db(tmp_path)
    assert len(planes.set_aside_planes(conn)) == 2
    assert conn.execute("SELECT count(*) FROM state.access").fetchone()[0] == 2


def test_same_ledger_names_over_other_columns_is_foreign(tmp_path: Path) -> None:
    # An older original: its ledger holds only names we also have, so the columns decide.
    _fabricate(
        tmp_path / "index.db",
        "CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);"
        " INSERT INTO schema_migrations VALUES ('0001_files.sql', 'x');"
        " CREATE TABLE files (path TEXT PRIMARY KEY, title TEXT);",
    )
    _fabricate(
        tmp_path / "state.db",
        "CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);"
        " INSERT INTO schema_migrations VALUES ('S0001_access.sql', 'x');"
        " CREATE TABLE access (path TEXT PRIMARY KEY, access_count INTEGER, updated_at TEXT);"
        " INSERT INTO access VALUES ('areas/x.html', 4, 'x');"
        " CREATE TABLE edge_corroboration (src_path TEXT, rel TEXT, dst_path TEXT,"
        " detections INTEGER, updated_at TEXT);",
    )
    conn = open_db(tmp_path)
    reasons = {r["plane"]: r["reason"] for r in planes.set_aside_planes(conn)}
    assert "table files is not this build's" in reasons["index"]
    assert "not this build's" in reasons["state"]
    assert conn.execute("SELECT path, access_count FROM state.access").fetchall() == [
        ("areas/x.html", 4)
    ]
    conn.execute("SELECT fts_text, disclosure_text FROM files")  # no "no such column"


def test_usage_rows_under_other_names_are_recognised(tmp_path: Path) -> None:
    _fabricate(
        tmp_path / "state.db",
        "CREATE TABLE memory_access (file_path TEXT, accesses INTEGER, last_access INTEGER,"
        " outcome_score TEXT);"
        " INSERT INTO memory_access VALUES ('resources/a.html', 4, 1767225600000, 'abc'),"
        " ('resources/b.html', 2, 1767225600, '0.75'), ('resources/c.html', -1, NULL, NULL);",
    )
    conn = open_db(tmp_path)
    (report,) = planes.set_aside_planes(conn)
    assert "no migration ledger" in report["reason"]
    assert report["imported"]["access_table"] == "memory_access"
    assert report["imported"]["skipped_rows"] == 1
    assert conn.execute(
        "SELECT path, access_count, outcome_score, last_accessed_at FROM state.access ORDER BY path"
    ).fetchall() == [
        ("resources/a.html", 4, 0.0, "2026-01-01T00:00:00Z"),  # epoch milliseconds
        ("resources/b.html", 2, 0.75, "2026-01-01T00:00:00Z"),  # epoch seconds
    ]


def test_an_unreadable_schema_or_a_non_database_is_set_aside(tmp_path: Path) -> None:
    raw = sqlite3.connect(tmp_path / "index.db")
    raw.execute("CREATE TABLE files (path TEXT)")
    raw.execute("PRAGMA writable_schema = ON")  # what a Turso `USING fts` index looks like to us
    raw.execute(
        "INSERT INTO sqlite_master VALUES ('index', 'files_fts_idx', 'files', 0,"
        " 'CREATE INDEX files_fts_idx ON files USING fts (path)')"
    )
    raw.commit()
    raw.close()
    (tmp_path / "state.db").write_bytes(b"not a database at all, but a file with a name" * 4)
    conn = open_db(tmp_path)
    reasons = {r["plane"]: r["reason"] for r in planes.set_aside_planes(conn)}
    assert "cannot read it" in reasons["index"] and "malformed" in reasons["index"]
    assert reasons["state"] == "it is not an SQLite database"
    assert conn.execute("SELECT count(*) FROM state.access").fetchone()[0] == 0
    assert _set_aside_files(tmp_path, "state")  # kept, even though nothing was recognised


def test_a_newer_ledger_of_ours_is_set_aside_and_its_state_rows_kept(tmp_path: Path) -> None:
    conn = open_db(tmp_path)
    conn.execute(
        "INSERT INTO state.access (path, access_count, outcome_score, last_accessed_at,"
        " updated_at) VALUES ('areas/a.html', 5, -0.25, '2026-01-02T03:04:05Z', 'u')"
    )
    conn.execute(
        "INSERT INTO state.edge_corroboration VALUES"
        " ('areas/a.html', 'areas/b.html', 'supports', 3, '2026-01-01', '2026-02-01')"
    )
    conn.execute("INSERT INTO schema_migrations VALUES ('9999_from_the_future.sql', 'x')")
    conn.execute("INSERT INTO state.schema_migrations VALUES ('S9999_from_the_future.sql', 'x')")
    conn.close()
    conn = open_db(tmp_path)
    reasons = {r["plane"]: r["reason"] for r in planes.set_aside_planes(conn)}
    assert "9999_from_the_future.sql" in reasons["index"]
    assert "S9999_from_the_future.sql" in reasons["state"]
    assert conn.execute(
        "SELECT path, access_count, outcome_score, last_accessed_at FROM state.access"
    ).fetchall() == [("areas/a.html", 5, -0.25, "2026-01-02T03:04:05Z")]
    assert conn.execute("SELECT count, first_seen FROM state.edge_corroboration").fetchall() == [
        (3, "2026-01-01T00:00:00Z")
    ]


def test_an_unstamped_database_of_ours_is_kept_and_stamped(tmp_path: Path) -> None:
    conn = open_db(tmp_path)
    conn.execute("INSERT INTO state.access (path, updated_at) VALUES ('areas/a.html', 'x')")
    conn.execute("PRAGMA application_id = 0")  # as every database before the stamp existed
    conn.execute("PRAGMA state.application_id = 0")
    conn.close()
    conn = open_db(tmp_path)
    assert planes.set_aside_planes(conn) == []
    assert conn.execute("SELECT count(*) FROM state.access").fetchone()[0] == 1
    assert conn.execute("PRAGMA application_id").fetchone()[0] == db.APPLICATION_ID


def test_an_interrupted_import_is_finished_by_the_next_open(tmp_path: Path) -> None:
    _fabricate(tmp_path / "state.db", FOREIGN_STATE)
    planes._set_aside("state", tmp_path / "state.db", "test: moved, then the process died")
    conn = open_db(tmp_path)
    (report,) = planes.set_aside_planes(conn)
    assert report["status"] == "imported" and report["imported"]["access"] == 2
    assert conn.execute("SELECT count(*) FROM state.access").fetchone()[0] == 2


def _cli(root: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "MEMHTML_EMBED": "off", "MEMHTML_LOG": "WARNING"}
    out = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *args, "--repo", str(root), "--dense"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return out.returncode, json.loads(out.stdout), out.stderr


@pytest.mark.parametrize("first", ["search", "index update", "index rebuild", "doctor"])
def test_every_command_works_over_a_foreign_memhtml_dir(repo: Path, first: str) -> None:
    import memhtml

    with memhtml.open(repo, embedder="off") as c:
        written = c.write("A fact", claim="The VIP is drained nightly.")["path"]
    state_dir = repo / ".memhtml"
    for name in ("index.db", "state.db"):
        for f in state_dir.glob(name + "*"):
            f.unlink()
    _fabricate(state_dir / "index.db", FOREIGN_INDEX)
    _fabricate(state_dir / "state.db", FOREIGN_STATE.replace("areas/inbox/a.html", written))
    args = {"search": ["search", "VIP"], "doctor": ["doctor"]}.get(first, first.split())
    code, env, stderr = _cli(repo, *args)
    assert code == 0 and env["ok"] is True, env
    assert "set aside as index.db-foreign-" in stderr and "imported 2 access row(s)" in stderr
    if first == "index update":  # no watermark: the update is a rebuild
        assert env["data"]["mode"] == "rebuild"
    for then in (["search", "VIP"], ["index", "rebuild"], ["doctor"], ["index", "status"]):
        code, env, stderr = _cli(repo, *then)
        assert code == 0 and env["ok"] is True, (then, env)
        assert "set aside" not in stderr
    code, env, _ = _cli(repo, "search", "VIP")
    assert [h["path"] for h in env["data"]["hits"]] == [written]
    with memhtml.open(repo, embedder="off") as c:
        row = c.conn.execute(
            "SELECT access_count FROM state.access WHERE path = ?", (written,)
        ).fetchone()
        assert row == (7,)


def test_a_cli_command_closes_its_planes_before_the_process_ends(repo: Path) -> None:
    # The CLI skips the interpreter's teardown, so it closes the corpus itself: the
    # last connection's close folds the log into each plane and removes it.
    code, env, _ = _cli(
        repo, "write", "--title", "Closed", "--type", "semantic", "--claim", "The WAL is folded in."
    )
    assert code == 0 and env["ok"] is True, env
    state_dir = repo / ".memhtml"
    assert (state_dir / "index.db").exists()
    assert not [p.name for p in state_dir.glob("*.db-wal")]
    written = env["data"]["path"]
    code, env, _ = _cli(repo, "search", "folded")
    assert code == 0 and [h["path"] for h in env["data"]["hits"]] == [written]
