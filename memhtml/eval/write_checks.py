"""Scoring the write-time checks: conflict detection and restatement (near-duplicate) detection.

* **Conflicts** on the labelled pairs (`memhtml.eval.conflict_pairs`):
  precision and recall over the 50 conflicting and 50 compatible pairs, the
  set-valued pairs counted apart, for our rule (`domain.conflicts.claims_conflict`)
  and, for comparison, the original memhtml's (its greedy frame regex, any
  other claim in the frame reported).
* **Restatements** on the merge-safety probes (`memhtml.eval.merge_safety`):
  a paraphrase must be recognised, a must-not-merge flip never; swept over the
  cosine floor of `domain.conflicts.restates`, beside the bare cosine
  baseline. The labelled pairs give a second check: the refinements are
  restatements, every conflict and every other compatible pair is not.

`python bench/bench_write_checks.py` runs both and writes
`bench/results/write_checks.json` (docs/conflicts.md quotes it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from memhtml.domain.conflicts import claims_conflict, restates
from memhtml.domain.frame import normalize_claim
from memhtml.eval.conflict_pairs import COMPATIBLE, CONFLICT, SET_VALUED, ClaimPair, claim_pairs
from memhtml.eval.merge_safety import MUST_NOT_MERGE, PARAPHRASE, MergePair, merge_pairs

COSINE_SWEEP: Final[tuple[float, ...]] = (0.80, 0.85, 0.88, 0.90, 0.92, 0.94, 0.95, 0.97, 0.99)
_ORIGINAL: Final = re.compile(r"^(.*\b(?:of|is|in|to|by|as)\b)\s+(.+?)\.?$", re.ASCII)


def original_frame_key(claim: str) -> str | None:
    """The original memhtml's key (greedy regex, no name rule), kept here for comparison."""
    match = _ORIGINAL.match(normalize_claim(claim))
    if match is None or len(match.group(1).split(" ")) < 3:
        return None
    value = match.group(2).split()
    if not value or len(value) > 6:
        return None
    return match.group(1).lower()


def original_rule(claim: str, other: str) -> bool:
    """The original's detection: the same key, and the claims are not the same text."""
    key = original_frame_key(claim)
    return (
        key is not None
        and key == original_frame_key(other)
        and normalize_claim(claim).rstrip(".").casefold()
        != normalize_claim(other).rstrip(".").casefold()
    )


def ours_rule(claim: str, other: str) -> bool:
    """Ours: one frame, values that cannot both hold (`domain.conflicts.claims_conflict`)."""
    return claims_conflict(claim, other) is not None


def _ratio(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def score_conflicts(
    rule: Callable[[str, str], bool], pairs: Sequence[ClaimPair] | None = None
) -> dict[str, Any]:
    """Precision and recall of a conflict rule on the 50/50 pairs; set-valued pairs apart."""
    pairs = claim_pairs() if pairs is None else pairs
    flagged = {p.pair_id: rule(p.newer, p.older) for p in pairs}
    conflicts = [p for p in pairs if p.label == CONFLICT]
    compatible = [p for p in pairs if p.label == COMPATIBLE]
    set_valued = [p for p in pairs if p.label == SET_VALUED]
    tp = sum(flagged[p.pair_id] for p in conflicts)
    fp = sum(flagged[p.pair_id] for p in compatible)
    by_subkind: dict[str, dict[str, int]] = {}
    for p in conflicts + compatible:
        row = by_subkind.setdefault(f"{p.label}:{p.subkind}", {"pairs": 0, "flagged": 0})
        row["pairs"] += 1
        row["flagged"] += int(flagged[p.pair_id])
    return {
        "conflicting_pairs": len(conflicts),
        "compatible_pairs": len(compatible),
        "true_positives": tp,
        "false_positives": fp,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, len(conflicts)),
        "missed": [p.pair_id for p in conflicts if not flagged[p.pair_id]],
        "false_positive_ids": [p.pair_id for p in compatible if flagged[p.pair_id]],
        "set_valued_pairs": len(set_valued),
        "set_valued_flagged": sum(flagged[p.pair_id] for p in set_valued),
        "by_subkind": dict(sorted(by_subkind.items())),
    }


def _vectors(texts: Sequence[str], embedder_name: str) -> dict[str, Any]:
    from memhtml.contracts.errors import InvalidFlagError
    from memhtml.embed.registry import get_embedder

    embedder = get_embedder(embedder_name)
    if embedder is None:
        raise InvalidFlagError("restatement scoring needs an embedder, not off")
    unique = sorted(set(texts))
    rows = embedder.embed_documents(unique)
    return dict(zip(unique, rows, strict=True))


def retrieval_test(a: str, b: str, va: Any, vb: Any, threshold: float) -> bool:
    """Retrieval's near-duplicate test (one span apart, shared words, or cosine) with the
    anti-merge guards: the alternative `restates` was measured against."""
    from memhtml.domain.guards import divergence
    from memhtml.domain.neardup import near_duplicates

    return near_duplicates(a, b, va, vb, cosine_threshold=threshold) and not divergence(a, b)


def _restatement_scores(
    merge: Sequence[MergePair],
    labelled: Sequence[ClaimPair],
    vecs: dict[str, Any] | None,
    threshold: float,
    test: Callable[[str, str, Any, Any, float], bool] | None = None,
) -> dict[str, Any]:
    def says(a: str, b: str) -> bool:
        va = vecs[a] if vecs is not None else None
        vb = vecs[b] if vecs is not None else None
        if test is not None:
            return test(a, b, va, vb, threshold)
        return restates(a, b, va, vb, cosine_threshold=threshold)

    para = [p for p in merge if p.kind == PARAPHRASE]
    twins = [p for p in merge if p.kind == MUST_NOT_MERGE]
    tp = sum(says(p.left, p.right) for p in para)
    fp_ids = [p.pair_id for p in twins if says(p.left, p.right)]
    positives = [p for p in labelled if p.label == COMPATIBLE and p.subkind == "refinement"]
    negatives = [p for p in labelled if p not in positives]
    ltp = sum(says(p.newer, p.older) for p in positives)
    lfp_ids = [p.pair_id for p in negatives if says(p.newer, p.older)]
    bare: dict[str, Any] | None = None
    if vecs is not None:
        import numpy as np

        above = [p for p in merge if float(np.dot(vecs[p.left], vecs[p.right])) >= threshold]
        bare = {
            "recall": _ratio(sum(p.kind == PARAPHRASE for p in above), len(para)),
            "called_restatements": sum(p.kind == MUST_NOT_MERGE for p in above),
        }
    return {
        "threshold": threshold,
        "bare_cosine_merge_safety": bare,
        "merge_safety": {
            "paraphrases": len(para),
            "recognised": tp,
            "recall": _ratio(tp, len(para)),
            "must_not_merge": len(twins),
            "called_restatements": len(fp_ids),
            "precision": _ratio(tp, tp + len(fp_ids)),
            "false_ids": fp_ids,
        },
        "labelled": {
            "restatements": len(positives),
            "recognised": ltp,
            "recall": _ratio(ltp, len(positives)),
            "others": len(negatives),
            "called_restatements": len(lfp_ids),
            "precision": _ratio(ltp, ltp + len(lfp_ids)),
            "false_ids": lfp_ids,
        },
    }


def score_restatements(
    embedder_name: str | None = "local",
    thresholds: Sequence[float] = COSINE_SWEEP,
    seed: int = 7,
) -> dict[str, Any]:
    """The restatement test swept over its cosine floor (no embedder: frames only)."""
    merge = merge_pairs(seed)
    labelled = claim_pairs()
    vecs = None
    if embedder_name is not None:
        texts = [t for p in merge for t in (p.left, p.right)]
        texts += [t for p in labelled for t in (p.older, p.newer)]
        vecs = _vectors(texts, embedder_name)
    return {
        "embedder": embedder_name,
        "seed": seed,
        "sweep": [_restatement_scores(merge, labelled, vecs, t) for t in thresholds],
        "frames_only": _restatement_scores(merge, labelled, None, 1.0),
        "retrieval_test_at_0.95": _restatement_scores(
            merge, labelled, vecs, 0.95, test=retrieval_test
        ),
    }


def run_write_checks(embedder_name: str | None = "local") -> dict[str, Any]:
    """The conflict and restatement measurements, as docs/conflicts.md reports them
    (`consolidate_pairs` needs a repository and runs separately)."""
    return {
        "conflicts": {
            "ours": score_conflicts(ours_rule),
            "original": score_conflicts(original_rule),
        },
        "restatements": score_restatements(embedder_name),
    }


def consolidate_pairs(
    root: Path, pairs: Sequence[ClaimPair] | None = None, *, embedder: str = "fake"
) -> dict[str, Any]:
    """Each pair through the real write door: the older claim written, then the newer one
    with `consolidate: last-wins`. Counts, per label, the pairs whose older memory was
    archived (consolidated away). `root` must be an initialised, empty memory root; each
    pair's memories are archived before the next pair, so pairs never meet."""
    import memhtml
    from memhtml.ops.write_checks import WriteChecks

    pairs = claim_pairs() if pairs is None else pairs
    checks = WriteChecks(consolidate="last-wins")
    archived: dict[str, list[str]] = {CONFLICT: [], COMPATIBLE: [], SET_VALUED: []}
    with memhtml.open(root, embedder=embedder) as corpus:
        for pair in pairs:
            old = corpus.write(title=f"{pair.pair_id} older", claim=pair.older)["path"]
            outcome = corpus.apply(
                [{"title": f"{pair.pair_id} newer", "type": "semantic", "claim": pair.newer}],
                checks=checks,
            )
            result = outcome.results[0]
            if result.get("superseded"):
                archived[pair.label].append(pair.pair_id)
            live = [p for p in {old, result.get("path")} if p and (root / p).is_file()]
            corpus.apply([{"op": "archive", "path": p} for p in live])
    totals = {label: sum(p.label == label for p in pairs) for label in archived}
    return {
        label: {"pairs": totals[label], "older_archived": len(ids), "ids": ids}
        for label, ids in archived.items()
    }
