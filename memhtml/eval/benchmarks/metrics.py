"""The benchmarks' own retrieval metrics, as pure functions.

Conventions shared by every function:

- ``ranked_ids`` is a ranking, best first. A ranking holds each id once, so
  two ids never tie: duplicates raise `ValueError` (dedupe a turn ranking into
  a session ranking with `sessions_from_turns` first).
- ``k`` is a positive int; a ranking shorter than ``k`` is simply all of it.
- gold arguments take one id (a ``str``) or a collection of ids; the order and
  multiplicity of gold ids do not matter. Metrics that are a fraction of the
  gold refuse an empty gold (`ValueError`): the loaders emit no question with
  empty retrieval gold except FactConsolidation multi-hop, which is scored on
  answers only.
- results are ``float`` in [0, 1] (``1.0``/``0.0`` for the binary ones) so that
  they average directly in `summarize`; the ordering predicates return
  ``bool`` (or None where the question cannot be evaluated).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

__all__ = [
    "both_in_top_k",
    "hit_at_k",
    "ndcg_any_at_k",
    "rank_of",
    "ranked_before",
    "recall_all_at_k",
    "recall_any_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "session_of_turn_id",
    "sessions_from_turns",
    "stale_above_current",
    "summarize",
]

Ids = str | Collection[str]


def _ids(ids: Ids, *, name: str, allow_empty: bool = False) -> frozenset[str]:
    out = frozenset((ids,)) if isinstance(ids, str) else frozenset(ids)
    if not out and not allow_empty:
        raise ValueError(f"{name} is empty: the metric is undefined without gold")
    return out


def _ranking(ranked_ids: Sequence[str]) -> Sequence[str]:
    if isinstance(ranked_ids, str):
        raise TypeError("ranked_ids must be a sequence of ids, not one str")
    if len(set(ranked_ids)) != len(ranked_ids):
        raise ValueError("ranked_ids holds an id twice: a ranking cannot have ties")
    return ranked_ids


def _k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    return k


def _top(ranked_ids: Sequence[str], k: int) -> set[str]:
    return set(_ranking(ranked_ids)[: _k(k)])


def recall_at_k(ranked_ids: Sequence[str], gold_ids: Ids, k: int) -> float:
    """Fraction of the gold ids found in the top ``k``.

    LoCoMo's retrieval metric (Maharana et al. 2024, Table 3 "recall@k"): the
    fraction of a question's evidence dia_ids among the top-k retrieved turns.
    """
    gold = _ids(gold_ids, name="gold_ids")
    return len(gold & _top(ranked_ids, k)) / len(gold)


def recall_any_at_k(ranked_ids: Sequence[str], gold_ids: Ids, k: int) -> float:
    """1.0 when at least one gold id is in the top ``k``, else 0.0.

    LongMemEval's ``recall_any@k`` (``evaluate_retrieval`` in its
    ``src/retrieval/eval_utils.py``); BEAM's message-id any@k.
    """
    gold = _ids(gold_ids, name="gold_ids")
    return 1.0 if gold & _top(ranked_ids, k) else 0.0


def recall_all_at_k(ranked_ids: Sequence[str], gold_ids: Ids, k: int) -> float:
    """1.0 when every gold id is in the top ``k``, else 0.0.

    LongMemEval's ``recall_all@k``; BEAM's message-id all@k.
    """
    gold = _ids(gold_ids, name="gold_ids")
    return 1.0 if gold <= _top(ranked_ids, k) else 0.0


def hit_at_k(ranked_ids: Sequence[str], gold_ids: Ids, k: int) -> float:
    """1.0 when a gold id (for FactConsolidation: the current fact) is in the top ``k``.

    The same quantity as `recall_any_at_k`; the name is the one used for
    single-gold benchmarks (MemoryAgentBench FactConsolidation, retrieval-only).
    """
    return recall_any_at_k(ranked_ids, gold_ids, k)


def _dcg(relevances: Sequence[float]) -> float:
    # LongMemEval's dcg(): rel_1 + sum_{i>=2} rel_i / log2(i)  (1-based i).
    if not relevances:
        return 0.0
    return relevances[0] + sum(r / math.log2(i) for i, r in enumerate(relevances[1:], start=2))


def ndcg_any_at_k(ranked_ids: Sequence[str], gold_ids: Ids, k: int) -> float:
    """Binary-relevance nDCG@k exactly as LongMemEval computes ``ndcg_any@k``.

    With rel_i = 1 when the i-th ranked id (1-based) is gold, else 0::

        DCG@k  = rel_1 + sum_{i=2..k} rel_i / log2(i)
        IDCG@k = DCG@k of min(|gold|, k) leading ones
        nDCG@k = DCG@k / IDCG@k

    Note the discount: LongMemEval's ``dcg`` leaves ranks 1 *and* 2 undiscounted
    (log2(2) = 1), unlike the textbook rel_i / log2(i + 1). LongMemEval takes the
    ideal from the relevances of the whole corpus; that equals min(|gold|, k)
    ones whenever every gold id is in the corpus, which `Corpus` guarantees.
    """
    gold = _ids(gold_ids, name="gold_ids")
    k = _k(k)
    top = _ranking(ranked_ids)[:k]
    actual = _dcg([1.0 if d in gold else 0.0 for d in top])
    ideal = _dcg([1.0] * min(len(gold), k))
    return actual / ideal


def rank_of(ranked_ids: Sequence[str], ids: Ids) -> int | None:
    """The 1-based rank of the best-ranked id of ``ids``; None when none is ranked."""
    wanted = _ids(ids, name="ids", allow_empty=True)
    for i, d in enumerate(_ranking(ranked_ids), start=1):
        if d in wanted:
            return i
    return None


def reciprocal_rank(ranked_ids: Sequence[str], gold_ids: Ids) -> float:
    """1 / rank of the first gold id; 0.0 when no gold id is ranked (mean = MRR)."""
    _ids(gold_ids, name="gold_ids")
    rank = rank_of(ranked_ids, gold_ids)
    return 0.0 if rank is None else 1.0 / rank


def stale_above_current(
    ranked_ids: Sequence[str],
    current_id: str,
    stale_ids: Ids,
    *,
    k: int | None = None,
) -> bool:
    """True when a superseded fact outranks the current one.

    The FactConsolidation retrieval failure (MemoryAgentBench, Conflict
    Resolution: a larger serial is a newer fact, so only the newest fact of a
    slot is current). Over ``ranked_ids`` (its top ``k`` when given):

    - current ranked at r: True iff some stale id is ranked at a rank < r;
    - current not ranked: True iff some stale id is ranked (a stale fact was
      retrieved and the current one was not);
    - no stale id ranked: False. With no stale ids at all it is always False,
      so averaging over every question gives the README's "% of questions".

    Ranks are positions in a ranking, so an exact tie cannot occur here: the
    retriever's tie-breaking policy (e.g. newer-first) decided it before.
    """
    if not isinstance(current_id, str):
        raise TypeError("current_id must be one id")
    stale = _ids(stale_ids, name="stale_ids", allow_empty=True)
    if current_id in stale:
        raise ValueError(f"current id {current_id!r} is also listed as stale")
    ranking = _ranking(ranked_ids)
    if k is not None:
        ranking = ranking[: _k(k)]
    for d in ranking:
        if d == current_id:
            return False
        if d in stale:
            return True
    return False


def both_in_top_k(
    ranked_ids: Sequence[str],
    a_ids: Ids,
    b_ids: Ids,
    k: int,
    *,
    mode: Literal["any", "all"] = "any",
) -> float:
    """1.0 when both statement groups are retrieved in the top ``k``.

    BEAM contradiction resolution: both the first and the second statement must
    be in the top k. A statement spread over several messages counts as
    retrieved when ANY of its messages is in the top k (``mode="any"``, the
    default) or only when ALL are (``mode="all"``). When one message is listed
    in both groups (it happens in BEAM), retrieving it satisfies both.
    """
    a = _ids(a_ids, name="a_ids")
    b = _ids(b_ids, name="b_ids")
    top = _top(ranked_ids, k)
    if mode == "any":
        return 1.0 if (a & top) and (b & top) else 0.0
    if mode == "all":
        return 1.0 if (a | b) <= top else 0.0
    raise ValueError(f"mode must be 'any' or 'all', got {mode!r}")


def ranked_before(
    ranked_ids: Sequence[str],
    a_ids: Ids,
    b_ids: Ids,
    *,
    k: int | None = None,
) -> bool | None:
    """True when the ``a`` group outranks the ``b`` group; None when undefined.

    BEAM knowledge update: ``updated_info`` (a) must rank above
    ``original_info`` (b). Ids listed in both groups are ignored (they carry
    both the old and the new information, so they order nothing); each group
    is represented by its best-ranked remaining id, within the top ``k`` when
    given:

    - None when a group is empty after removing the shared ids (not evaluable);
    - False when no ``a`` id is ranked;
    - True when an ``a`` id is ranked and no ``b`` id is, or the best ``a``
      rank is smaller than the best ``b`` rank.
    """
    a_all = _ids(a_ids, name="a_ids", allow_empty=True)
    b_all = _ids(b_ids, name="b_ids", allow_empty=True)
    a, b = a_all - b_all, b_all - a_all
    if not a or not b:
        return None
    ranking = _ranking(ranked_ids)
    if k is not None:
        ranking = ranking[: _k(k)]
    ra, rb = rank_of(ranking, a), rank_of(ranking, b)
    if ra is None:
        return False
    return rb is None or ra < rb


def session_of_turn_id(turn_id: str, sep: str = "#") -> str:
    """The session part of a turn id ``"{session_id}{sep}{turn_index}"``.

    The loaders' turn ids (LongMemEval) are ``f"{session_id}#{turn_index}"``;
    splitting on the LAST separator keeps session ids that contain it intact.
    """
    session, found, _ = turn_id.rpartition(sep)
    if not found or not session:
        raise ValueError(f"{turn_id!r} is not a turn id of the form session{sep}index")
    return session


def sessions_from_turns(
    ranked_turn_ids: Sequence[str],
    session_of: Mapping[str, str] | Callable[[str], str] = session_of_turn_id,
) -> list[str]:
    """Turn ranking -> session ranking, each session at its first (best) turn.

    LongMemEval's ``evaluate_retrieval_turn2session`` widens k until the top
    turns cover k distinct sessions; ranking sessions by first occurrence and
    cutting at k gives the same session set, so recall_any/recall_all at
    session level are `recall_any_at_k` / `recall_all_at_k` of this ranking.
    (nDCG here is that of the deduplicated session ranking; LongMemEval's
    turn2session nDCG instead scores the undeduplicated turn list.)
    """
    lookup: Callable[[str], str]
    lookup = session_of.__getitem__ if isinstance(session_of, Mapping) else session_of
    seen: set[str] = set()
    out: list[str] = []
    for turn in _ranking(ranked_turn_ids):
        s = lookup(turn)
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _numeric(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        f = float(value)
        return None if math.isnan(f) else f
    raise TypeError(f"metric value {value!r} is not a number, bool or None")


def _is_metric_value(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float)


def _block(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows), "metrics": {}}
    for m in metrics:
        values = [v for v in (_numeric(r.get(m)) for r in rows) if v is not None]
        out["metrics"][m] = {
            "mean": (sum(values) / len(values)) if values else None,
            "n": len(values),
        }
    return out


def summarize(
    per_question_rows: Iterable[Mapping[str, Any]],
    *,
    metrics: Sequence[str] | None = None,
    by: str = "category",
) -> dict[str, Any]:
    """Mean and count of each metric, overall and per ``by`` group.

    Each row is one question, e.g. ``{"qid": ..., "category": "temporal",
    "recall@5": 0.5, "stale_above_current": False}``. Booleans count as 0/1;
    a None (or NaN) value means "not evaluable" and is left out of that
    metric's mean and count. ``metrics`` defaults to every key (other than
    ``by``) whose values are all numbers, booleans or None. The result is
    JSON-ready::

        {"group_by": "category",
         "overall": {"n": rows, "metrics": {name: {"mean": m, "n": n}}},
         "groups": {category: {"n": rows, "metrics": {...}}}}   # sorted

    A metric with no evaluable row has ``"mean": None``.
    """
    rows = list(per_question_rows)
    if metrics is None:
        keys: list[str] = []
        for r in rows:
            for key in r:
                if key != by and key not in keys:
                    keys.append(key)
        metrics = [
            key
            for key in keys
            if all(_is_metric_value(r.get(key)) for r in rows)
            and any(r.get(key) is not None for r in rows)
        ]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(str(r.get(by)), []).append(r)
    return {
        "group_by": by,
        "overall": _block(rows, metrics),
        "groups": {g: _block(groups[g], metrics) for g in sorted(groups)},
    }
