"""Arbitration among near-duplicates: the query's own words first, then time.

Near-duplicate memories ("the API listens on port 8080" / "... 9090", "drain
the VIP" / "do not drain the VIP") score almost alike in every ranking arm.
Embeddings are weakest exactly there (a negation or a digit barely moves a
vector), and rank fusion turns a one-place disagreement between the lexical
and the vector arm into a coin toss. So after fusion, candidates are grouped
into clusters of near-duplicates, and each cluster is re-ordered *within the
positions it already holds*:

1. If the query names a word that tells members apart, the member whose
   distinguishing words the query names (and who carries fewest it does not
   name) goes first: the question says which one it is about.
2. Otherwise the newest member goes first: nothing in the text says which is
   current, and the later statement usually supersedes the earlier one.

Candidates that are near-duplicates of nothing keep their place. Clusters are
complete-link (every member is a near-duplicate of every other), built in rank
order, so one loose pair cannot chain unrelated memories together; pairs the
query tells apart and pairs it cannot are clustered in separate passes, so a
memory about another subject never blocks a stale value from its update.

Near-duplicate: the texts differ in one contiguous span (a value swapped), or
share most of their words (Jaccard over word sets, with at least `min_shared`
words in common), or their vectors are very close.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # numpy loads only when vectors are compared (not on a degraded search)
    import numpy.typing as npt

JACCARD_THRESHOLD: Final = 0.6
COSINE_THRESHOLD: Final = 0.95
MIN_SHARED: Final = 3
_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> frozenset[str]:
    """The lowercased word set of a text."""
    return frozenset(map(str.lower, _WORD.findall(text)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def tokens(text: str) -> list[str]:
    """The lowercased word sequence of a text."""
    return list(map(str.lower, _WORD.findall(text)))


def one_span_apart(a: Sequence[str], b: Sequence[str], min_shared: int = MIN_SHARED) -> bool:
    """True when two token sequences differ in one contiguous span (a value swapped).

    "X was born in the city of Paris" / "... of San Francisco": the shared
    prefix and suffix must hold at least `min_shared` tokens and at least half
    of the longer sequence.
    """
    limit = min(len(a), len(b))
    prefix = 0
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    kept = prefix + suffix
    return kept >= min_shared and 2 * kept >= max(len(a), len(b))


def _near(
    ta: Sequence[str],
    tb: Sequence[str],
    wa: frozenset[str],
    wb: frozenset[str],
    cosine: float | None,
    *,
    jaccard_threshold: float,
    cosine_threshold: float,
    min_shared: int,
) -> bool:
    if cosine is not None and cosine >= cosine_threshold:
        return True
    # Exact shortcuts, since a search asks this of every pair in its pool: the
    # kept prefix + suffix is at most the shorter length, and a Jaccard index
    # is at most the ratio of the two set sizes.
    la, lb = len(ta), len(tb)
    if 2 * min(la, lb) >= max(la, lb) and one_span_apart(ta, tb, min_shared):
        return True
    sa, sb = len(wa), len(wb)
    if jaccard_threshold > 0 and min(sa, sb) < jaccard_threshold * max(sa, sb):
        return False
    return len(wa & wb) >= min_shared and jaccard(wa, wb) >= jaccard_threshold


def near_duplicates(
    a_text: str,
    b_text: str,
    a_vec: npt.ArrayLike | None = None,
    b_vec: npt.ArrayLike | None = None,
    *,
    jaccard_threshold: float = JACCARD_THRESHOLD,
    cosine_threshold: float = COSINE_THRESHOLD,
    min_shared: int = MIN_SHARED,
) -> bool:
    """True when two claims are close enough that only the query's words or time can order them.

    Any of: they differ in one contiguous span; their word sets overlap by
    Jaccard at least `jaccard_threshold` (with `min_shared` words in common);
    their vectors are at least `cosine_threshold` apart in cosine.
    """
    ta, tb = tokens(a_text), tokens(b_text)
    cosine = None
    if a_vec is not None and b_vec is not None:
        from memhtml.domain.vectors import cosine_similarity

        cosine = cosine_similarity(a_vec, b_vec)
    return _near(
        ta,
        tb,
        frozenset(ta),
        frozenset(tb),
        cosine,
        jaccard_threshold=jaccard_threshold,
        cosine_threshold=cosine_threshold,
        min_shared=min_shared,
    )


# A distinguishing negation the query does not carry counts against a memory
# ("is the endpoint external" is not asking about "... is not external"); any
# other unasked word (a value such as a city) counts for nothing either way.
NEGATIONS: Final = frozenset(
    {"not", "no", "never", "none", "nor", "without", "cannot", "neither", "nothing", "nobody"}
)


def _named_score(own: frozenset[str], asked: frozenset[str]) -> int:
    """Distinguishing words the query names, minus distinguishing negations it does not."""
    return len(own & asked) - len((own & NEGATIONS) - asked)


def near_map(
    docs: Sequence[str],
    texts: Mapping[str, str],
    vectors: Mapping[str, npt.ArrayLike] | None = None,
    *,
    jaccard_threshold: float = JACCARD_THRESHOLD,
    cosine_threshold: float = COSINE_THRESHOLD,
    min_shared: int = MIN_SHARED,
) -> dict[str, frozenset[str]]:
    """Every doc's near-duplicates among `docs` (the relation is symmetric).

    It depends on the memories, not on the query, so a caller that arbitrates
    the same memories many times (an offline replay) computes it once. With
    vectors (numpy is loaded then anyway) every pair is decided at once in
    arrays (`_near_pairs`, ~10x faster than asking `_near` pair by pair, and
    equal to it: a property test holds them together); without, pair by pair.
    """
    toks = {d: tokens(texts.get(d, "")) for d in docs}
    found: dict[str, set[str]] = {d: set() for d in docs}
    unique = list(dict.fromkeys(docs))
    vecs = vectors or {}
    if vecs and len(unique) > 1:
        pairs = _near_pairs(
            [toks[d] for d in unique],
            [vecs.get(d) for d in unique],
            jaccard_threshold=jaccard_threshold,
            cosine_threshold=cosine_threshold,
            min_shared=min_shared,
        )
        for i, j in pairs:
            found[unique[i]].add(unique[j])
            found[unique[j]].add(unique[i])
        return {d: frozenset(v) for d, v in found.items()}
    bags = {d: frozenset(t) for d, t in toks.items()}
    for i, a in enumerate(unique):
        for b in unique[i + 1 :]:
            if _near(
                toks[a],
                toks[b],
                bags[a],
                bags[b],
                None,
                jaccard_threshold=jaccard_threshold,
                cosine_threshold=cosine_threshold,
                min_shared=min_shared,
            ):
                found[a].add(b)
                found[b].add(a)
    return {d: frozenset(v) for d, v in found.items()}


# Token rows of pairs compared at once: bounds memory (pairs x longest text).
_PAIR_CELLS: Final = 1 << 20


def _near_pairs(
    toks: Sequence[Sequence[str]],
    vecs: Sequence[npt.ArrayLike | None],
    *,
    jaccard_threshold: float,
    cosine_threshold: float,
    min_shared: int,
) -> list[tuple[int, int]]:
    """The pairs (i < j) that `_near` calls near-duplicates, decided in arrays.

    The same arithmetic as `_near`, element-wise: the cosine from one matrix
    product of unit float32 rows compared in float64; the one-span rule from
    common prefix and suffix lengths of token-id rows; the word-set rule from
    integer intersection counts, its shortcut and its division in float64.
    """
    import numpy as np

    n = len(toks)
    ids: dict[str, int] = {}
    coded = [[ids.setdefault(t, len(ids)) for t in seq] for seq in toks]
    lens = np.array([len(c) for c in coded], dtype=np.int64)
    width = max(1, int(lens.max()) if n else 1)
    left = np.full((n, width), -1, dtype=np.int64)
    right = np.full((n, width), -1, dtype=np.int64)
    bag = np.zeros((n, max(1, len(ids))), dtype=np.float64)
    for i, c in enumerate(coded):
        if c:
            left[i, : len(c)] = c
            right[i, : len(c)] = c[::-1]
            bag[i, c] = 1.0
    sizes = bag.sum(axis=1).astype(np.int64)
    inter = np.rint(bag @ bag.T).astype(np.int64)  # exact: small integer counts
    near = np.zeros((n, n), dtype=bool)
    with_vec = [i for i, v in enumerate(vecs) if v is not None]
    if len(with_vec) > 1:
        m = np.stack([np.asarray(vecs[i], dtype=np.float32) for i in with_vec])
        norms = np.linalg.norm(m, axis=1)
        norms[norms == 0] = 1.0
        unit = m / norms[:, None]
        cos = np.clip(unit @ unit.T, -1.0, 1.0).astype(np.float64)
        at = np.array(with_vec)
        near[np.ix_(at, at)] = cos >= cosine_threshold
    # The one-span rule. A pair keeps a prefix or suffix only if its first or last
    # tokens agree, so only those pairs (of lengths within 2x: the rule's own
    # shortcut) compare their token rows; every other pair keeps 0 tokens.
    la, lb = lens[:, None], lens[None, :]
    limit = np.minimum(la, lb)
    longer = np.maximum(la, lb)
    span = (2 * limit >= longer) & (min_shared <= 0) & (longer == 0)
    ends = (left[:, :1] == left[:, :1].T) | (right[:, :1] == right[:, :1].T)
    first, second = np.nonzero(np.triu((2 * limit >= longer) & (limit > 0) & ends, k=1))
    positions = np.arange(width)
    block = max(1, _PAIR_CELLS // width)
    for start in range(0, len(first), block):
        rows, cols = first[start : start + block], second[start : start + block]
        lim, most = limit[rows, cols], longer[rows, cols]
        same = (left[rows] == left[cols]) & (positions < lim[:, None])
        prefix = np.cumprod(same, axis=1).sum(axis=1)
        same = (right[rows] == right[cols]) & (positions < (lim - prefix)[:, None])
        kept = prefix + np.cumprod(same, axis=1).sum(axis=1)
        span[rows, cols] = (kept >= min_shared) & (2 * kept >= most)
    # The word-set rule, with its exact shortcut on the two set sizes.
    sa, sb = sizes[:, None], sizes[None, :]
    union = sa + sb - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        jac = np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)
    small, big = np.minimum(sa, sb), np.maximum(sa, sb)
    cut = (jaccard_threshold > 0) & (small < jaccard_threshold * big)
    near |= span | (~cut & (inter >= min_shared) & (jac >= jaccard_threshold))
    first, second = np.nonzero(np.triu(near, k=1))
    return list(zip(first.tolist(), second.tolist(), strict=True))


def _clusters(
    ranked: Sequence[str],
    involved: Sequence[int],
    relation: Mapping[str, frozenset[str]],
    linked: Callable[[str, str], bool],
) -> list[list[int]]:
    """Complete-link clusters of the involved positions, built in rank order.

    A memory can only join a cluster holding one of its near-duplicates, so
    only those clusters are tried (first formed first).
    """
    clusters: list[list[int]] = []
    home_of: dict[str, int] = {}
    for i in involved:
        doc = ranked[i]
        tried = sorted({home_of[n] for n in relation.get(doc, frozenset()) if n in home_of})
        home = next((c for c in tried if all(linked(ranked[j], doc) for j in clusters[c])), None)
        if home is None:
            home_of[doc] = len(clusters)
            clusters.append([i])
        else:
            home_of[doc] = home
            clusters[home].append(i)
    return [c for c in clusters if len(c) > 1]


def _reorder(
    ranked: Sequence[str], clusters: list[list[int]], key: Callable[[str, list[str]], Any]
) -> list[str]:
    out = list(ranked)
    for members in clusters:
        docs = [ranked[i] for i in members]
        # sorted() is stable with reverse=True: equal keys keep the fused order
        order = sorted(docs, key=lambda d: key(d, docs), reverse=True)
        for slot, doc in zip(members, order, strict=True):
            out[slot] = doc
    return out


def arbitrate(
    ranked: Sequence[str],
    texts: Mapping[str, str],
    times: Mapping[str, str | None],
    vectors: Mapping[str, npt.ArrayLike] | None = None,
    *,
    query: str = "",
    near: Mapping[str, frozenset[str]] | None = None,
    memo: dict[tuple[str, str], bool] | None = None,
) -> list[str]:
    """Re-order near-duplicates by the query's words, then by time.

    Two passes, each re-ordering complete-link clusters within the positions
    they hold. First, near-duplicates the query tells apart (their differences
    score unequally against its words: it names what one says, or one carries
    a negation it does not ask for) are ordered by how well they match. Then
    near-duplicates the query cannot tell apart are ordered newest first.
    Times compare as strings (the stored datetime grammar sorts like time); a
    missing time counts as oldest. Equal keys keep the fused order. `near` is
    the near-duplicate relation (`near_map`) when the caller has it; `memo`
    keeps which pairs this query tells apart, for callers that arbitrate the
    same query many times (an offline replay).
    """
    relation = near if near is not None else near_map(ranked, texts, vectors)
    present = frozenset(ranked)
    involved = [i for i, d in enumerate(ranked) if relation.get(d, frozenset()) & present]
    if not involved:
        return list(ranked)
    asked = words(query)
    bags = {ranked[i]: words(texts.get(ranked[i], "")) for i in involved}

    def close(a: str, b: str) -> bool:
        return b in relation.get(a, frozenset())

    told = {} if memo is None else memo

    def named(a: str, b: str) -> bool:
        # The query tells a and b apart when their own words score unequally
        # against it: it names one's difference, or one carries a negation it lacks.
        key = (a, b) if a < b else (b, a)
        if key not in told:
            told[key] = _named_score(bags[a] - bags[b], asked) != _named_score(
                bags[b] - bags[a], asked
            )
        return told[key]

    def by_query(doc: str, docs: list[str]) -> int:
        shared = frozenset.intersection(*(bags[d] for d in docs))
        return _named_score(bags[doc] - shared, asked)

    lexical = _reorder(
        ranked,
        _clusters(ranked, involved, relation, lambda a, b: named(a, b) and close(a, b)),
        by_query,
    )
    moved = [i for i in range(len(lexical)) if lexical[i] in bags]
    return _reorder(
        lexical,
        _clusters(lexical, moved, relation, lambda a, b: not named(a, b) and close(a, b)),
        lambda doc, _: times.get(doc) or "",
    )


def arbitrate_scored(
    scored: Sequence[tuple[str, float]],
    texts: Mapping[str, str],
    times: Mapping[str, str | None],
    vectors: Mapping[str, npt.ArrayLike] | None = None,
    *,
    query: str = "",
    near: Mapping[str, frozenset[str]] | None = None,
    memo: dict[tuple[str, str], bool] | None = None,
) -> list[tuple[str, float]]:
    """`arbitrate` over (doc, score) pairs best first; scores stay with the positions.

    A memory that moves takes the score of the place it takes, so the list
    stays sorted and whatever ranks by score next (MMR) sees the new order.
    Search and the offline replay both call this, so they agree exactly.
    """
    order = arbitrate(
        [d for d, _ in scored], texts, times, vectors, query=query, near=near, memo=memo
    )
    return [(doc, score) for doc, (_, score) in zip(order, scored, strict=True)]
