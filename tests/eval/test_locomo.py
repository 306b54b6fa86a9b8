"""LoCoMo loader: a hand-written sample, plus the real file when it is present."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from memhtml.eval.benchmarks import SAMPLES_DIR, default_data_root
from memhtml.eval.benchmarks.locomo import (
    CATEGORY_NAMES,
    load_locomo,
    parse_locomo,
    parse_session_datetime,
    split_evidence,
)

SAMPLE = SAMPLES_DIR / "locomo_sample.json"


def _real() -> Path:
    root = default_data_root()
    path = None if root is None else root / "locomo" / "locomo10.json"
    if path is None or not path.exists():
        pytest.skip("LoCoMo data not present")
    return path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1:56 pm on 8 May, 2023", (2023, 5, 8, 13, 56)),
        ("10:37 am on 27 June, 2023", (2023, 6, 27, 10, 37)),
        ("12:05 am on 1 January, 2024", (2024, 1, 1, 0, 5)),
        ("12:30 pm on 3 Feb, 2024", (2024, 2, 3, 12, 30)),
        ("  9:01 P.M. on 2 september 2022 ", (2022, 9, 2, 21, 1)),
        ("7 pm on 4 July, 2023", (2023, 7, 4, 19, 0)),
        ("3:15 pm, May 8, 2023", (2023, 5, 8, 15, 15)),
    ],
)
def test_parse_session_datetime(raw: str, expected: tuple[int, ...]) -> None:
    dt = parse_session_datetime(raw)
    assert dt is not None
    assert (dt.year, dt.month, dt.day, dt.hour, dt.minute) == expected


@pytest.mark.parametrize(
    "raw", ["", "yesterday", "13:10 pm on 8 May, 2023", "1:56 pm on 31 June, 2023", "1:56 on 8 May"]
)
def test_parse_session_datetime_rejects(raw: str) -> None:
    assert parse_session_datetime(raw) is None


def test_split_evidence() -> None:
    assert split_evidence("D8:6; D9:17") == ["D8:6", "D9:17"]
    assert split_evidence("D9:1 D4:4  D4:6") == ["D9:1", "D4:4", "D4:6"]
    assert split_evidence("D1:3") == ["D1:3"]
    assert split_evidence(" ") == []


def test_sample_docs() -> None:
    corpora, report = load_locomo(SAMPLE)
    assert [c.scope_id for c in corpora] == ["conv-s1", "conv-s2"]
    c1 = corpora[0]
    assert c1.name == "locomo"
    assert c1.doc_ids == ("D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3")
    d = c1.doc("D1:3")
    assert d.text == (
        "Maya: Next Monday. Look what I made at the trial lesson! "
        "[shares an image: a photo of a blue ceramic bowl on a table]"
    )
    assert d.speaker == "Maya" and d.session_id == "session_1"
    assert d.timestamp == "2023-05-08T13:56:02Z"  # session time + 2 s (3rd turn)
    assert d.meta["img_url"] == "https://example.invalid/bowl.jpg"
    assert d.meta["img_query"] == "handmade ceramic bowl"
    assert d.meta["session_date_time"] == "1:56 pm on 8 May, 2023"
    assert d.meta["session_date"] == "2023-05-08"
    # a caption without img_url still counts as an image turn; a null caption does not
    assert c1.doc("D2:2").text.endswith(
        "[shares an image: a photo of a gray cat sleeping on a couch]"
    )
    assert c1.doc("D2:3").text == "Tom: How is the pottery going?"
    assert c1.doc("D2:1").timestamp == "2023-06-27T10:37:00Z"
    # turns keep their order in time; sessions too
    stamps = [str(x.timestamp) for x in c1.docs]
    assert stamps == sorted(stamps)
    c2 = corpora[1]
    assert c2.doc("D1:1").timestamp == "2024-01-01T00:05:00Z"  # 12:05 am
    assert c2.doc("D2:2").timestamp == "2024-02-03T12:30:01Z"  # 12:30 pm
    # the session 3 date_time without a session_3 list is not a session
    assert report.counts["sessions"] == 4
    assert report.counts["turns"] == 11
    assert report.counts["image_turns"] == 2


def test_sample_questions_and_report() -> None:
    corpora, report = load_locomo(SAMPLE)
    qs = {q.qid: q for c in corpora for q in c.questions}
    assert report.n_questions_total == 10
    assert report.skip_reasons() == {
        "empty evidence": 1,
        "no evidence id resolves to a turn": 2,  # "D2:02" and "D3:1"
    }
    assert {s.qid for s in report.skipped} == {"conv-s1:q4", "conv-s1:q5", "conv-s2:q1"}
    assert qs["conv-s1:q0"].category == "single-hop"
    assert qs["conv-s1:q1"].category == "temporal"
    # composite string split; order kept
    assert qs["conv-s1:q2"].gold_ids == ("D1:1", "D2:1", "D2:2")
    assert qs["conv-s1:q2"].category == "multi-hop"
    # space-joined composite + a malformed "D" that is excluded but reported
    assert qs["conv-s1:q3"].gold_ids == ("D1:3", "D1:4")
    assert qs["conv-s1:q3"].meta["unresolved_evidence"] == ("D",)
    # duplicates collapse; "D:1:3" excluded; an int answer becomes a str
    assert qs["conv-s1:q6"].gold_ids == ("D1:3",)
    assert qs["conv-s1:q6"].meta["answer"] == "1"
    adv = qs["conv-s1:q7"]
    assert adv.category == "adversarial"
    assert adv.meta["answer"] == "Pixel" and adv.meta["adversarial_answer"] == "Pixel"
    assert adv.meta["category_num"] == 5
    reasons = Counter((m.reason, m.token) for m in report.malformed_ids)
    assert reasons == Counter(
        {
            ("composite", "D1:1;D2:1"): 1,
            ("composite", "D1:3;D1:4"): 1,
            ("malformed", "D"): 1,
            ("unresolved", "D2:02"): 1,
            ("malformed", "D:1:3"): 1,
            ("unresolved", "D3:1"): 1,
        }
    )
    assert report.n_questions_loaded + len(report.skipped) == report.n_questions_total


def test_unparseable_session_time_gives_no_timestamp() -> None:
    data = [
        {
            "sample_id": "x",
            "conversation": {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1_date_time": "sometime in spring",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}],
            },
            "qa": [{"question": "?", "answer": "hi", "evidence": ["D1:1"], "category": 4}],
        }
    ]
    corpora, report = parse_locomo(data)
    assert corpora[0].docs[0].timestamp is None
    assert report.counts["sessions_without_time"] == 1
    assert any("unparseable" in n for n in report.notes)


def test_category_names_follow_the_official_numbering() -> None:
    assert CATEGORY_NAMES == {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    }


def test_real_file_counts() -> None:
    corpora, report = load_locomo(_real())
    assert len(corpora) == 10
    assert report.counts["conversations"] == 10
    assert report.counts["sessions"] == 272
    assert report.counts["turns"] == 5882 == report.n_docs
    assert report.counts["sessions_without_time"] == 0
    assert report.counts["qa"] == 1986 == report.n_questions_total
    assert report.counts["qa_empty_evidence"] == 4
    # 9 evidence strings are malformed: 4 composites split and kept, 2 of a
    # bad shape and 3 well-formed ids naming no turn, excluded
    assert report.malformed_reasons() == {"composite": 4, "malformed": 2, "unresolved": 3}
    assert {m.raw for m in report.malformed_ids} == {
        "D8:6; D9:17",
        "D9:1 D4:4 D4:6",
        "D22:1 D22:2 D9:10 D9:11",
        "D21:18 D21:22 D11:15 D11:19",
        "D",
        "D:11:26",
        "D10:19",
        "D4:36",
        "D30:05",
    }
    assert report.skip_reasons() == {"empty evidence": 4, "no evidence id resolves to a turn": 1}
    assert report.n_questions_loaded == 1981
    cats = Counter(q.category for c in corpora for q in c.questions)
    assert cats == {
        "single-hop": 841,
        "adversarial": 446,
        "temporal": 320,
        "multi-hop": 282,
        "open-domain": 92,
    }
    # categories 1-4: the n = 1,535 of the README baselines
    assert sum(v for k, v in cats.items() if k != "adversarial") == 1535
    # 37.9% of evidence ids point to image-sharing turns
    image = total = 0
    for c in corpora:
        docs = {d.doc_id: d for d in c.docs}
        for q in c.questions:
            for g in q.gold_ids:
                total += 1
                image += "blip_caption" in docs[g].meta
    assert round(100 * image / total, 1) == 37.9
    # timestamps increase through every conversation
    for c in corpora:
        assert all(d.timestamp is not None for d in c.docs)
        stamps = [str(d.timestamp) for d in c.docs]
        assert stamps == sorted(stamps)
        assert len(set(stamps)) == len(stamps)
