"""The labelled conflict set and the figures docs/conflicts.md reports from it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from memhtml.eval.conflict_pairs import COMPATIBLE, CONFLICT, SET_VALUED, claim_pairs
from memhtml.eval.write_checks import (
    consolidate_pairs,
    original_frame_key,
    original_rule,
    ours_rule,
    score_conflicts,
    score_restatements,
)


def test_the_labelled_set_is_fifty_fifty_plus_the_set_valued() -> None:
    pairs = claim_pairs()
    assert Counter(p.label for p in pairs) == {CONFLICT: 50, COMPATIBLE: 50, SET_VALUED: 8}
    assert len({p.pair_id for p in pairs}) == len(pairs)
    # compatible pairs share words: the set is not easy by construction
    for p in pairs:
        if p.label == COMPATIBLE:
            shared = set(p.older.lower().split()) & set(p.newer.lower().split())
            assert len(shared) >= 2, p.pair_id


def test_conflict_detection_figures() -> None:
    ours = score_conflicts(ours_rule)
    assert (ours["precision"], ours["recall"]) == (1.0, 0.78)
    assert ours["false_positives"] == 0 and len(ours["missed"]) == 11
    assert ours["set_valued_flagged"] == 8  # the known limitation, reported apart
    original = score_conflicts(original_rule)
    assert original["precision"] < ours["precision"]
    assert original["recall"] <= ours["recall"]
    assert original_frame_key("X is a citizen of United States of America") == (
        "x is a citizen of united states of"
    )


def test_restatements_without_vectors_never_take_a_flip() -> None:
    frames = score_restatements(None)["frames_only"]
    assert frames["merge_safety"]["called_restatements"] == 0
    assert frames["labelled"]["called_restatements"] == 0
    assert frames["labelled"]["recognised"] == 10  # 10 of 11 refinements share a frame


def test_no_compatible_pair_is_consolidated_away(repo: Path) -> None:
    pairs = [p for p in claim_pairs() if p.label == COMPATIBLE]
    pairs += [p for p in claim_pairs() if p.label == CONFLICT][:3]
    result = consolidate_pairs(repo, pairs)
    assert result[COMPATIBLE] == {"pairs": 50, "older_archived": 0, "ids": []}
    assert result[CONFLICT]["older_archived"] == 3
