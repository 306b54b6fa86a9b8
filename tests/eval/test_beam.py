"""BEAM 100K loader: a hand-written sample conversation, plus the real split when present."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memhtml.eval.benchmarks import SAMPLES_DIR, default_data_root
from memhtml.eval.benchmarks.beam import (
    CATEGORIES,
    flatten_ids,
    load_beam,
    load_beam_conversation,
    parse_beam_conversation,
    parse_time_anchor,
)
from memhtml.eval.benchmarks.metrics import both_in_top_k, ranked_before

SAMPLE_ROOT = SAMPLES_DIR / "beam"


def _real() -> Path:
    root = default_data_root()
    path = None if root is None else root / "beam" / "100K"
    if path is None or not path.is_dir():
        pytest.skip("BEAM data not present")
    return path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("March-15-2024", "2024-03-15"),
        ("January-05-2025", "2025-01-05"),
        ("Sep-02-2024", "2024-09-02"),
        ("March 15, 2024", "2024-03-15"),
        ("2024-03-15", "2024-03-15"),
        ("Smarch-15-2024", None),
        ("February-30-2024", None),
    ],
)
def test_parse_time_anchor(raw: str, expected: str | None) -> None:
    assert parse_time_anchor(raw) == expected


def test_flatten_ids() -> None:
    assert list(flatten_ids([1, [2, 3], 4])) == ["1", "2", "3", "4"]
    assert list(flatten_ids({"a": [5], "b": [[6], 7]})) == ["5", "6", "7"]
    assert list(flatten_ids(None)) == []
    assert list(flatten_ids([])) == []


def test_sample_docs() -> None:
    corpora, report = load_beam(SAMPLE_ROOT)
    assert [c.scope_id for c in corpora] == ["1"]
    c = corpora[0]
    assert c.name == "beam-100k"
    assert c.doc_ids == tuple(str(i) for i in range(10))
    d0 = c.doc("0")
    assert d0.text.startswith("user: I'm starting a budget tracker")
    assert d0.speaker == "user" and d0.session_id == "batch-1"
    assert d0.timestamp == "2024-03-15T00:00:00Z"
    assert d0.meta["time_anchor"] == "March-15-2024"
    assert d0.meta["turn_group"] == "1.0" and d0.meta["index"] == "1,1"
    assert c.doc("5").timestamp == "2024-03-15T00:00:05Z"  # carried forward, in order
    assert c.doc("5").meta["anchor_date"] == "2024-03-15"
    assert "time_anchor" not in c.doc("5").meta
    assert c.doc("6").timestamp == "2024-04-05T00:00:00Z"  # the next batch's anchor
    assert c.doc("9").session_id == "batch-2" and c.doc("9").meta["turn_group"] == "2.1"
    assert c.doc("8").meta["index"] == "2,2)"  # raw value kept as-is
    assert report.counts["messages"] == 10 and report.counts["batches"] == 2


def test_sample_questions() -> None:
    c, report = load_beam_conversation(SAMPLE_ROOT / "1")
    qs = {q.qid: q for q in c.questions}
    assert report.n_questions_total == 13
    assert report.skip_reasons() == {
        "no source_chat_ids (abstention)": 1,
        "empty source_chat_ids": 1,
    }
    cr = qs["1:contradiction_resolution:0"]
    assert cr.gold_ids == ("2", "6")
    assert cr.meta["gold_groups"] == {"first_statement": ("2",), "second_statement": ("6",)}
    assert cr.meta["source_chat_ids"] == {"first_statement": [2], "second_statement": [6]}
    assert cr.meta["answer_key"] == "ideal_answer"
    g = cr.meta["gold_groups"]
    assert both_in_top_k(["6", "0", "2"], g["first_statement"], g["second_statement"], 3) == 1.0
    shared = qs["1:contradiction_resolution:1"]
    assert shared.gold_ids == ("8",)
    eo = qs["1:event_ordering:0"]
    assert eo.gold_ids == ("0", "2", "6", "8")  # nested lists flattened in order
    assert "gold_groups" not in eo.meta
    ie = qs["1:information_extraction:1"]
    assert ie.gold_ids == ("4",)  # 99 names no message: reported, excluded
    assert [(m.qid, m.token, m.reason) for m in report.malformed_ids] == [
        ("1:information_extraction:1", "99", "unresolved")
    ]
    ku = qs["1:knowledge_update:0"]
    groups = ku.meta["gold_groups"]
    assert ranked_before(["8", "4"], groups["updated_info"], groups["original_info"]) is True
    ku_empty = qs["1:knowledge_update:1"]
    assert ku_empty.gold_ids == ("0",)
    assert ku_empty.meta["gold_groups"]["updated_info"] == ()
    assert ranked_before(["0"], ku_empty.meta["gold_groups"]["updated_info"], ("0",)) is None
    assert report.counts["questions_with_empty_gold_group"] == 1
    assert report.counts["questions_with_shared_gold_group_ids"] == 1
    assert qs["1:multi_session_reasoning:0"].gold_ids == ("8", "4")
    assert qs["1:instruction_following:0"].meta["answer"] == "Code is highlighted."
    tr = qs["1:temporal_reasoning:0"]
    assert tr.meta["gold_groups"] == {"first_event": ("0",), "second_event": ("6",)}
    assert {q.category for q in c.questions} <= set(CATEGORIES)


def test_messages_before_any_anchor_have_no_time() -> None:
    chat: list[dict[str, Any]] = [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [[{"role": "user", "id": 0, "content": "hi"}]],
        },
        {
            "batch_number": 2,
            "time_anchor": "May-02-2024",
            "turns": [[{"role": "user", "id": 1, "content": "later"}]],
        },
    ]
    counts: dict[str, int] = {}
    c = parse_beam_conversation("x", chat, {}, counts=counts)
    assert c.doc("0").timestamp is None
    assert c.doc("1").timestamp == "2024-05-02T00:00:00Z"  # a batch-level anchor also works
    assert counts["messages_without_time"] == 1


def test_real_split() -> None:
    corpora, report = load_beam(_real())
    assert [c.scope_id for c in corpora] == [str(i) for i in range(1, 21)]
    assert report.counts["conversations"] == 20
    assert report.counts["batches"] == 90
    assert report.counts["messages"] == 5732 == report.n_docs
    assert report.counts.get("messages_without_time", 0) == 0
    assert report.counts.get("unparsed_time_anchors", 0) == 0
    assert report.n_questions_total == 400
    assert report.skip_reasons() == {
        "no source_chat_ids (abstention)": 40,
        "empty source_chat_ids": 5,
    }
    assert report.malformed_ids == ()
    assert report.n_questions_loaded == 355
    cats = Counter(q.category for c in corpora for q in c.questions)
    assert cats == {
        "contradiction_resolution": 40,
        "event_ordering": 40,
        "information_extraction": 40,
        "instruction_following": 40,
        "knowledge_update": 40,
        "multi_session_reasoning": 40,
        "temporal_reasoning": 40,
        "preference_following": 39,
        "summarization": 36,
    }
    groups = Counter(
        tuple(q.meta["gold_groups"])
        for c in corpora
        for q in c.questions
        if "gold_groups" in q.meta
    )
    assert groups == {
        ("first_statement", "second_statement"): 40,
        ("original_info", "updated_info"): 40,
        ("first_event", "second_event"): 40,
    }
    assert report.counts["questions_with_empty_gold_group"] == 1
    assert report.counts["questions_with_shared_gold_group_ids"] == 11
    for c in corpora:
        assert all(d.timestamp is not None for d in c.docs)
        stamps = [str(d.timestamp) for d in c.docs]
        assert stamps == sorted(stamps)
