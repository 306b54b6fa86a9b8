"""The benchmarks' retrieval metrics: hand arithmetic and properties."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.eval.benchmarks.metrics import (
    both_in_top_k,
    hit_at_k,
    ndcg_any_at_k,
    rank_of,
    ranked_before,
    recall_all_at_k,
    recall_any_at_k,
    recall_at_k,
    reciprocal_rank,
    session_of_turn_id,
    sessions_from_turns,
    stale_above_current,
    summarize,
)

RANKED = ["a", "b", "c", "d", "e"]


# --- recall family -----------------------------------------------------------


def test_recall_hand_values() -> None:
    assert recall_at_k(RANKED, {"b", "e", "z"}, 1) == 0.0
    assert recall_at_k(RANKED, {"b", "e", "z"}, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, {"b", "e", "z"}, 5) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, ["b", "b"], 2) == 1.0  # multiplicity is irrelevant
    assert recall_any_at_k(RANKED, {"c", "z"}, 2) == 0.0
    assert recall_any_at_k(RANKED, {"c", "z"}, 3) == 1.0
    assert recall_all_at_k(RANKED, {"a", "c"}, 2) == 0.0
    assert recall_all_at_k(RANKED, {"a", "c"}, 3) == 1.0
    assert recall_all_at_k(RANKED, {"a", "z"}, 50) == 0.0
    assert hit_at_k(RANKED, "c", 3) == 1.0 and hit_at_k(RANKED, "c", 2) == 0.0
    # a single id given as a str is one id, not a set of characters
    assert recall_at_k(["ab"], "ab", 1) == 1.0


def test_short_ranking_and_empty_ranking() -> None:
    assert recall_at_k(["a"], {"a", "b"}, 10) == 0.5
    assert recall_any_at_k([], {"a"}, 10) == 0.0
    assert ndcg_any_at_k([], {"a"}, 10) == 0.0
    assert reciprocal_rank([], {"a"}) == 0.0


@pytest.mark.parametrize(
    "fn", [recall_at_k, recall_any_at_k, recall_all_at_k, hit_at_k, ndcg_any_at_k]
)
def test_argument_errors(fn: Callable[..., float]) -> None:
    f = fn
    with pytest.raises(ValueError, match="empty"):
        f(RANKED, set(), 5)
    with pytest.raises(ValueError, match="twice"):
        f(["a", "b", "a"], {"a"}, 5)
    for bad_k in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="k must be"):
            f(RANKED, {"a"}, bad_k)
    with pytest.raises(TypeError):
        f("abc", {"a"}, 2)


# --- nDCG ----------------------------------------------------------------------


def test_ndcg_any_hand_values() -> None:
    # LongMemEval's dcg: rel_1 + sum_{i>=2} rel_i / log2(i).
    # gold {b, d}, ranking a b c d e, k = 5:
    #   DCG  = 1/log2(2) + 1/log2(4) = 1 + 0.5 = 1.5
    #   IDCG = 1 + 1/log2(2) = 2          -> 0.75
    assert ndcg_any_at_k(RANKED, {"b", "d"}, 5) == pytest.approx(0.75)
    # k = 3: DCG = 1 (only b), IDCG = 2   -> 0.5
    assert ndcg_any_at_k(RANKED, {"b", "d"}, 3) == pytest.approx(0.5)
    # ranks 1 and 2 are both undiscounted: gold at rank 2 alone scores 1.0
    assert ndcg_any_at_k(RANKED, {"b"}, 5) == 1.0
    # gold {c}: DCG = 1/log2(3) = 0.6309...
    assert ndcg_any_at_k(RANKED, {"c"}, 5) == pytest.approx(1 / math.log2(3))
    # gold {a, c, e}, k = 5: DCG = 1 + 1/log2(3) + 1/log2(5) = 1 + 0.63093 + 0.43068 = 2.06161
    #   IDCG = 1 + 1 + 1/log2(3) = 2.63093  -> 0.78360
    expected = (1 + 1 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3))
    assert ndcg_any_at_k(RANKED, {"a", "c", "e"}, 5) == pytest.approx(expected)
    assert ndcg_any_at_k(RANKED, {"a", "c", "e"}, 5) == pytest.approx(0.783604, abs=1e-6)
    # more gold than k: IDCG uses min(|gold|, k) ones
    assert ndcg_any_at_k(RANKED, {"a", "b", "c"}, 2) == 1.0
    assert ndcg_any_at_k(RANKED, {"z"}, 5) == 0.0


def _longmemeval_reference_ndcg(
    rankings: list[int], gold: set[str], ids: list[str], k: int
) -> float:
    # Transcription of LongMemEval's eval_utils.ndcg for a cross-check.
    def dcg(rel: list[float], kk: int) -> float:
        rel = rel[:kk]
        if not rel:
            return 0.0
        return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))

    relevances = [1.0 if d in gold else 0.0 for d in ids]
    ideal = dcg(sorted(relevances, reverse=True), k)
    actual = dcg([relevances[i] for i in rankings[:k]], k)
    return 0.0 if ideal == 0 else actual / ideal


@given(
    st.permutations([f"d{i}" for i in range(12)]),
    st.sets(st.sampled_from([f"d{i}" for i in range(12)]), min_size=1),
    st.integers(min_value=1, max_value=15),
)
def test_ndcg_matches_longmemeval_reference(order: list[str], gold: set[str], k: int) -> None:
    ids = [f"d{i}" for i in range(12)]
    rankings = [ids.index(d) for d in order]
    ref = _longmemeval_reference_ndcg(rankings, gold, ids, k)
    assert ndcg_any_at_k(order, gold, k) == pytest.approx(ref)


# --- properties ------------------------------------------------------------------

IDS = [f"t{i}" for i in range(10)]
rankings = st.lists(st.sampled_from(IDS), unique=True, max_size=10)
golds = st.sets(st.sampled_from([*IDS, "x1", "x2"]), min_size=1)
ks = st.integers(min_value=1, max_value=12)


@given(rankings, golds, ks)
def test_bounded_and_ordered(ranked: list[str], gold: set[str], k: int) -> None:
    r_all = recall_all_at_k(ranked, gold, k)
    r = recall_at_k(ranked, gold, k)
    r_any = recall_any_at_k(ranked, gold, k)
    n = ndcg_any_at_k(ranked, gold, k)
    for v in (r_all, r, r_any, n, reciprocal_rank(ranked, gold)):
        assert 0.0 <= v <= 1.0
    assert r_all <= r <= r_any
    assert r_any in (0.0, 1.0) and r_all in (0.0, 1.0)
    assert (n > 0) == (r_any == 1.0)
    assert hit_at_k(ranked, gold, k) == r_any
    assert (reciprocal_rank(ranked, gold) >= 1 / k) == (r_any == 1.0)


@given(rankings, golds, ks)
def test_monotone_in_k(ranked: list[str], gold: set[str], k: int) -> None:
    for fn in (recall_at_k, recall_any_at_k, recall_all_at_k):
        assert fn(ranked, gold, k) <= fn(ranked, gold, k + 1)


@given(st.permutations(IDS), st.sets(st.sampled_from(IDS), min_size=1), ks)
def test_perfect_ranking_scores_one(order: list[str], gold: set[str], k: int) -> None:
    ranked = sorted(gold) + [d for d in order if d not in gold]
    assert ndcg_any_at_k(ranked, gold, k) == pytest.approx(1.0)
    assert recall_any_at_k(ranked, gold, k) == 1.0
    assert reciprocal_rank(ranked, gold) == 1.0


# --- rank-based predicates -----------------------------------------------------


def test_reciprocal_rank_and_rank_of() -> None:
    assert reciprocal_rank(RANKED, {"c", "e"}) == pytest.approx(1 / 3)
    assert rank_of(RANKED, {"c", "e"}) == 3
    assert rank_of(RANKED, "z") is None
    assert rank_of(RANKED, set()) is None
    with pytest.raises(ValueError):
        reciprocal_rank(RANKED, set())


def test_stale_above_current() -> None:
    # current ranked, a stale one above it
    assert stale_above_current(["s1", "cur", "s2"], "cur", {"s1", "s2"}) is True
    # current ranked first: stale below does not count
    assert stale_above_current(["cur", "s1"], "cur", {"s1"}) is False
    # current absent, a stale one retrieved
    assert stale_above_current(["x", "s1"], "cur", {"s1"}) is True
    # neither ranked
    assert stale_above_current(["x", "y"], "cur", {"s1"}) is False
    # no stale facts at all: always False
    assert stale_above_current(["x", "cur"], "cur", set()) is False
    # top-k cut: the stale one at rank 3 is outside the top 2 and current is absent
    assert stale_above_current(["x", "y", "s1", "cur"], "cur", {"s1"}, k=2) is False
    assert stale_above_current(["x", "s1", "y", "cur"], "cur", {"s1"}, k=2) is True
    # a single stale id may be given as a str
    assert stale_above_current(["s1", "cur"], "cur", "s1") is True
    with pytest.raises(ValueError, match="also listed as stale"):
        stale_above_current(["cur"], "cur", {"cur"})
    # a ranking cannot tie the two: the same id twice is refused
    with pytest.raises(ValueError, match="twice"):
        stale_above_current(["cur", "s1", "cur"], "cur", {"s1"})


@given(st.permutations(["cur", "s1", "s2", "x", "y"]), st.integers(1, 5))
def test_stale_above_current_matches_positions(order: list[str], k: int) -> None:
    top = order[:k]
    cur = top.index("cur") if "cur" in top else len(top)
    expected = any(top.index(s) < cur for s in ("s1", "s2") if s in top)
    assert stale_above_current(order, "cur", {"s1", "s2"}, k=k) is expected


def test_both_in_top_k() -> None:
    ranked = ["a1", "x", "b1", "a2", "b2"]
    assert both_in_top_k(ranked, {"a1", "a2"}, {"b1", "b2"}, 2) == 0.0
    assert both_in_top_k(ranked, {"a1", "a2"}, {"b1", "b2"}, 3) == 1.0
    assert both_in_top_k(ranked, {"a1", "a2"}, {"b1", "b2"}, 3, mode="all") == 0.0
    assert both_in_top_k(ranked, {"a1", "a2"}, {"b1", "b2"}, 5, mode="all") == 1.0
    # one message listed in both groups satisfies both
    assert both_in_top_k(ranked, {"x"}, {"x"}, 2) == 1.0
    with pytest.raises(ValueError):
        both_in_top_k(ranked, set(), {"b1"}, 3)
    with pytest.raises(ValueError, match="mode"):
        both_in_top_k(ranked, {"a1"}, {"b1"}, 3, mode="some")  # type: ignore[arg-type]


def test_ranked_before() -> None:
    ranked = ["new", "x", "old"]
    assert ranked_before(ranked, {"new"}, {"old"}) is True
    assert ranked_before(ranked, {"old"}, {"new"}) is False
    assert ranked_before(["x", "new"], {"new"}, {"old"}) is True  # original not retrieved
    assert ranked_before(["x", "old"], {"new"}, {"old"}) is False  # update not retrieved
    assert ranked_before(["x"], {"new"}, {"old"}) is False
    assert ranked_before(ranked, {"new"}, {"old"}, k=2) is True
    assert ranked_before(["old", "new"], {"new"}, {"old"}, k=1) is False
    # the best-ranked member represents a group
    assert ranked_before(["o1", "n1", "o2"], {"n1", "n2"}, {"o1", "o2"}) is False
    # shared ids order nothing; a group left empty is not evaluable
    assert ranked_before(["s", "old", "new"], {"s", "new"}, {"s", "old"}) is False
    assert ranked_before(ranked, {"s"}, {"s"}) is None
    assert ranked_before(ranked, set(), {"old"}) is None
    assert ranked_before(ranked, {"new"}, set()) is None


# --- sessions --------------------------------------------------------------------


def test_sessions_from_turns_first_occurrence() -> None:
    turns = ["s2#3", "s1#1", "s2#1", "s3#2", "s1#4"]
    assert sessions_from_turns(turns) == ["s2", "s1", "s3"]
    assert sessions_from_turns(turns, {t: t[:2] for t in turns}) == ["s2", "s1", "s3"]
    assert session_of_turn_id("answer_ab_1#12") == "answer_ab_1"
    assert session_of_turn_id("a#b#3") == "a#b"
    with pytest.raises(ValueError):
        session_of_turn_id("nosep")
    # session-level recall over the deduplicated ranking = LongMemEval's
    # turn2session (widen k until k distinct sessions are covered)
    sessions = sessions_from_turns(turns)
    assert recall_all_at_k(sessions, {"s1", "s2"}, 2) == 1.0
    assert recall_any_at_k(sessions, {"s3"}, 2) == 0.0


def _turn2session_reference(
    ranked_turns: list[str], gold_sessions: set[str], k: int
) -> tuple[float, float]:
    # LongMemEval's evaluate_retrieval_turn2session, recall part.
    sess = [t.split("#")[0] for t in ranked_turns]
    eff = k
    while eff <= len(sess) and len(set(sess[:eff])) < k:
        eff += 1
    top = set(sess[:eff])
    return float(any(g in top for g in gold_sessions)), float(all(g in top for g in gold_sessions))


@given(
    st.lists(
        st.tuples(st.sampled_from(["s1", "s2", "s3", "s4"]), st.integers(1, 4)),
        unique=True,
        max_size=16,
    ),
    st.sets(st.sampled_from(["s1", "s2", "s3", "s4"]), min_size=1),
    st.integers(1, 5),
)
def test_session_recall_matches_turn2session(
    pairs: list[tuple[str, int]], gold: set[str], k: int
) -> None:
    turns = [f"{s}#{i}" for s, i in pairs]
    sessions = sessions_from_turns(turns)
    ref_any, ref_all = _turn2session_reference(turns, gold, k)
    assert recall_any_at_k(sessions, gold, k) == ref_any
    assert recall_all_at_k(sessions, gold, k) == ref_all


# --- summarize ---------------------------------------------------------------------


def test_summarize_by_category() -> None:
    rows = [
        {"qid": "1", "category": "temporal", "r@5": 1.0, "stale": True, "kb": None},
        {"qid": "2", "category": "temporal", "r@5": 0.5, "stale": False, "kb": True},
        {"qid": "3", "category": "multi-hop", "r@5": 0.0, "stale": False, "kb": None},
    ]
    out = summarize(rows)
    assert out["group_by"] == "category"
    assert set(out["overall"]["metrics"]) == {"r@5", "stale", "kb"}  # qid is a str
    assert out["overall"]["n"] == 3
    assert out["overall"]["metrics"]["r@5"] == {"mean": 0.5, "n": 3}
    assert out["overall"]["metrics"]["stale"]["mean"] == pytest.approx(1 / 3)
    assert out["overall"]["metrics"]["kb"] == {"mean": 1.0, "n": 1}
    assert list(out["groups"]) == ["multi-hop", "temporal"]
    assert out["groups"]["temporal"]["metrics"]["r@5"] == {"mean": 0.75, "n": 2}
    assert out["groups"]["multi-hop"]["metrics"]["kb"] == {"mean": None, "n": 0}
    json.dumps(out)  # JSON-ready


def test_summarize_explicit_metrics_and_errors() -> None:
    rows = [{"size": "6k", "hit": 1, "x": float("nan")}, {"size": "6k", "hit": 0, "x": 1.0}]
    out = summarize(rows, metrics=["hit", "x"], by="size")
    assert out["groups"]["6k"]["metrics"]["hit"] == {"mean": 0.5, "n": 2}
    assert out["groups"]["6k"]["metrics"]["x"] == {"mean": 1.0, "n": 1}
    with pytest.raises(TypeError):
        summarize([{"category": "a", "m": "high"}], metrics=["m"])
    assert summarize([])["overall"] == {"n": 0, "metrics": {}}
