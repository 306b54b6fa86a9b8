"""Handlers for the research commands (polars/pyarrow load only inside them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memhtml.cli.main import Invocation


def export(
    inv: Invocation, format: str = "parquet", out: str | None = None, table: list[str] | None = None
) -> dict[str, Any]:
    """Write the index projections as Parquet."""
    from memhtml.analysis.export import export_corpus, require_research

    require_research("polars", "pyarrow")  # ERR_EXTRA_REQUIRED before the store is opened
    corpus = inv.corpus(embedder="off")
    try:
        return export_corpus(
            corpus, Path(out or ".").expanduser(), fmt=format, tables=table or None
        )
    finally:
        corpus.close()


def human_export(data: dict[str, Any]) -> str:
    """A terminal summary: one line per table."""
    lines = [f"exported {len(data['tables'])} tables to {data['out']} ({data['format']})"]
    for t in data["tables"]:
        lines.append(f"  {t['name']:<20} {t['rows']:>8} rows  {t['file']}")
    if data.get("index_fresh") is False:
        lines.append("  note: the index is behind HEAD (memhtml index update)")
    return "\n".join(lines)
