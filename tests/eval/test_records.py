"""Invariants of the neutral records."""

from __future__ import annotations

import pytest

from memhtml.eval.benchmarks.records import (
    Corpus,
    Doc,
    LoadReport,
    MalformedId,
    Question,
    SkippedQuestion,
    build_report,
)


def _doc(doc_id: str, ts: str | None = None) -> Doc:
    return Doc(doc_id=doc_id, text=f"text {doc_id}", timestamp=ts)


@pytest.mark.parametrize("ts", ["2023-05-08", "2023-05-08T13:56:00Z", None])
def test_doc_accepts_the_stored_datetime_grammar(ts: str | None) -> None:
    assert _doc("a", ts).timestamp == ts


@pytest.mark.parametrize(
    "ts", ["2023-05-08 13:56", "2023-05-08T13:56:00+02:00", "8 May 2023", "2023-02-30"]
)
def test_doc_rejects_other_timestamps(ts: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        _doc("a", ts)


def test_doc_meta_is_read_only_and_string_valued() -> None:
    d = Doc("a", "t", None, meta={"k": "v"})
    with pytest.raises(TypeError):
        d.meta["k"] = "w"  # type: ignore[index]
    with pytest.raises(TypeError, match="must be a str"):
        Doc("a", "t", None, meta={"k": 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        Doc("", "t", None)


def test_question_rejects_duplicate_gold() -> None:
    with pytest.raises(ValueError, match="duplicate gold"):
        Question("q", "?", "c", ("a", "a"))
    q = Question("q", "?", "c", ["a", "b"])  # type: ignore[arg-type]
    assert q.gold_ids == ("a", "b")


def test_corpus_checks_ids_and_scoping() -> None:
    docs = (_doc("a"), _doc("b"))
    c = Corpus("x", "s1", docs, (Question("q1", "?", "c", ("a",)), Question("q2", "?", "c", ())))
    assert c.doc_ids == ("a", "b")
    assert c.doc("b").text == "text b"
    with pytest.raises(KeyError):
        c.doc("zz")
    with pytest.raises(ValueError, match="duplicate doc ids"):
        Corpus("x", "s1", (_doc("a"), _doc("a")), ())
    with pytest.raises(ValueError, match="outside the corpus"):
        Corpus("x", "s1", docs, (Question("q1", "?", "c", ("zz",)),))
    with pytest.raises(ValueError, match="duplicate question ids"):
        Corpus("x", "s1", docs, (Question("q", "?", "c", ()), Question("q", "?", "c", ())))


def test_report_totals_must_add_up() -> None:
    with pytest.raises(ValueError, match="loaded"):
        LoadReport("b", 1, 1, n_questions_total=3, n_questions_loaded=1)
    corpus = Corpus("x", "s", (_doc("a"),), (Question("q", "?", "c", ("a",)),))
    r = build_report(
        "b",
        [corpus],
        skipped=[SkippedQuestion("q2", "why"), SkippedQuestion("q3", "why")],
        malformed=[MalformedId("q", "D", "malformed", "D")],
        counts={"turns": 1},
    )
    assert (r.n_corpora, r.n_docs, r.n_questions_loaded, r.n_questions_total) == (1, 1, 1, 3)
    assert r.skip_reasons() == {"why": 2}
    assert r.malformed_reasons() == {"malformed": 1}
    assert r.counts["turns"] == 1
