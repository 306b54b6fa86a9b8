"""Tuning finds the known-best weights on a toy capture and always reports held-out."""

from __future__ import annotations

from functools import partial

import pytest

from memhtml.analysis.replay import ArmCapture, FusionConfig
from memhtml.analysis.tuning import (
    OVERFIT_GAP,
    coordinate_search,
    grid_search,
    split_queries,
)
from memhtml.eval.benchmarks.metrics import recall_at_k, reciprocal_rank


def _toy(n: int = 60, recency: bool = True) -> tuple[ArmCapture, dict[str, frozenset[str]]]:
    """The vector arm ranks the gold first; fts and recency bury it under distractors.

    Under production weights the first distractor wins (fts rank 1 + vector rank 2
    beats fts rank 6 + vector rank 1); only fts = recency = 0 puts the gold first.
    """
    cap = ArmCapture(
        {}, {}, {}, {"fts": 1.0, "vector": 1.0, "recency": 0.5, "salience": 0.4}, 60, 40
    )
    gold: dict[str, frozenset[str]] = {}
    for i in range(n):
        q = f"q{i:03d}"
        g = f"gold-{i}"
        distractors = [f"d{i}-{j}" for j in range(5)]
        noise = [f"v{i}-{j}" for j in range(5)]
        cap.queries[q] = f"query {i}"
        cap.arms[q] = {
            "fts": (*distractors, g),
            "vector": (g, *distractors, *noise),
            "recency": (*distractors, *noise, g) if recency else (),
            "salience": (),
        }
        cap.sql_fused[q] = ()
        gold[q] = frozenset({g})
    return cap, gold


def test_split_is_seeded_disjoint_and_order_free() -> None:
    ids = [f"q{i}" for i in range(50)]
    train, held = split_queries(ids, 0.3, seed=1)
    assert len(held) == 15 and len(train) == 35
    assert not set(train) & set(held)
    assert split_queries(list(reversed(ids)), 0.3, seed=1) == (train, held)
    assert split_queries(ids, 0.3, seed=2) != (train, held)
    with pytest.raises(ValueError):
        split_queries(ids, 1.0)


def test_grid_search_finds_vector_over_fts() -> None:
    cap, gold = _toy()
    report = grid_search(
        cap,
        gold,
        reciprocal_rank,
        metric_name="mrr",
        grid={
            "fts": (0.0, 0.5, 1.0),
            "vector": (0.0, 1.0),
            "recency": (0.0, 0.5),
            "salience": (0.0,),
        },
        ks=(10, 60),
        limit=10,
        seed=0,
    )
    best = report.best
    assert best.config.weights == {"fts": 0.0, "vector": 1.0, "recency": 0.0, "salience": 0.0}
    assert best.train == pytest.approx(1.0) and best.held_out == pytest.approx(1.0)
    assert report.baseline.train < 1.0
    assert report.n_held_out == 18 and report.n_train == 42
    text = "\n".join(report.lines())
    assert "held-out" in text and "production" in text
    assert "WARNING" not in text
    frame = report.frame()
    assert {"train", "held_out", "gap", "w_fts", "k"} <= set(frame.columns)
    assert frame.height == len(report.scored)
    frontier = report.frontier("k")
    assert [row["k"] for row in frontier] == [10, 60]
    assert all("held_out" in row for row in frontier)


def test_coordinate_search_moves_to_the_better_arm() -> None:
    cap, gold = _toy(recency=False)
    report = coordinate_search(
        cap,
        gold,
        partial(recall_at_k, k=1),
        metric_name="recall@1",
        grid={"fts": (0.0, 1.0), "vector": (1.0, 2.0), "recency": (0.0, 0.5), "salience": (0.0,)},
        ks=(60,),
        limit=10,
    )
    assert report.best.train == pytest.approx(1.0)
    assert report.best.held_out == pytest.approx(1.0)
    assert report.baseline.train == pytest.approx(0.0)
    assert report.to_data()["best"]["held_out"] == pytest.approx(1.0)


def test_coordinate_search_can_stop_at_a_local_optimum() -> None:
    """With recency misleading too, no single move helps: the grid is the safer search."""
    cap, gold = _toy()
    grid = {"fts": (0.0, 1.0), "vector": (1.0, 2.0), "recency": (0.0, 0.5), "salience": (0.0,)}
    metric = partial(recall_at_k, k=1)
    stuck = coordinate_search(cap, gold, metric, grid=grid, ks=(60,), limit=10)
    full = grid_search(cap, gold, metric, grid=grid, ks=(60,), limit=10)
    assert stuck.best.train == pytest.approx(0.0)
    assert full.best.train == pytest.approx(1.0)


def test_overfit_is_flagged() -> None:
    """A winner that only works on train is printed with a warning next to held-out."""
    cap, gold = _toy(40)
    train, _held = split_queries(list(gold), 0.3, seed=0)
    for q in train:  # on train the fts arm is right, on held-out it is wrong
        g = next(iter(gold[q]))
        cap.arms[q] = {**cap.arms[q], "fts": (g,), "vector": tuple(f"x{j}" for j in range(5))}
    report = grid_search(
        cap,
        gold,
        reciprocal_rank,
        metric_name="mrr",
        grid={"fts": (0.0, 1.0), "vector": (0.0, 1.0), "recency": (0.0,), "salience": (0.0,)},
        ks=(60,),
        limit=10,
        seed=0,
    )
    assert report.best.gap > OVERFIT_GAP
    assert report.overfit
    assert any("WARNING" in line for line in report.lines())


def test_gold_must_be_captured() -> None:
    cap, gold = _toy(4)
    with pytest.raises(ValueError):
        grid_search(cap, {**gold, "missing": frozenset({"x"})}, reciprocal_rank)


def test_fusion_config_label_is_stable() -> None:
    assert FusionConfig().label() == "fts=1.5 vector=1 recency=0.25 salience=0.4 k=10 mmr=off"
