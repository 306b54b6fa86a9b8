"""The rebuild's bulk load: per-row upkeep set aside and redone in bulk, with nothing lost.

A rebuild drops the triggers and secondary indexes of the tables it refills,
turns foreign keys off and enlarges the page cache; these tests hold that the
plane it leaves is the plane the row-by-row route leaves (schema, pending
vectors, FTS scores), that a failed rebuild leaves the plane and the
connection as they were, and the small pure helpers exact.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.index import bulk, writer
from memhtml.index import indexer as indexer_module
from memhtml.index.planes import connect
from memhtml.index.project import FILE_COLUMNS, Projection
from tests.index.test_indexer import snapshot


def _schema(conn: sqlite3.Connection) -> dict[str, Any]:
    """Every schema object's SQL, and each table's index list in the planner's order."""
    objects = sorted(
        conn.execute("SELECT type, name, tbl_name, sql FROM main.sqlite_master").fetchall(),
        key=repr,
    )
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    order = {t: [r[1] for r in conn.execute(f'PRAGMA index_list("{t}")')] for t in tables}
    return {"objects": objects, "index_order": order}


def _fts_scores(conn: sqlite3.Connection, words: list[str]) -> list[list[tuple[Any, ...]]]:
    """Each query's BM25 score per path (rowids may differ: a rebuild numbers in path order)."""
    sql = (
        "SELECT round(bm25(files_fts), 9), f.path FROM files_fts"
        " JOIN files f ON f.id = files_fts.rowid WHERE files_fts MATCH ? ORDER BY 1, 2"
    )
    return [conn.execute(sql, (w,)).fetchall() for w in words]


def _pending(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT chunk_id FROM pending_vectors ORDER BY 1")]


def _write_some(corpus: Any, n: int, word: str) -> list[str]:
    ops = [
        {
            "op": "write",
            "title": f"{word} {i}",
            "type": "semantic",
            "body": f"The {word} service number {i} drains the pool at {i} ms.",
            "tag": [word],
            "entity": [f"svc:{word}-{i % 3}"],
        }
        for i in range(n)
    ]
    return [r["path"] for r in corpus.apply(ops).results]


def test_rebuild_over_a_live_plane_leaves_the_migrated_schema_and_trigger_state(
    corpus: Any, repo: Path, tmp_path: Path
) -> None:
    """Triggers, indexes (same SQL, same per-table order), pending vectors and BM25
    scores after a rebuild over a plane with rows and some vectors equal what the
    row-by-row writes (the write doors, triggers live) left."""
    _write_some(corpus, 12, "alpha")
    _write_some(corpus, 9, "beta")
    # Some chunks lose their vectors (a model's partial run): those are pending.
    corpus.conn.execute(
        "DELETE FROM embeddings WHERE chunk_id IN"
        " (SELECT c.chunk_id FROM chunks c WHERE c.path LIKE '%beta%')"
    )
    fresh = connect(tmp_path / "fresh.db", tmp_path / "fresh-state.db")
    migrated = _schema(fresh)
    fresh.close()
    before_pending = _pending(corpus.conn)
    words = ["alpha", "beta", "pool", "service", "drains", "alpha OR beta", "zzz"]
    before_scores = _fts_scores(corpus.conn, words)
    before_rows = snapshot(corpus.conn)
    assert len(before_pending) == 9  # the beta chunks wait for vectors
    assert _schema(corpus.conn) == migrated

    corpus.index.rebuild(embed=False, force=True)

    assert _schema(corpus.conn) == migrated
    assert _pending(corpus.conn) == before_pending
    assert _fts_scores(corpus.conn, words) == before_scores
    assert snapshot(corpus.conn) == before_rows
    # The triggers work again: a new write is in FTS and pending at once.
    path = _write_some(corpus, 1, "gamma")[0]
    assert corpus.conn.execute(
        "SELECT f.path FROM files_fts JOIN files f ON f.id = files_fts.rowid"
        " WHERE files_fts MATCH 'gamma'"
    ).fetchall() == [(path,)]
    corpus.conn.execute(
        "INSERT INTO chunks (path, ordinal, content_hash, chunk_id, text)"
        " VALUES (?, 99, 'sha256:x', 'a-new-chunk', 'text')",
        (path,),
    )
    assert _pending(corpus.conn) == sorted([*before_pending, "a-new-chunk"])


def test_rebuild_restores_the_connection_settings(corpus: Any) -> None:
    _write_some(corpus, 3, "delta")
    conn = corpus.conn
    cache = conn.execute("PRAGMA main.cache_size").fetchone()[0]
    corpus.index.rebuild(embed=False, force=True)
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA main.cache_size").fetchone()[0] == cache
    # Foreign keys are enforced again on this connection.
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO file_tags (path, tag) VALUES ('areas/none.html', 't')")


def test_a_failed_rebuild_leaves_plane_and_connection_as_they_were(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_some(corpus, 30, "epsilon")
    conn = corpus.conn
    rows, schema, pending = snapshot(conn), _schema(conn), _pending(conn)
    calls = {"n": 0}
    real = writer.insert_rows

    def failing(c: sqlite3.Connection, rows: list[writer.FileRows]) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk on fire")
        real(c, rows)

    monkeypatch.setattr(indexer_module, "CHUNK", 5)
    monkeypatch.setattr(writer, "insert_rows", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        corpus.indexer.rebuild()
    assert calls["n"] == 2
    assert snapshot(conn) == rows
    assert _schema(conn) == schema
    assert _pending(conn) == pending
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert not conn.in_transaction
    assert corpus.indexer.watermark() is not None  # never left half-done


def test_file_values_is_the_row_in_column_order() -> None:
    file = {c: f"v-{c}" for c in FILE_COLUMNS if c != "indexed_at"}
    proj = Projection(file, (), (), (), (), (), (), ())
    expected = tuple(dict(file, indexed_at="NOW")[c] for c in FILE_COLUMNS)
    assert writer.file_values(proj, "NOW") == expected
    with pytest.raises(KeyError):
        writer.file_values(Projection({"path": "x"}, (), (), (), (), (), (), ()), "NOW")


def test_set_aside_names_only_the_rebuilt_tables_objects(tmp_path: Path) -> None:
    conn = connect(tmp_path / "i.db", tmp_path / "s.db")
    conn.execute("BEGIN IMMEDIATE")
    dropped = bulk.set_aside(conn)
    names = {n for n, _ in dropped.triggers + dropped.indexes}
    left = {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL"
        )
    }
    conn.execute("ROLLBACK")
    assert {"files_fts_ai", "chunks_pending_ai", "files_content_hash_active"} <= names
    # The embeddings' own index and triggers keep working through a rebuild.
    assert {"embeddings_content_hash", "embeddings_pending_ai", "embeddings_pending_ad"} <= left
    assert not names & left
    conn.close()


def test_memhtml_open_after_a_rebuild_sees_the_same_plane(repo: Path) -> None:
    """Another connection (a reader process) sees the rebuilt plane, its schema reloaded."""
    with memhtml.open(repo, embedder="off") as c:
        paths = _write_some(c, 4, "zeta")
        reader = memhtml.open(repo, embedder="off")
        assert len(reader.search("zeta").to_data()["hits"]) == 4  # its schema cached
        c.index.rebuild(embed=False, force=True)
        expected = snapshot(c.conn)
    with reader:
        assert snapshot(reader.conn) == expected
        hits = reader.search("zeta").to_data()["hits"]
        assert sorted(h["path"] for h in hits) == sorted(paths)
