"""A campaign's comparison tables: DuckDB SQL over its cell Parquet files.

`connect(folder)` opens an in-process DuckDB connection with four views:

- ``cells``: every planned cell (id, dataset, setting, harness) and ``done``;
- ``questions``: the done cells' per-question rows (``read_parquet`` over the
  files, schemas unioned by name) joined to their labels;
- ``scores``: the same rows long, one per (question, metric) with a value
  (``UNPIVOT``; a metric a question cannot evaluate has no row);
- ``metrics``: the metric columns, in the order the cells name them;
- ``labels``: datasets, settings and metrics in spec order (the tables' row order);
- ``draws``: the bootstrap's resample draws (below), registered per table.

`summary` (per dataset x setting x metric, optionally per category) and
`deltas` (each setting minus the baseline, paired by question) are SQL over
those views, each with a percentile bootstrap interval. The tables only read
what is there, so a notebook calling them while a campaign runs shows the
table filling.

The bootstrap. Questions are resampled with replacement within each group
(dataset, setting, metric and, by category, the category), ``reps`` times;
the interval is the (1 - level) / 2 and (1 + level) / 2 quantiles
(``quantile_cont``) of the replicate means. Draw ``j`` of replicate ``r``
picks the question at position ``min(floor(u[j, r] * n), n - 1)`` of the
group's questions ordered by id, where ``u`` is
``numpy.random.RandomState(seed).random_sample((max_n, reps))``. The
uniforms come from numpy rather than SQL on purpose: DuckDB's ``random()``
under ``setseed`` is not reproducible once a plan runs on several threads,
and its ``hash()`` is not a stable contract across versions, while the
legacy RandomState stream is frozen by numpy's compatibility policy. Laid
out slot-major, a group's draws depend only on (seed, reps) and its own n,
never on the other groups; a delta uses the same draws for the setting and
the baseline (a paired bootstrap). Everything else (grouping, positions,
resampled means, quantiles) is DuckDB.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.analysis.campaign import CampaignFolder
from memhtml.analysis.export import require_research
from memhtml.contracts.errors import InvalidFlagError

if TYPE_CHECKING:
    import duckdb
    import numpy.typing as npt
    import polars as pl

DEFAULT_REPS: Final = 1000
DEFAULT_LEVEL: Final = 0.95


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def draws(seed: int, reps: int, max_n: int) -> npt.NDArray[Any]:
    """The uniforms: ``u[j, r]`` for slot j < max_n of replicate r < reps (slot-major)."""
    import numpy as np

    return np.random.RandomState(seed).random_sample((max(max_n, 0), reps))


def register_draws(
    con: duckdb.DuckDBPyConnection,
    seed: int,
    reps: int,
    max_n: int,
    uniforms: npt.NDArray[Any] | None = None,
) -> None:
    """(Re)register the ``draws`` view: (rep, slot, u) for the given seed and sizes, or for
    given `uniforms` (shape (slots, reps), values in [0, 1))."""
    import numpy as np
    import pyarrow as pa

    u = draws(seed, reps, max_n) if uniforms is None else np.asarray(uniforms, dtype=float)
    if u.ndim != 2 or u.shape[0] < max_n or ((u < 0) | (u >= 1)).any():
        raise InvalidFlagError(
            f"uniforms must be a (slots >= {max_n}, reps) array of values in [0, 1)"
        )
    slots, rep = np.indices(u.shape)
    table = pa.table(
        {
            "rep": pa.array(rep.ravel(), pa.int32()),
            "slot": pa.array(slots.ravel(), pa.int32()),
            "u": pa.array(u.ravel(), pa.float64()),
        }
    )
    con.register("draws", table)


def connect(
    folder: Path, con: duckdb.DuckDBPyConnection | None = None
) -> duckdb.DuckDBPyConnection:
    """DuckDB with the views ``cells``, ``questions`` and ``scores`` over a campaign folder."""
    require_research("duckdb", "pyarrow", "numpy")
    import duckdb
    import pyarrow as pa

    camp = CampaignFolder(folder)
    manifest = camp.manifest()
    con = duckdb.connect(":memory:") if con is None else con
    cells = manifest["cells"]
    done_meta: dict[str, dict[str, Any]] = {}
    for c in cells:
        meta = camp.cell_meta(c["cell"])
        if meta is not None:
            done_meta[c["cell"]] = meta
    con.register(
        "cells",
        pa.table(
            {
                "cell": [c["cell"] for c in cells],
                "dataset": [c["dataset"] for c in cells],
                "setting": [c["setting"] for c in cells],
                "harness": [c["harness"] for c in cells],
                "done": [c["cell"] in done_meta for c in cells],
            },
            schema=pa.schema(
                [
                    ("cell", pa.string()),
                    ("dataset", pa.string()),
                    ("setting", pa.string()),
                    ("harness", pa.string()),
                    ("done", pa.bool_()),
                ]
            ),
        ),
    )
    metrics: list[str] = []
    for meta in done_meta.values():
        for m in meta.get("metrics", []):
            if m not in metrics:
                metrics.append(m)
    # The file list is fixed here: a cell landing later appears at the next connect, never
    # half-way through a query (a file, once written, is only ever replaced whole).
    files = [str(camp.cell_path(cid)) for cid in done_meta]
    if files:
        listing = "[" + ", ".join(_literal(f) for f in files) + "]"
        con.execute(
            "CREATE OR REPLACE VIEW questions AS SELECT c.dataset, c.setting, c.harness, q.*"
            f" FROM read_parquet({listing}, union_by_name = true) q JOIN cells c USING (cell)"
        )
    else:
        con.execute(
            "CREATE OR REPLACE VIEW questions AS SELECT NULL::VARCHAR dataset,"
            " NULL::VARCHAR setting, NULL::VARCHAR harness, NULL::VARCHAR cell,"
            " NULL::VARCHAR qid, NULL::VARCHAR category WHERE false"
        )
    if files and metrics:
        cols = ", ".join(_quote(m) for m in metrics)
        con.execute(
            "CREATE OR REPLACE VIEW scores AS"
            " SELECT dataset, setting, harness, cell, qid,"
            " coalesce(category, '') AS category, metric, CAST(value AS DOUBLE) AS value FROM"
            f" (SELECT dataset, setting, harness, cell, qid, category, {cols} FROM questions)"
            f" UNPIVOT (value FOR metric IN ({cols}))"
        )
    else:
        con.execute(
            "CREATE OR REPLACE VIEW scores AS SELECT NULL::VARCHAR dataset,"
            " NULL::VARCHAR setting, NULL::VARCHAR harness, NULL::VARCHAR cell,"
            " NULL::VARCHAR qid, NULL::VARCHAR category, NULL::VARCHAR metric,"
            " NULL::DOUBLE value WHERE false"
        )
    con.register(
        "metrics",
        pa.table(
            {"metric": metrics, "ord": list(range(len(metrics)))},
            schema=pa.schema([("metric", pa.string()), ("ord", pa.int32())]),
        ),
    )
    labels = [("metric", m, i) for i, m in enumerate(metrics)]
    labels += [(kind, c[kind], i) for i, c in enumerate(cells) for kind in ("dataset", "setting")]
    con.register(
        "labels",
        pa.table(
            {
                "kind": [x[0] for x in labels],
                "name": [x[1] for x in labels],
                "ord": [x[2] for x in labels],
            },
            schema=pa.schema([("kind", pa.string()), ("name", pa.string()), ("ord", pa.int32())]),
        ),
    )
    return con


def metrics_of(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The metric columns of the done cells, in first-seen order."""
    return [str(r[0]) for r in con.execute("SELECT metric FROM metrics ORDER BY ord").fetchall()]


def _filters(
    con: duckdb.DuckDBPyConnection,
    metrics: Sequence[str] | None,
    categories: Sequence[str] | None,
) -> str:
    known = metrics_of(con)
    where = ["value IS NOT NULL"]
    if metrics is not None:
        unknown = [m for m in metrics if m not in known]
        if unknown:
            raise InvalidFlagError(
                f"metric {unknown[0]!r} is in no finished cell of this campaign",
                suggestions=[f"one of {', '.join(known)}" if known else "wait for a cell"],
            )
        where.append("metric IN (" + ", ".join(_literal(m) for m in metrics) + ")")
    if categories is not None:
        where.append("category IN (" + ", ".join(_literal(c) for c in categories) + ")")
    return " AND ".join(where)


def _bootstrap_sql(source: str, keys: Sequence[str], extra: Sequence[str], level: float) -> str:
    """Mean and percentile interval of ``value`` per ``keys`` over ``source``(keys, qid, value,
    extra...); ``extra`` columns are averaged alongside (a delta's two means)."""
    k = ", ".join(keys)
    zk = ", ".join(f"z.{c}" for c in keys)
    lo, hi = (1 - level) / 2, (1 + level) / 2
    extra_avg = "".join(f", avg({c}) AS {c}" for c in extra)
    extra_z = "".join(f", z.{c}" for c in extra)
    # spec order for datasets, settings and metrics (the `order` view), categories by name
    order = ", ".join(
        f"(SELECT min(o.ord) FROM labels o WHERE o.kind = '{c}' AND o.name = z.{c}), z.{c}"
        if c in ("dataset", "setting", "metric")
        else f"z.{c}"
        for c in keys
    )
    # Each group gets a small integer id, so the big join (reps x n rows per group) matches
    # two integers instead of the four label strings.
    return f"""
WITH src AS ({source}),
sizes AS (
  SELECT {k}, count(*) AS n, avg(value) AS mean{extra_avg},
         CAST(row_number() OVER (ORDER BY {k}) AS INTEGER) AS g
  FROM src GROUP BY {k}
),
ranked AS (
  SELECT z.g, s.value,
         CAST(row_number() OVER (PARTITION BY z.g ORDER BY s.qid) - 1 AS BIGINT) AS pos
  FROM src s JOIN sizes z ON {" AND ".join(f"s.{c} = z.{c}" for c in keys)}
),
picks AS (
  SELECT z.g, d.rep, CAST(least(floor(d.u * z.n), z.n - 1) AS BIGINT) AS pos
  FROM sizes z JOIN draws d ON d.slot < z.n
),
replicates AS (
  SELECT p.g, p.rep, avg(r.value) AS m
  FROM picks p JOIN ranked r ON r.g = p.g AND r.pos = p.pos
  GROUP BY p.g, p.rep
),
result AS (
  SELECT {zk}, z.n{extra_z}, z.mean,
         quantile_cont(x.m, {lo!r}) AS ci_low, quantile_cont(x.m, {hi!r}) AS ci_high
  FROM sizes z LEFT JOIN replicates x ON x.g = z.g
  GROUP BY ALL
)
SELECT * FROM result z ORDER BY {order}
"""


def _max_n(con: duckdb.DuckDBPyConnection, source: str, keys: Sequence[str]) -> int:
    k = ", ".join(keys)
    rows = con.execute(
        f"SELECT max(n) FROM (SELECT count(*) AS n FROM ({source}) GROUP BY {k})"
    ).fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def _run(
    con: duckdb.DuckDBPyConnection,
    source: str,
    keys: Sequence[str],
    extra: Sequence[str],
    *,
    seed: int,
    reps: int,
    level: float,
    uniforms: npt.NDArray[Any] | None,
) -> pl.DataFrame:
    if reps < 1 or not 0 < level < 1:
        raise InvalidFlagError("reps must be >= 1 and level within (0, 1)")
    register_draws(con, seed, reps, _max_n(con, source, keys), uniforms)
    return con.sql(_bootstrap_sql(source, keys, extra, level)).pl()


def summary(
    con: duckdb.DuckDBPyConnection,
    *,
    by_category: bool = False,
    metrics: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    level: float = DEFAULT_LEVEL,
    uniforms: npt.NDArray[Any] | None = None,
) -> pl.DataFrame:
    """Per dataset x setting x metric (x category): n, mean, ci_low, ci_high.

    ``categories`` keeps only those categories (LoCoMo's headline: 1-4).
    ``uniforms`` replaces the seeded draws (a (slots, reps) array; tests and
    reproducing someone else's table).
    """
    keys = ["dataset", "setting", *(["category"] if by_category else []), "metric"]
    where = _filters(con, metrics, categories)
    source = f"SELECT {', '.join(keys)}, qid, value FROM scores WHERE {where}"
    return _run(con, source, keys, (), seed=seed, reps=reps, level=level, uniforms=uniforms)


def deltas(
    con: duckdb.DuckDBPyConnection,
    baseline: str,
    *,
    by_category: bool = False,
    metrics: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    level: float = DEFAULT_LEVEL,
    uniforms: npt.NDArray[Any] | None = None,
) -> pl.DataFrame:
    """Each setting minus ``baseline`` on the questions both answered (paired by dataset,
    category and question id): n, baseline, value, delta, ci_low, ci_high."""
    names = [str(r[0]) for r in con.execute("SELECT DISTINCT setting FROM cells").fetchall()]
    if baseline not in names:
        raise InvalidFlagError(
            f"baseline {baseline!r} names no setting of this campaign",
            suggestions=[f"one of {', '.join(sorted(names))}"],
        )
    keys = ["dataset", "setting", *(["category"] if by_category else []), "metric"]
    where = _filters(con, metrics, categories)
    sel = ", ".join(f"a.{c}" for c in keys)
    source = (
        f"SELECT {sel}, a.qid, a.value - b.value AS value, b.value AS baseline,"
        " a.value AS setting_value"
        f" FROM (SELECT * FROM scores WHERE {where}) a"
        f" JOIN (SELECT * FROM scores WHERE {where}) b"
        " ON a.dataset = b.dataset AND a.metric = b.metric AND a.category = b.category"
        f" AND a.qid = b.qid AND b.setting = {_literal(baseline)}"
        f" WHERE a.setting <> {_literal(baseline)}"
    )
    out = _run(
        con,
        source,
        keys,
        ("baseline", "setting_value"),
        seed=seed,
        reps=reps,
        level=level,
        uniforms=uniforms,
    )
    return out.rename({"mean": "delta", "setting_value": "value"})


def progress(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Cells done out of planned, per dataset."""
    return con.sql(
        "SELECT dataset, count(*) FILTER (WHERE done) AS done, count(*) AS cells"
        " FROM cells GROUP BY dataset ORDER BY dataset"
    ).pl()


__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_REPS",
    "connect",
    "deltas",
    "draws",
    "metrics_of",
    "progress",
    "register_draws",
    "summary",
]
