"""Connections and migrations: pragmas, two ledgers, one transaction per file."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memhtml.contracts.errors import StorageError
from memhtml.domain.vectors import cosine_distance, vector_to_blob
from memhtml.index import db


def open_db(tmp_path: Path) -> sqlite3.Connection:
    return db.connect(tmp_path / "index.db", tmp_path / "state.db")


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
    assert [r[0] for r in conn.execute("SELECT name FROM state.schema_migrations")] == [
        "S0001_access.sql"
    ]
    conn.close()
    (tmp_path / "index.db").unlink()
    conn = open_db(tmp_path)  # a rebuilt index plane never marks state migrations unapplied
    assert [r[0] for r in conn.execute("SELECT name FROM state.schema_migrations")] == [
        "S0001_access.sql"
    ]


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
    conn = db.connect(tmp_path / "i.db", tmp_path / "s.db")
    conn.execute("INSERT INTO state.access (path, updated_at) VALUES ('areas/a.html', 'x')")
    conn.close()
    (mig / "index" / "0099_extra.sql").write_text(
        "CREATE TABLE extra (x INTEGER);\nINSERT INTO extra VALUES (1);\n"
    )
    conn = db.connect(tmp_path / "i.db", tmp_path / "s.db")
    assert conn.execute("SELECT x FROM extra").fetchone() == (1,)
    names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    assert names[-1] == "0099_extra.sql" and "0001_files.sql" in names
    assert conn.execute("SELECT count(*) FROM state.access").fetchone()[0] == 1


def test_a_failing_migration_is_never_half_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mig = _copy_migrations(tmp_path)
    monkeypatch.setattr(db, "migrations_dir", lambda: mig)
    db.connect(tmp_path / "i.db", tmp_path / "s.db").close()
    (mig / "index" / "0099_broken.sql").write_text(
        "CREATE TABLE half (x INTEGER);\nINSERT INTO nowhere VALUES (1);\n"
    )
    with pytest.raises(StorageError):
        db.connect(tmp_path / "i.db", tmp_path / "s.db")
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
