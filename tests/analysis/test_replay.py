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


TIME_QUERIES = {
    "t0": "apple river in May 2023",
    "t1": "coffee tea garden on 5 May 2023",
    "t2": "python rust memory during 2023",
    "t3": "search query fusion in March 2023",
    "t4": "piano violin last month",  # May 2024 against the corpus clock: nothing inside
    "t5": "harbor lantern September 9, 2023",
}


@pytest.fixture(scope="module")
def time_capture(toy_corpus: Any) -> ArmCapture:
    return capture(toy_corpus, TIME_QUERIES, arm_limit=ARM_LIMIT)  # as search(limit<=40) runs


@pytest.mark.parametrize("mmr_lambda", [DEFAULT_MMR_LAMBDA, 1.0])
@pytest.mark.parametrize("near_duplicates", [True, False])
@pytest.mark.parametrize("limit", [5, 10, 40])
def test_replay_equals_search_for_queries_naming_a_time(
    toy_corpus: Any, time_capture: ArmCapture, limit: int, mmr_lambda: float, near_duplicates: bool
) -> None:
    """The time-expression list is applied alike by search and by the replay."""
    config = FusionConfig(
        DEFAULT_WEIGHTS, DEFAULT_RRF_K, mmr_lambda, near_duplicates=near_duplicates
    )
    for qid, text in TIME_QUERIES.items():
        got = toy_corpus.search(
            text, limit=limit, mmr_lambda=mmr_lambda, near_duplicates=near_duplicates
        )
        assert time_capture.ranking(qid, config, limit) == [h.path for h in got.hits], text


def test_a_named_time_lifts_its_memories_and_is_reported(toy_corpus: Any) -> None:
    query = TIME_QUERIES["t0"]
    on = toy_corpus.search(query, limit=10, explain=True)
    off = toy_corpus.search(query, limit=10, time_weight=0)
    assert on.time_interval == {
        "expression": "May 2023",
        "start": "2023-05-01",
        "end": "2023-06-01",
    }
    assert off.time_interval is None

    def inside(hits: Any) -> int:
        return sum(1 for h in hits if (h.event_at or "").startswith("2023-05"))

    assert inside(on.hits) > inside(off.hits)
    lifted = [h for h in on.hits if "time_expression" in h.adjustments]
    assert lifted and all(h.event_at.startswith("2023-05") for h in lifted)
    for h in on.hits:  # the arms' contributions plus the adjustments are the score
        arms = sum(a["contribution"] for a in (h.arms or {}).values())
        assert h.score == pytest.approx(arms + sum(h.adjustments.values()))


def test_an_expression_with_nothing_inside_changes_nothing(toy_corpus: Any) -> None:
    query = TIME_QUERIES["t4"]
    on = toy_corpus.search(query, limit=10)
    off = toy_corpus.search(query, limit=10, time_weight=0)
    assert on.time_interval is not None and on.time_interval["start"] == "2024-05-01"
    assert [h.path for h in on.hits] == [h.path for h in off.hits]


def test_time_weight_zero_replays_without_the_list(
    toy_corpus: Any, time_capture: ArmCapture
) -> None:
    config = FusionConfig(DEFAULT_WEIGHTS, DEFAULT_RRF_K, DEFAULT_MMR_LAMBDA, time_weight=0.0)
    assert "time=0" in config.label()
    for qid, text in TIME_QUERIES.items():
        got = toy_corpus.search(text, limit=10, time_weight=0)
        assert time_capture.ranking(qid, config, 10) == [h.path for h in got.hits]
    with pytest.raises(ValueError, match="time_weight"):
        FusionConfig(time_weight=-1)


def test_capture_keeps_its_anchor_across_persistence(
    time_capture: ArmCapture, tmp_path: Path
) -> None:
    assert set(time_capture.anchors.values()) == {"2024-06-01"}
    time_capture.write(tmp_path / "cap")
    back = ArmCapture.read(tmp_path / "cap")
    assert back.anchors == time_capture.anchors
    config = FusionConfig(DEFAULT_WEIGHTS, DEFAULT_RRF_K, DEFAULT_MMR_LAMBDA)
    assert back.rankings(config, 10) == time_capture.rankings(config, 10)
