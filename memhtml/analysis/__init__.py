"""The research layer: the index as data frames, arm replay, and weight tuning.

Everything here reads; nothing writes to a memory root. The math is the
production math: fusion is `memhtml.domain.rrf.rrf` and diversity is
`memhtml.domain.mmr.mmr`, so a weight tuned in a notebook ranks exactly as it
would in the SQL statement.

- `memhtml.analysis.export`: the index and state planes through a read-only
  sqlite3 connection into Arrow/Polars, Parquet files, and an in-process
  DuckDB connection (registered through Arrow; no DuckDB extension needed).
- `memhtml.analysis.replay`: capture each arm's ranked list once per query
  (`Corpus.capture_arms`), keep them as a Polars frame, re-fuse offline.
- `memhtml.analysis.tuning`: grid and coordinate search over the four weights
  and k on a seeded train split, always reported next to the held-out split.

Polars, PyArrow and DuckDB come from the `research` extra and are imported
only inside the functions that need them.
"""

from __future__ import annotations
