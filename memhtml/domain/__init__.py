"""Pure math: cosine, RRF, MMR, salience and decay.

The one home of the ranking math. The SQLite ranker, the MMR pass and the
Polars/DuckDB analysis layer all call these functions, so a weight tuned in a
notebook ranks exactly as production does. No I/O here.
"""
