"""The steps between fusion and MMR that re-score a search's candidates.

A time the query names (`focus_on_time`) and near-duplicate arbitration
(`arbitrate_near_duplicates`) each take the fused candidates, best first,
and hand back new scores in a new order, computed by a pure domain function
that the offline replay (memhtml.analysis.replay) calls too. Applying those
scores to the hits is one step (`_rescore`): with explain, a hit's change of
score becomes a named adjustment, so the arms' contributions plus the
adjustments still sum to the score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import InvalidFlagError
from memhtml.contracts.vocab import DEFAULT_TIME_WEIGHT
from memhtml.index.retrieval import Hit

if TYPE_CHECKING:
    from datetime import date

    from memhtml.ops.corpus import Corpus


def _rescore(
    hits: Sequence[Hit], scored: Sequence[tuple[str, float]], adjustment: str, *, explain: bool
) -> list[Hit]:
    """The hits in `scored`'s order with its scores; with explain, each change is `adjustment`."""
    by_path = {h.path: h for h in hits}
    out = []
    for path, score in scored:
        hit = by_path[path]
        if score != hit.score:
            if explain:
                hit.adjustments[adjustment] = score - hit.score
            hit.score = score
        out.append(hit)
    return out


def time_weight_of(config: Mapping[str, Any], explicit: float | None) -> float:
    """The time-expression list's weight (call, repo config `time_weight`, default)."""
    raw = explicit if explicit is not None else config.get("time_weight", DEFAULT_TIME_WEIGHT)
    value = float(raw)
    if value < 0:
        raise InvalidFlagError("time_weight must be >= 0")
    return value


def query_anchor(corpus: Corpus) -> date | None:
    """The day a relative time expression ("last week") counts from: the corpus clock's."""
    from memhtml.domain.temporal import day_of

    return day_of(corpus.clock())


def focus_on_time(
    corpus: Corpus, hits: list[Hit], query: str, *, weight: float, k: int, explain: bool
) -> tuple[list[Hit], dict[str, str] | None]:
    """Fuse the query's time expression in as one more ranked list over the candidates.

    memhtml.domain.temporal resolves the expression ("in May 2023", "3 days
    ago": relative ones against the corpus clock) and `focus_scored` adds the
    list; the replay (memhtml.analysis.replay.fuse) calls the same function.
    With explain, a hit's gain is its `time_expression` adjustment.
    """
    from memhtml.domain.temporal import focus_scored, resolve

    interval = resolve(query, query_anchor(corpus)) if weight > 0 and hits else None
    if interval is None:
        return hits, None
    scored = focus_scored(
        [(h.path, h.score) for h in hits],
        {h.path: h.event_at or h.updated_at for h in hits},
        interval,
        weight=weight,
        k=k,
    )
    described = {
        "expression": interval.expression,
        "start": interval.start.isoformat(),
        "end": interval.end.isoformat(),
    }
    return _rescore(hits, scored, "time_expression", explain=explain), described


def arbitrate_near_duplicates(
    hits: list[Hit], vectors: Mapping[str, Any], *, query: str, explain: bool
) -> list[Hit]:
    """Near-duplicate clusters ordered by the query's words, else newest first.

    Scores move with the positions (memhtml.domain.neardup.arbitrate_scored);
    with explain, a moved hit's change of score is its `near_duplicates`
    adjustment.
    """
    from memhtml.domain.neardup import arbitrate_scored

    scored = arbitrate_scored(
        [(h.path, h.score) for h in hits],
        {h.path: h.gist for h in hits},
        {h.path: h.event_at or h.updated_at for h in hits},
        {h.path: vectors[h.content_hash] for h in hits if h.content_hash in vectors},
        query=query,
    )
    return _rescore(hits, scored, "near_duplicates", explain=explain)
