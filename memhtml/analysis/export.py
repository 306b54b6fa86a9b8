"""The index and state planes as Arrow tables, Polars frames, Parquet files and DuckDB views.

Rows are read through the standard library's sqlite3 on a READ-ONLY
connection (``mode=ro`` URIs for index.db and the attached state.db), turned
into Arrow columns with types taken from the declared SQL types, and from
there into Polars or DuckDB. DuckDB's sqlite scanner is deliberately not used:
it is an extension, and extensions cannot be downloaded on these machines.

Vectors are not exported as rows: `embeddings` carries its metadata (seq,
chunk id, content hash, model, dim, created_at); `content_vectors` reads the
vectors themselves, one per content hash exactly as the production MMR step
picks them (the first chunk by seq).
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from memhtml.contracts.errors import ExtraRequiredError, InvalidFlagError, StorageError
from memhtml.domain.vectors import vector_from_blob

if TYPE_CHECKING:
    import duckdb
    import numpy.typing as npt
    import polars as pl
    import pyarrow as pa

    from memhtml.ops.corpus import Corpus


@dataclass(frozen=True)
class Projection:
    """One exported table: its name and the SELECT that reads it (schema-qualified)."""

    name: str
    schema: str
    table: str
    columns: tuple[str, ...] | None = None  # None: every column
    order_by: str = "rowid"

    def select(self) -> str:
        """The SELECT statement for this projection."""
        cols = "*" if self.columns is None else ", ".join(self.columns)
        return f"SELECT {cols} FROM {self.schema}.{self.table} ORDER BY {self.order_by}"


# Exported name -> where it lives. Names are the analysis vocabulary (short,
# plural); the SQL tables keep their own names.
PROJECTIONS: Final[tuple[Projection, ...]] = (
    Projection("files", "main", "files", order_by="path"),
    Projection("chunks", "main", "chunks", order_by="path, ordinal"),
    Projection("edges", "main", "edges", order_by="src_path, rel, dst_path, derived"),
    Projection("entities", "main", "file_entities", order_by="path, entity_type, entity_name"),
    Projection("facets", "main", "file_facets", order_by="path, ordinal"),
    Projection("tags", "main", "file_tags", order_by="path, tag"),
    Projection("aliases", "main", "file_aliases", order_by="path, alias"),
    Projection("citations", "main", "file_citations", order_by="path, ordinal"),
    Projection(
        "embeddings",
        "main",
        "embeddings",
        columns=("seq", "chunk_id", "content_hash", "model", "dim", "created_at"),
        order_by="seq",
    ),
    Projection("index_state", "main", "index_state", order_by="id"),
    Projection("access", "state", "access", order_by="path"),
    Projection(
        "edge_corroboration", "state", "edge_corroboration", order_by="src_path, rel, dst_path"
    ),
)
TABLE_NAMES: Final[tuple[str, ...]] = tuple(p.name for p in PROJECTIONS)
FORMATS: Final[tuple[str, ...]] = ("parquet",)


RESEARCH_MODULES: Final[tuple[str, ...]] = ("polars", "pyarrow", "duckdb")


def require_research(*modules: str) -> None:
    """Raise ExtraRequiredError naming the `research` extra unless `modules` import.

    Called at the top of every entry point that needs them, so a missing extra
    is one clear error (ERR_EXTRA_REQUIRED), never a storage failure or an
    ImportError halfway through an export.
    """
    missing = []
    for name in modules or RESEARCH_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ExtraRequiredError(
            f"this needs the research extra, and {', '.join(missing)}"
            f" {'is' if len(missing) == 1 else 'are'} not installed",
            suggestions=["pip install 'memhtml[research]'"],
            details={"extra": "research", "missing": missing},
        )


def _ro_uri(path: Path) -> str:
    return f"{path.resolve().as_uri()}?mode=ro"


def index_paths(root: Path) -> tuple[Path, Path]:
    """(index.db, state.db) of a memory root."""
    state_dir = Path(root) / ".memhtml"
    return state_dir / "index.db", state_dir / "state.db"


def connect_readonly(root: Path) -> sqlite3.Connection:
    """A read-only connection to a root's index.db with state.db attached as `state`.

    Raises StorageError when the index has never been built. A missing
    state.db (no access recorded yet) is attached as an empty in-memory
    schema so the state projections come back empty rather than failing.
    """
    index_db, state_db = index_paths(root)
    if not index_db.is_file():
        raise StorageError(
            f"no index at {index_db}",
            suggestions=[f"memhtml index rebuild --repo {root}"],
        )
    try:
        conn = sqlite3.connect(_ro_uri(index_db), uri=True, check_same_thread=False)
        conn.execute("PRAGMA query_only = ON")
        if state_db.is_file():
            conn.execute("ATTACH DATABASE ? AS state", (_ro_uri(state_db),))
        else:
            conn.execute("ATTACH DATABASE ':memory:' AS state")
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open {index_db} read-only: {exc}") from exc
    return conn


def _table_exists(conn: sqlite3.Connection, schema: str, table: str) -> bool:
    row = conn.execute(
        f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return row is not None


def _declared_types(conn: sqlite3.Connection, schema: str, table: str) -> dict[str, str]:
    return {
        str(r[1]): str(r[2] or "").upper()
        for r in conn.execute(f"PRAGMA {schema}.table_info({table})")
    }


def _arrow_type(declared: str) -> pa.DataType:
    import pyarrow as pa

    # SQLite's type affinity rules, in their order (https://sqlite.org/datatype3.html §3.1).
    if "INT" in declared:
        return pa.int64()
    if any(t in declared for t in ("CHAR", "CLOB", "TEXT")):
        return pa.string()
    if "BLOB" in declared or not declared:
        return pa.binary()
    if any(t in declared for t in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    return pa.float64()


def read_arrow(conn: sqlite3.Connection, projection: Projection) -> pa.Table:
    """One projection as an Arrow table typed from the declared column types."""
    require_research("pyarrow")
    import pyarrow as pa

    if not _table_exists(conn, projection.schema, projection.table):
        names = list(projection.columns or ())
        return pa.table({n: pa.array([], type=pa.string()) for n in names})
    declared = _declared_types(conn, projection.schema, projection.table)
    cursor = conn.execute(projection.select())
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    arrays = [
        pa.array(list(col), type=_arrow_type(declared.get(name, "")))
        for name, col in zip(names, columns, strict=True)
    ]
    return pa.Table.from_arrays(arrays, names=names)


def _projections(tables: Iterable[str] | None) -> list[Projection]:
    if tables is None:
        return list(PROJECTIONS)
    wanted = list(dict.fromkeys(tables))
    unknown = [t for t in wanted if t not in TABLE_NAMES]
    if unknown:
        raise InvalidFlagError(
            f"unknown table(s) {', '.join(unknown)}; tables are {', '.join(TABLE_NAMES)}"
        )
    return [p for p in PROJECTIONS if p.name in wanted]


def arrow_tables(root: Path, tables: Iterable[str] | None = None) -> dict[str, pa.Table]:
    """Every projection (or the named ones) of a root's index as Arrow tables."""
    require_research("pyarrow")
    conn = connect_readonly(root)
    try:
        return {p.name: read_arrow(conn, p) for p in _projections(tables)}
    finally:
        conn.close()


def frames(root: Path, tables: Iterable[str] | None = None) -> dict[str, pl.DataFrame]:
    """Every projection (or the named ones) as Polars frames."""
    require_research("polars", "pyarrow")
    import polars as pl

    out: dict[str, pl.DataFrame] = {}
    for name, table in arrow_tables(root, tables).items():
        out[name] = cast("pl.DataFrame", pl.from_arrow(table))
    return out


def register_duckdb(
    tables: Mapping[str, pa.Table | pl.DataFrame],
    con: duckdb.DuckDBPyConnection | None = None,
) -> duckdb.DuckDBPyConnection:
    """Register each table as a view of an in-process DuckDB connection (through Arrow)."""
    require_research("duckdb", "polars", "pyarrow")
    import duckdb
    import polars as pl

    con = duckdb.connect(":memory:") if con is None else con
    for name, table in tables.items():
        arrow = table.to_arrow() if isinstance(table, pl.DataFrame) else table
        con.register(name, arrow)
    return con


def write_parquet(
    tables: Mapping[str, pa.Table | pl.DataFrame], out_dir: Path
) -> list[dict[str, Any]]:
    """Write `<name>.parquet` per table into out_dir; one report row per table."""
    require_research("polars", "pyarrow")
    import polars as pl
    import pyarrow.parquet as pq

    out_dir.mkdir(parents=True, exist_ok=True)
    report: list[dict[str, Any]] = []
    for name, table in tables.items():
        arrow = table.to_arrow() if isinstance(table, pl.DataFrame) else table
        path = out_dir / f"{name}.parquet"
        pq.write_table(arrow, path)
        report.append(
            {
                "name": name,
                "rows": arrow.num_rows,
                "columns": list(arrow.column_names),
                "file": str(path),
                "bytes": path.stat().st_size,
            }
        )
    return report


def _index_state(root: Path) -> dict[str, Any]:
    conn = connect_readonly(root)
    try:
        row = conn.execute(
            "SELECT head_sha, embed_model, embed_dim, rebuilding FROM index_state WHERE id = 1"
        ).fetchone()
    finally:
        conn.close()
    if row is None:
        return {"watermark": None, "embed_model": None, "embed_dim": None, "rebuilding": False}
    return {
        "watermark": row[0],
        "embed_model": row[1],
        "embed_dim": row[2],
        "rebuilding": bool(row[3]),
    }


def export_root(
    root: Path,
    out_dir: Path,
    *,
    fmt: str = "parquet",
    tables: Sequence[str] | None = None,
    head: str | None = None,
) -> dict[str, Any]:
    """Export a root's projections; the `export.report` payload.

    `head` (the repository's HEAD, when the caller knows it) is compared with
    the index watermark so the report says whether the export is of a fresh
    index; the export never writes to the root to catch it up.
    """
    if fmt not in FORMATS:
        raise InvalidFlagError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    require_research("polars", "pyarrow")
    state = _index_state(root)
    written = write_parquet(arrow_tables(root, tables), Path(out_dir))
    return {
        "format": fmt,
        "out": str(Path(out_dir)),
        "tables": written,
        "rows": {t["name"]: t["rows"] for t in written},
        "head_sha": head,
        "index_fresh": None if head is None else state["watermark"] == head,
        **state,
    }


def export_corpus(
    corpus: Corpus, out_dir: Path, *, fmt: str = "parquet", tables: Sequence[str] | None = None
) -> dict[str, Any]:
    """Export an open Corpus's projections (its index as it stands; see `export_root`)."""
    return export_root(corpus.root, out_dir, fmt=fmt, tables=tables, head=corpus.git.head_fast())


def content_vectors(
    conn: sqlite3.Connection, content_hashes: Iterable[str] | None = None
) -> dict[str, npt.NDArray[Any]]:
    """One vector per content hash: its first chunk's by seq (the production MMR choice)."""
    out: dict[str, npt.NDArray[Any]] = {}
    hashes = None if content_hashes is None else list(dict.fromkeys(content_hashes))
    if hashes is not None and not hashes:
        return out
    if hashes is None:
        rows: Iterable[tuple[str, bytes]] = conn.execute(
            "SELECT content_hash, vector FROM embeddings ORDER BY seq"
        )
        for chash, blob in rows:
            out.setdefault(chash, vector_from_blob(blob))
        return out
    step = 500
    for i in range(0, len(hashes), step):
        part = hashes[i : i + step]
        marks = ",".join("?" for _ in part)
        for chash, blob in conn.execute(
            f"SELECT content_hash, vector FROM embeddings WHERE content_hash IN ({marks})"
            " ORDER BY seq",
            part,
        ):
            out.setdefault(chash, vector_from_blob(blob))
    return out


def path_vectors(root: Path, paths: Iterable[str] | None = None) -> dict[str, npt.NDArray[Any]]:
    """Path -> the vector production MMR would use for that memory (absent when unembedded)."""
    conn = connect_readonly(root)
    try:
        if paths is None:
            pairs = conn.execute("SELECT path, content_hash FROM files").fetchall()
        else:
            wanted = list(dict.fromkeys(paths))
            pairs = []
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                marks = ",".join("?" for _ in part)
                pairs += conn.execute(
                    f"SELECT path, content_hash FROM files WHERE path IN ({marks})", part
                ).fetchall()
        vectors = content_vectors(conn, [h for _, h in pairs])
    finally:
        conn.close()
    return {p: vectors[h] for p, h in pairs if h in vectors}


__all__ = [
    "FORMATS",
    "PROJECTIONS",
    "TABLE_NAMES",
    "Projection",
    "arrow_tables",
    "connect_readonly",
    "content_vectors",
    "export_corpus",
    "export_root",
    "frames",
    "path_vectors",
    "read_arrow",
    "register_duckdb",
    "require_research",
    "write_parquet",
]
