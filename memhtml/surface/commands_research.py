"""The research commands: the index as data for analysis (Polars/DuckDB/Parquet)."""

from __future__ import annotations

from typing import Final

from memhtml.contracts.limits import MAX_FILTER_VALUES
from memhtml.surface.spec import Command, Param

H = "memhtml.cli.handlers"

# The choices are spelled here rather than imported from memhtml.analysis so
# that building the command table never imports the research layer.
EXPORT_FORMATS: Final[tuple[str, ...]] = ("parquet",)
EXPORT_TABLES: Final[tuple[str, ...]] = (
    "files",
    "chunks",
    "edges",
    "entities",
    "facets",
    "tags",
    "aliases",
    "citations",
    "embeddings",
    "index_state",
    "access",
    "edge_corroboration",
)

RESEARCH_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "export",
        "Export the index projections (files, chunks, edges, entities, facets, access...) "
        "as Parquet for analysis.",
        "export.report",
        f"{H}.research:export",
        params=(
            Param("format", "output format", default="parquet", choices=EXPORT_FORMATS),
            Param(
                "out", "directory to write <table>.parquet files into", required=True, metavar="DIR"
            ),
            Param(
                "table",
                "only this table (repeatable)",
                multiple=True,
                choices=EXPORT_TABLES,
                max_count=MAX_FILTER_VALUES,
            ),
        ),
        errors=("ERR_REPO_REQUIRED", "ERR_STORAGE", "ERR_INVALID_FLAG", "ERR_EXTRA_REQUIRED"),
        examples=("memhtml export --format parquet --out /tmp/memhtml-export",),
        details=(
            "Reads index.db and state.db through a read-only connection (the export never"
            " writes to the memory root; data.index_fresh says whether the index was at HEAD)."
            " Embeddings are exported as metadata without the vectors. Needs the research"
            " extra: pip install 'memhtml[research]'. In Python, memhtml.analysis.export.frames()"
            " gives Polars frames and register_duckdb() an in-process DuckDB connection."
        ),
    ),
)
