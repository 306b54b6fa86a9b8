"""The campaign tables (DuckDB SQL over cell Parquet files) against hand arithmetic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("duckdb")
pytest.importorskip("polars")
np = pytest.importorskip("numpy")

from memhtml.analysis import campaign_tables as ct  # noqa: E402
from memhtml.analysis.campaign import CampaignFolder, Cell, CellOutcome  # noqa: E402
from memhtml.contracts.errors import InvalidFlagError  # noqa: E402

# base: m = 1, 0, 0.5 (mean 0.5); r = True, None, False (n 2, mean 0.5)
# new:  m = 1, 1, 0.5 (mean 5/6); r = True, True, True (mean 1)
ROWS = {
    "base": [
        {"qid": "q1", "category": "x", "m": 1.0, "r": True, "latency_ms": 3.0},
        {"qid": "q2", "category": "x", "m": 0.0, "r": None, "latency_ms": 4.0},
        {"qid": "q3", "category": "y", "m": 0.5, "r": False, "latency_ms": 5.0},
    ],
    "new": [
        {"qid": "q1", "category": "x", "m": 1.0, "r": True, "latency_ms": 3.0},
        {"qid": "q2", "category": "x", "m": 1.0, "r": True, "latency_ms": 4.0},
        {"qid": "q3", "category": "y", "m": 0.5, "r": True, "latency_ms": 5.0},
    ],
}
# slot-major uniforms: u[j, r]; with n = 3, floor(3u) picks rep 0: q1 q2 q2, rep 1: q3 q3 q1
U = np.array([[0.0, 0.9], [0.5, 0.9], [0.4, 0.1]])


def _write(folder: Path, rows: dict[str, list[dict[str, Any]]], metrics=("m", "r")) -> None:
    camp = CampaignFolder(folder)
    cells = []
    for i, (setting, part) in enumerate(rows.items()):
        cid = f"{i:032d}"
        cell = Cell(cid, "d", setting, "fake", (), {"v": 1, "setting": setting})
        camp.cells_dir.mkdir(parents=True, exist_ok=True)
        camp.write_cell(cell, CellOutcome(cid, rows=part, metrics=list(metrics)))
        cells.append({"cell": cid, "dataset": "d", "setting": setting, "harness": "fake"})
    camp.write_manifest({"campaign": "t", "baseline": "base", "cells": cells})


@pytest.fixture
def con(tmp_path: Path) -> Any:
    _write(tmp_path, ROWS)
    return ct.connect(tmp_path)


def _rows(frame: Any) -> dict[tuple, dict[str, Any]]:
    out = {}
    for r in frame.iter_rows(named=True):
        key = tuple(r[k] for k in ("setting", "category", "metric") if k in r)
        out[key] = r
    return out


def test_views_hold_the_rows_long_and_skip_what_cannot_be_evaluated(con: Any) -> None:
    assert con.execute("SELECT count(*) FROM questions").fetchone()[0] == 6
    # 6 questions x 2 metrics, less base's q2 r (None): 11 scores
    assert con.execute("SELECT count(*) FROM scores").fetchone()[0] == 11
    assert ct.metrics_of(con) == ["m", "r"]
    got = con.execute(
        "SELECT value FROM scores WHERE setting = 'base' AND metric = 'r' ORDER BY qid"
    ).fetchall()
    assert got == [(1.0,), (0.0,)]  # booleans are 0/1
    assert ct.progress(con).to_dicts() == [{"dataset": "d", "done": 2, "cells": 2}]


def test_summary_means_and_bootstrap_by_hand(con: Any) -> None:
    t = _rows(ct.summary(con, reps=2, uniforms=U))
    base_m, new_m = t[("base", "m")], t[("new", "m")]
    assert base_m["n"] == 3 and base_m["mean"] == pytest.approx(0.5)
    assert new_m["mean"] == pytest.approx(5 / 6)
    # base m replicates: (1+0+0)/3 = 1/3 and (0.5+0.5+1)/3 = 2/3; quantile_cont interpolates
    assert base_m["ci_low"] == pytest.approx(1 / 3 + 0.025 / 3)
    assert base_m["ci_high"] == pytest.approx(1 / 3 + 0.975 / 3)
    # new m replicates: 1 and 2/3
    assert new_m["ci_low"] == pytest.approx(2 / 3 + 0.025 / 3)
    assert new_m["ci_high"] == pytest.approx(2 / 3 + 0.975 / 3)
    # base r: n = 2 (q2 cannot be evaluated), q1 = 1, q3 = 0; floor(2u): rep 0 -> q1 q3 (0.5),
    # rep 1 -> q3 q3 (0)
    base_r = t[("base", "r")]
    assert (base_r["n"], base_r["mean"]) == (2, pytest.approx(0.5))
    assert base_r["ci_low"] == pytest.approx(0.025 * 0.5)
    assert base_r["ci_high"] == pytest.approx(0.975 * 0.5)


def test_summary_per_category_by_hand(con: Any) -> None:
    t = _rows(ct.summary(con, by_category=True, metrics=["m"], reps=2, uniforms=U))
    assert set(t) == {
        ("base", "x", "m"),
        ("base", "y", "m"),
        ("new", "x", "m"),
        ("new", "y", "m"),
    }
    assert t[("base", "x", "m")]["n"] == 2 and t[("base", "x", "m")]["mean"] == 0.5
    assert t[("new", "x", "m")]["mean"] == 1.0 and t[("new", "y", "m")]["mean"] == 0.5
    # category filter (LoCoMo's headline keeps categories 1-4)
    only_y = ct.summary(con, categories=["y"], metrics=["m"], reps=2, uniforms=U)
    assert only_y["n"].to_list() == [1, 1]


def test_deltas_are_paired_by_question(con: Any) -> None:
    t = _rows(ct.deltas(con, "base", reps=2, uniforms=U))
    assert set(t) == {("new", "m"), ("new", "r")}
    m = t[("new", "m")]
    # per question: 0, 1, 0
    assert (m["n"], m["baseline"], m["value"]) == (3, 0.5, pytest.approx(5 / 6))
    assert m["delta"] == pytest.approx(1 / 3)
    # replicates: q1 q2 q2 -> 2/3; q3 q3 q1 -> 0
    assert m["ci_low"] == pytest.approx(0.025 * 2 / 3)
    assert m["ci_high"] == pytest.approx(0.975 * 2 / 3)
    # r: q2 has no baseline value, so only q1 (0) and q3 (1) pair up
    r = t[("new", "r")]
    assert (r["n"], r["baseline"], r["value"], r["delta"]) == (2, 0.5, 1.0, 0.5)
    by_cat = _rows(ct.deltas(con, "base", by_category=True, metrics=["m"], reps=2, uniforms=U))
    assert by_cat[("new", "x", "m")]["delta"] == 0.5
    assert by_cat[("new", "y", "m")]["delta"] == 0.0


def test_bad_names_are_typed_errors(con: Any) -> None:
    with pytest.raises(InvalidFlagError, match="baseline 'nope'"):
        ct.deltas(con, "nope")
    with pytest.raises(InvalidFlagError, match="metric 'recall@10'"):
        ct.summary(con, metrics=["recall@10"])
    with pytest.raises(InvalidFlagError, match="uniforms"):
        ct.summary(con, reps=2, uniforms=np.array([[0.5, 1.0]] * 3))


def test_the_seeded_bootstrap_is_reproducible(tmp_path: Path) -> None:
    rng = np.random.RandomState(1)
    rows = {
        s: [{"qid": f"q{i:03d}", "category": "c", "m": float(v)} for i, v in enumerate(vals)]
        for s, vals in (("base", rng.rand(60)), ("new", rng.rand(60)))
    }
    _write(tmp_path, rows, metrics=("m",))
    first = ct.summary(ct.connect(tmp_path), seed=7, reps=300)
    again = ct.summary(ct.connect(tmp_path), seed=7, reps=300)
    other = ct.summary(ct.connect(tmp_path), seed=8, reps=300)
    assert first.equals(again)
    assert not first.equals(other)
    assert first["mean"].equals(other["mean"])  # only the interval depends on the seed
    for r in first.iter_rows(named=True):
        assert r["ci_low"] < r["mean"] < r["ci_high"]


def test_a_group_interval_does_not_depend_on_other_groups(tmp_path: Path) -> None:
    """Slot-major draws: adding a bigger dataset leaves a small one's interval as it was."""
    small = {"base": [{"qid": f"q{i}", "category": "c", "m": float(i % 2)} for i in range(5)]}
    _write(tmp_path / "a", small, metrics=("m",))
    alone = ct.summary(ct.connect(tmp_path / "a"), seed=3, reps=50)
    both = {**small, "new": [{"qid": f"q{i}", "category": "c", "m": 0.1} for i in range(40)]}
    _write(tmp_path / "b", both, metrics=("m",))
    together = ct.summary(ct.connect(tmp_path / "b"), seed=3, reps=50)
    assert together.filter(together["setting"] == "base").equals(alone)


def _reference(values: list[float], u: Any, level: float) -> tuple[float, float]:
    n = len(values)
    ordered = np.asarray(values)
    means = []
    for rep in range(u.shape[1]):
        pos = np.minimum(np.floor(u[:n, rep] * n), n - 1).astype(int)
        means.append(ordered[pos].mean())
    lo, hi = (1 - level) / 2, (1 + level) / 2
    return float(np.quantile(means, lo)), float(np.quantile(means, hi))


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=12),
    seed=st.integers(0, 2**16),
    reps=st.integers(1, 40),
)
def test_the_sql_bootstrap_equals_a_numpy_reference(
    tmp_path_factory: pytest.TempPathFactory, values: list[float], seed: int, reps: int
) -> None:
    folder = tmp_path_factory.mktemp("boot")
    rows = {"base": [{"qid": f"q{i:02d}", "category": "c", "m": v} for i, v in enumerate(values)]}
    _write(folder, rows, metrics=("m",))
    got = ct.summary(ct.connect(folder), seed=seed, reps=reps).to_dicts()[0]
    lo, hi = _reference(values, ct.draws(seed, reps, len(values)), 0.95)
    assert got["n"] == len(values)
    assert got["mean"] == pytest.approx(float(np.mean(values)))
    assert got["ci_low"] == pytest.approx(lo, abs=1e-12)
    assert got["ci_high"] == pytest.approx(hi, abs=1e-12)


def test_an_empty_campaign_gives_empty_tables(tmp_path: Path) -> None:
    CampaignFolder(tmp_path).write_manifest(
        {
            "campaign": "t",
            "baseline": "base",
            "cells": [{"cell": "0" * 32, "dataset": "d", "setting": "base", "harness": "x"}],
        }
    )
    con = ct.connect(tmp_path)
    assert ct.progress(con).to_dicts() == [{"dataset": "d", "done": 0, "cells": 1}]
    assert ct.summary(con).height == 0
    assert ct.deltas(con, "base").height == 0
    assert json.loads((tmp_path / "campaign.json").read_text())["campaign"] == "t"
