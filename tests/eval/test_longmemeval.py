"""LongMemEval loader and session/turn-level metrics on a hand-written sample."""

from __future__ import annotations

import pytest

from memhtml.eval.benchmarks import SAMPLES_DIR
from memhtml.eval.benchmarks.longmemeval import (
    is_abstention,
    load_longmemeval,
    parse_lme_date,
    parse_longmemeval,
    turn_id,
)
from memhtml.eval.benchmarks.metrics import (
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
    session_of_turn_id,
    sessions_from_turns,
    summarize,
)

SAMPLE = SAMPLES_DIR / "longmemeval_sample.json"


def test_parse_lme_date() -> None:
    dt = parse_lme_date("2023/05/20 (Sat) 02:21")
    assert dt is not None and dt.isoformat() == "2023-05-20T02:21:00+00:00"
    dt = parse_lme_date("2023/05/20")
    assert dt is not None and (dt.hour, dt.minute) == (0, 0)
    assert parse_lme_date("2023/02/30 (Thu) 10:00") is None
    assert parse_lme_date("May 20") is None


def test_helpers() -> None:
    assert turn_id("answer_ab_1", 3) == "answer_ab_1#3"
    assert session_of_turn_id(turn_id("answer_ab_1", 3)) == "answer_ab_1"
    assert is_abstention("7f3a91c2_abs") and not is_abstention("7f3a91c2")


def test_sample_corpora() -> None:
    corpora, report = load_longmemeval(SAMPLE)
    assert [c.scope_id for c in corpora] == ["7f3a91c2", "gpt4_5b2e0d71", "c19d4e88"]
    assert report.skip_reasons() == {"abstention question (_abs)": 1}
    assert report.n_questions_total == 4 and report.n_questions_loaded == 3
    assert report.counts["sessions"] == 15 and report.counts["turns"] == 38
    c = corpora[0]
    assert c.name == "longmemeval"
    assert len(c.docs) == 12
    d = c.doc("answer_7f3a91c2#1")
    assert d.session_id == "answer_7f3a91c2" and d.speaker == "user"
    assert d.text.startswith("user: I just adopted a beagle puppy")
    assert d.timestamp == "2023-05-20T10:37:00Z"
    assert c.doc("answer_7f3a91c2#4").timestamp == "2023-05-20T10:37:03Z"
    assert d.meta == {
        "role": "user",
        "session_date": "2023/05/20 (Sat) 10:37",
        "has_answer": "true",
    }
    assert "has_answer" not in c.doc("sharegpt_Qm2pLx9_0#1").meta
    q = c.questions[0]
    assert q.category == "single-session-user"
    assert q.gold_ids == ("answer_7f3a91c2#1",)
    assert q.meta["gold_session_ids"] == ("answer_7f3a91c2",)
    assert q.meta["question_date"] == "2023-06-02T19:45:00Z"
    multi = corpora[1].questions[0]
    assert multi.gold_ids == ("answer_5b2e0d71_1#1", "answer_5b2e0d71_2#3")
    assert multi.meta["answer"] == "3"  # an int answer becomes a str
    assistant = corpora[2].questions[0]
    assert assistant.gold_ids == ("answer_c19d4e88#2",)
    assert corpora[2].doc("answer_c19d4e88#2").speaker == "assistant"


def test_user_turns_only_like_the_official_corpus() -> None:
    corpora, report = load_longmemeval(SAMPLE, roles=("user",))
    assert all(d.speaker == "user" for c in corpora for d in c.docs)
    # the single-session-assistant question has its evidence in an assistant turn
    assert report.skip_reasons() == {
        "abstention question (_abs)": 1,
        "no has_answer turn among the loaded roles": 1,
    }
    assert [c.scope_id for c in corpora] == ["7f3a91c2", "gpt4_5b2e0d71"]
    # turn numbering does not change when assistant turns are left out
    assert corpora[1].questions[0].gold_ids == ("answer_5b2e0d71_1#1", "answer_5b2e0d71_2#3")
    kept, _ = load_longmemeval(SAMPLE, roles=("user",), keep_skipped_corpora=True)
    assert len(kept) == 4 and sum(len(c.questions) for c in kept) == 2
    with pytest.raises(ValueError):
        load_longmemeval(SAMPLE, roles=())


def test_quirks_are_reported() -> None:
    entry = {
        "question_id": "q1",
        "question_type": "knowledge-update",
        "question": "?",
        "answer": "x",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s1", "s1", "answer_1"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00", "bad date", "2023/05/03 (Wed) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "a"}],
            [{"role": "user", "content": "b"}],
            [{"role": "user", "content": "c", "has_answer": True}],
        ],
        "answer_session_ids": ["answer_1", "answer_missing"],
    }
    corpora, report = parse_longmemeval([entry])
    c = corpora[0]
    assert c.doc_ids == ("s1#1", "s1~2#1", "answer_1#1")
    assert c.doc("s1~2#1").timestamp is None
    assert report.counts["sessions_without_time"] == 1
    assert [(m.token, m.reason) for m in report.malformed_ids] == [("answer_missing", "unresolved")]
    assert c.questions[0].meta["gold_session_ids"] == ("answer_1",)
    assert any("repeated session id" in n for n in report.notes)


def test_session_and_turn_level_metrics_end_to_end() -> None:
    corpora, _ = load_longmemeval(SAMPLE)
    multi = corpora[1]
    q = multi.questions[0]
    # a retriever's turn ranking for "How many bikes do I currently own?"
    ranked_turns = [
        "answer_5b2e0d71_2#3",  # gold turn
        "answer_5b2e0d71_2#1",
        "ultrachat_77120#1",
        "answer_5b2e0d71_1#2",
        "answer_5b2e0d71_1#1",  # gold turn
        "sharegpt_Wc7tT3e_0#1",
    ]
    assert set(ranked_turns) <= set(multi.doc_ids)
    # turn level: gold at ranks 1 and 5
    assert recall_any_at_k(ranked_turns, q.gold_ids, 1) == 1.0
    assert recall_all_at_k(ranked_turns, q.gold_ids, 3) == 0.0
    assert recall_all_at_k(ranked_turns, q.gold_ids, 5) == 1.0
    # nDCG@5 = (1 + 1/log2(5)) / (1 + 1) = 0.71534
    assert ndcg_any_at_k(ranked_turns, q.gold_ids, 5) == pytest.approx(0.715338, abs=1e-6)
    # session level: answer_5b2e0d71_2, ultrachat_77120, answer_5b2e0d71_1, sharegpt_...
    sessions = sessions_from_turns(ranked_turns)
    assert sessions == [
        "answer_5b2e0d71_2",
        "ultrachat_77120",
        "answer_5b2e0d71_1",
        "sharegpt_Wc7tT3e_0",
    ]
    gold_sessions = q.meta["gold_session_ids"]
    assert recall_any_at_k(sessions, gold_sessions, 1) == 1.0
    assert recall_all_at_k(sessions, gold_sessions, 2) == 0.0
    assert recall_all_at_k(sessions, gold_sessions, 3) == 1.0
    # session nDCG@3 = (1 + 1/log2(3)) / 2 = 0.81546
    assert ndcg_any_at_k(sessions, gold_sessions, 3) == pytest.approx(0.815465, abs=1e-6)
    # the doc's own session_id agrees with the id-derived session
    docs = {d.doc_id: d for d in multi.docs}
    assert (
        sessions_from_turns(ranked_turns, {t: docs[t].session_id or "" for t in ranked_turns})
        == sessions
    )
    rows = [
        {
            "qid": q.qid,
            "category": q.category,
            **{f"recall_any@{k}": recall_any_at_k(sessions, gold_sessions, k) for k in (1, 3, 5)},
        }
    ]
    out = summarize(rows)
    assert out["groups"]["multi-session"]["metrics"]["recall_any@1"] == {"mean": 1.0, "n": 1}
