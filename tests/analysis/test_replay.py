"""Offline fusion of captured arms reproduces the SQL order exactly (production weights)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("polars")

from memhtml.analysis.replay import ArmCapture, FusionConfig, capture, fuse
from memhtml.contracts.vocab import DEFAULT_RRF_K, DEFAULT_WEIGHTS
from memhtml.domain.mmr import DEFAULT_MMR_LAMBDA
from memhtml.index.retrieval import ARM_LIMIT


@pytest.fixture(scope="module")
def captures(toy_corpus: Any, toy_queries: dict[str, str]) -> dict[int, ArmCapture]:
    return {depth: capture(toy_corpus, toy_queries, arm_limit=depth) for depth in (ARM_LIMIT, 50)}


def test_capture_is_the_production_configuration(captures: dict[int, ArmCapture]) -> None:
    cap = captures[ARM_LIMIT]
    assert cap.weights == DEFAULT_WEIGHTS
    assert cap.k == DEFAULT_RRF_K
    assert len(cap.query_ids) == 40
    arms = {arm for lists in cap.arms.values() for arm, ranked in lists.items() if ranked}
    assert arms == {"fts", "vector", "recency", "salience"}
    assert cap.vectors


@pytest.mark.parametrize("mmr_lambda", [DEFAULT_MMR_LAMBDA, 1.0, 0.3])
@pytest.mark.parametrize("limit", [5, 10, 40, 50])
def test_replay_equals_search(
    toy_corpus: Any, captures: dict[int, ArmCapture], limit: int, mmr_lambda: float
) -> None:
    """Production weights and k; search(limit=N) runs its arms at max(ARM_LIMIT, N)."""
    cap = captures[max(ARM_LIMIT, limit)]
    config = FusionConfig(DEFAULT_WEIGHTS, DEFAULT_RRF_K, mmr_lambda)
    for qid, text in cap.queries.items():
        sql = [h.path for h in toy_corpus.search(text, limit=limit, mmr_lambda=mmr_lambda).hits]
        assert cap.ranking(qid, config, limit) == sql, (qid, text)


def test_sql_fused_order_is_rrf_of_the_arms(captures: dict[int, ArmCapture]) -> None:
    cap = captures[50]
    for qid in cap.query_ids:
        replayed = cap.ranking(qid, cap.capture_config(), limit=10_000)
        assert replayed == [p for p, _ in cap.sql_fused[qid]]


def test_other_weights_match_sql_when_the_arm_pool_is_unchanged(
    toy_corpus: Any, captures: dict[int, ArmCapture]
) -> None:
    """fts, vector and k as captured, so the content pool recency and salience rank is too."""
    cap = captures[ARM_LIMIT]
    weights = {**DEFAULT_WEIGHTS, "recency": 1.5, "salience": 0.1}
    config = FusionConfig(weights, DEFAULT_RRF_K, None)
    for qid, text in cap.queries.items():
        sql = toy_corpus.search(text, limit=10, weights=weights, mmr_lambda=1.0).hits
        assert cap.ranking(qid, config, 10) == [h.path for h in sql]


def test_frames_and_persistence(captures: dict[int, ArmCapture], tmp_path: Path) -> None:
    cap = captures[ARM_LIMIT]
    frame = cap.arm_frame()
    assert frame.columns == ["query_id", "arm", "rank", "path"]
    assert frame.height == sum(len(r) for lists in cap.arms.values() for r in lists.values())
    cap.write(tmp_path / "cap")
    back = ArmCapture.read(tmp_path / "cap")
    config = FusionConfig(DEFAULT_WEIGHTS, DEFAULT_RRF_K, DEFAULT_MMR_LAMBDA)
    assert back.rankings(config, 10) == cap.rankings(config, 10)
    assert back.sql_fused == cap.sql_fused
    replay = cap.replay_frame(config, 10)
    assert set(replay["query_id"].unique()) == set(cap.query_ids)


def test_fuse_zero_weights_and_config_validation() -> None:
    arms = {"fts": ["a", "b"], "vector": ["b", "c"]}
    assert fuse(
        arms, FusionConfig({"fts": 1, "vector": 0, "recency": 0, "salience": 0}), limit=5
    ) == ["a", "b"]
    # 1/61 + 1/62 for b beats 1/61 for a and c (ties by path)
    assert fuse(arms, FusionConfig({"fts": 1, "vector": 1}), limit=5) == ["b", "a", "c"]
    with pytest.raises(ValueError):
        FusionConfig(k=0)
    with pytest.raises(ValueError):
        FusionConfig(mmr_lambda=1.5)
    assert FusionConfig(mmr_lambda=1.0).uses_mmr is False
