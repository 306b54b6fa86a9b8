"""Export: row counts equal the SQL counts, Parquet round-trips, DuckDB queries the views."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

from memhtml.analysis import export  # noqa: E402


def _sql_count(corpus: Any, projection: export.Projection) -> int:
    table = f"{projection.schema}.{projection.table}"
    return int(corpus.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_frames_match_sql_counts(toy_corpus: Any) -> None:
    frames = export.frames(toy_corpus.root)
    assert set(frames) == set(export.TABLE_NAMES)
    for p in export.PROJECTIONS:
        assert frames[p.name].height == _sql_count(toy_corpus, p), p.name
    assert frames["files"].height == 120
    assert frames["edges"].height >= 2
    assert frames["access"].height >= 5
    assert frames["embeddings"].height > 0
    assert "vector" not in frames["embeddings"].columns
    assert frames["files"].schema["archived"] == pl.Int64
    assert frames["files"].schema["path"] == pl.String


def test_parquet_round_trip(toy_corpus: Any, tmp_path: Path) -> None:
    report = export.export_corpus(toy_corpus, tmp_path / "out")
    assert report["format"] == "parquet"
    assert report["index_fresh"] is True
    frames = export.frames(toy_corpus.root)
    for row in report["tables"]:
        back = pl.read_parquet(row["file"])
        assert back.height == row["rows"] == frames[row["name"]].height
        assert back.equals(frames[row["name"]])


def test_duckdb_queries_registered_tables(toy_corpus: Any) -> None:
    con = export.register_duckdb(export.frames(toy_corpus.root))
    got = con.execute(
        "SELECT t.tag, count(*) FROM files f JOIN tags t ON t.path = f.path"
        " WHERE t.tag LIKE 'group-%' GROUP BY t.tag ORDER BY t.tag"
    ).fetchall()
    assert got == [(f"group-{i}", 30) for i in range(4)]
    (accessed,) = con.execute(
        "SELECT count(*) FROM access a JOIN files f ON f.path = a.path"
    ).fetchone()
    access = next(p for p in export.PROJECTIONS if p.name == "access")
    assert accessed == _sql_count(toy_corpus, access)


def test_readonly_connection_refuses_writes(toy_corpus: Any) -> None:
    import sqlite3

    conn = export.connect_readonly(toy_corpus.root)
    try:
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("DELETE FROM files")
    finally:
        conn.close()


def test_missing_index_and_unknown_table(tmp_path: Path) -> None:
    from memhtml.contracts.errors import InvalidFlagError, StorageError

    with pytest.raises(StorageError):
        export.connect_readonly(tmp_path)
    with pytest.raises(InvalidFlagError):
        export._projections(["nope"])


def test_path_vectors_are_the_mmr_vectors(toy_corpus: Any) -> None:
    from memhtml.domain.vectors import vector_from_blob

    vectors = export.path_vectors(toy_corpus.root, ["areas/toy/n010.html"])
    chash = toy_corpus.conn.execute(
        "SELECT content_hash FROM files WHERE path = 'areas/toy/n010.html'"
    ).fetchone()[0]
    blob = toy_corpus.conn.execute(
        "SELECT vector FROM embeddings WHERE content_hash = ? ORDER BY seq LIMIT 1", (chash,)
    ).fetchone()[0]
    assert list(vectors["areas/toy/n010.html"]) == list(vector_from_blob(blob))


def test_cli_export(toy_corpus: Any, tmp_path: Path) -> None:
    import io
    import json

    from memhtml.cli.main import run

    out = io.StringIO()
    code = run(
        [
            "export",
            "--format",
            "parquet",
            "--out",
            str(tmp_path / "cli"),
            "--table",
            "files",
            "--table",
            "tags",
            "--repo",
            str(toy_corpus.root),
            "--json",
        ],
        stdout=out,
    )
    envelope = json.loads(out.getvalue())
    assert code == 0, envelope
    assert envelope["type"] == "export.report"
    assert envelope["data"]["rows"] == {"files": 120, "tags": 240}
    assert (tmp_path / "cli" / "files.parquet").is_file()
