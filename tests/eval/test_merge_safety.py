"""Merge-safety probes: the pair sets, the paraphrase generator, and the scoring arithmetic."""

from __future__ import annotations

import io
import json
import re

import pytest

from memhtml.cli.main import run
from memhtml.eval.flips import is_negated
from memhtml.eval.merge_safety import (
    MUST_NOT_MERGE,
    PARAPHRASE,
    MergePair,
    cosine_report,
    cosine_table,
    merge_pairs,
    paraphrase,
    run_merge_safety,
    score_detector,
    write_dedup_merges,
)

TINY = [
    MergePair("m1", MUST_NOT_MERGE, "negation", "Drain the VIP.", "Do not drain the VIP."),
    MergePair("m2", MUST_NOT_MERGE, "port", "Port 6432.", "Port 7432."),
    MergePair("m3", MUST_NOT_MERGE, "qualifier", "Go to the replica.", "Go to the primary."),
    MergePair("p1", PARAPHRASE, "synonyms", "Restart the pooler.", "Reboot the pooler."),
    MergePair("p2", PARAPHRASE, "whitespace", "Drain  the VIP.", "Drain the VIP."),
]


def test_score_detector_counts_by_hand() -> None:
    def same_words(a: str, b: str) -> bool:
        norm = lambda t: sorted(re.findall(r"\w+", t.lower().replace("do not ", "")))  # noqa: E731
        return norm(a) == norm(b)

    score = score_detector("bag-of-words", TINY, same_words)
    assert (score.must_not_merge, score.paraphrases) == (3, 2)
    assert score.false_merges == 1 and score.false_merges_by_kind == {"negation": 1}
    assert score.merged_pairs == ("m1",)
    assert score.paraphrases_recognized == 1 and score.paraphrase_recall == 0.5
    assert not score.passed
    data = score.to_data()
    assert data["passed"] is False and data["merged_must_not_merge"] == ["m1"]


def test_write_dedup_merges_only_identical_content() -> None:
    score = score_detector("write-dedup", TINY, write_dedup_merges)
    assert score.passed and score.false_merges == 0
    assert score.paraphrases_recognized == 1  # only the whitespace-only "paraphrase"


def test_cosine_report_arithmetic() -> None:
    sims = [0.99, 0.95, 0.80, 0.97, 0.999]
    report = cosine_report(TINY, sims, 0.92, sweep=(0.9, 0.96, 0.995))
    at = report["at_threshold"]
    assert at["false_merges"] == 2 and at["false_merges_by_kind"] == {"negation": 1, "port": 1}
    assert at["paraphrase_recall"] == 1.0
    assert [(s["threshold"], s["false_merges"], s["paraphrase_recall"]) for s in
            report["sweep"]] == [(0.9, 2, 1.0), (0.96, 1, 1.0), (0.995, 0, 0.5)]  # fmt: skip
    assert report["zero_false_merge_threshold"] == 0.99
    assert report["paraphrase_recall_above_it"] == 0.5
    assert report["closest_must_not_merge"]["pair_id"] == "m1"
    assert report["cosine_must_not_merge"] == {"min": 0.8, "median": 0.95, "max": 0.99}


def test_pairs_are_deterministic_and_cover_every_kind() -> None:
    pairs = merge_pairs(7)
    assert [p.to_data() for p in pairs] == [p.to_data() for p in merge_pairs(7)]
    assert [p.left for p in pairs] != [p.left for p in merge_pairs(8)]
    kinds = {p.subkind for p in pairs if p.kind == MUST_NOT_MERGE}
    assert kinds == {"negation", "number", "port", "version", "qualifier", "identifier"}
    assert sum(1 for p in pairs if p.kind == PARAPHRASE) >= 40
    assert all(p.left != p.right for p in pairs)


def test_paraphrases_keep_every_fact_bearing_token() -> None:
    for pair in merge_pairs(7):
        if pair.kind != PARAPHRASE:
            continue
        numbers = lambda t: sorted(re.findall(r"\d+(?:\.\d+)*", t))  # noqa: E731
        assert numbers(pair.left) == numbers(pair.right), pair
        assert is_negated(pair.left) == is_negated(pair.right), pair
        markers = lambda t: len(re.findall(r"\b(?:not|never|cannot)\b", t, re.I))  # noqa: E731
        assert markers(pair.left) == markers(pair.right), pair
        for word in ("before", "after", "primary", "replica", "staging", "production",
                     "never", "always", "not", "cannot"):  # fmt: skip
            left = re.search(rf"\b{word}\b", pair.left, re.IGNORECASE) is not None
            right = re.search(rf"\b{word}\b", pair.right, re.IGNORECASE) is not None
            assert left == right, (word, pair)


@pytest.mark.parametrize(
    ("text", "expected", "applied"),
    [
        ("Drain the VIP before reverting a failed deploy.",
         "The VIP should be drained before reverting a broken release.",
         ("passive", "synonyms")),
        ("Never run migrations for checkout-api from a laptop.",
         "Migrations should never be run for checkout-api from a laptop.", ("passive",)),
        ("The canary runs for 30 minutes before promotion.",
         "Before promotion, the canary runs for 30 minutes.", ("reorder",)),
        ("checkout-api keeps sessions in encrypted cookies.",
         "checkout-api stores sessions in encrypted cookies.", ("synonyms",)),
    ],
)  # fmt: skip
def test_paraphrase_rewrites(text: str, expected: str, applied: tuple[str, ...]) -> None:
    assert paraphrase(text) == (expected, applied)


def test_paraphrase_refuses_when_nothing_applies() -> None:
    assert paraphrase("Grafana is blue.") is None


def test_cosine_table_with_the_fake_embedder() -> None:
    sims = cosine_table(TINY, "fake")
    assert len(sims) == len(TINY) and all(-1.0 <= s <= 1.0001 for s in sims)
    assert sims[4] == pytest.approx(1.0)  # identical words, identical vector


def test_run_merge_safety_fake() -> None:
    report = run_merge_safety(seed=7, threshold=0.92, embedders=("fake",))
    assert report["write_dedup"]["false_merges"] == 0 and report["write_dedup"]["passed"]
    fake = report["cosine"]["fake"]
    assert fake["threshold"] == 0.92 and fake["passed"] is (
        fake["at_threshold"]["false_merges"] == 0
    )
    thresholds = [s["threshold"] for s in fake["sweep"]]
    assert thresholds == sorted(thresholds) and 0.92 in thresholds
    merges = [s["false_merges"] for s in fake["sweep"]]
    assert merges == sorted(merges, reverse=True)  # a higher bar never merges more


def test_cli_merge_safety() -> None:
    out = io.StringIO()
    code = run(["eval", "merge-safety", "--embedder", "fake", "--threshold", "0.97", "--dense"],
               stdout=out)  # fmt: skip
    envelope = json.loads(out.getvalue())
    assert code == 0 and envelope["type"] == "eval.merge_safety"
    assert envelope["data"]["threshold"] == 0.97 and "fake" in envelope["data"]["cosine"]
