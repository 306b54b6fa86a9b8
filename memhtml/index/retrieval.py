"""Four-arm retrieval fused by weighted RRF in one SQL statement, then MMR.

Arms: `fts` (BM25 over fts_text), `vector` (exact cosine over every chunk
vector, best chunk per memory), `recency` (coalesce(event_at, updated_at))
and `salience` (the access plane's EWMA). The vector arm's candidates are
computed by a numpy scan over the memory-mapped matrix and passed into the
statement as JSON, because a per-row Python SQL function is ~300x slower.

Recency and salience rank the candidate pool that fts and vector produced,
not the whole corpus: as tie-breakers between relevant memories they help
(a newer fact beats its stale predecessor), while ranked over the corpus they
would inject the newest or most-read memories into every answer whatever the
query. docs/design.md records the measurement behind this choice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import InputTooLargeError, InvalidFlagError
from memhtml.contracts.vocab import ARMS, DEFAULT_WEIGHTS, PEOPLE_DIR
from memhtml.domain.salience import salience_sql
from memhtml.domain.snippet import TOKEN as _TOKEN
from memhtml.domain.snippet import SnippetFinder
from memhtml.index.scope import Scope

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memhtml.embed.matrix import LoadedMatrix
    from memhtml.index.bm25 import Postings
    from memhtml.index.members import Members

ARM_LIMIT: Final = 40
RERANK_POOL: Final = 20
POOL_FACTOR: Final = 3
VECTOR_OVERSAMPLE: Final = 4
DEFAULT_LIMIT: Final = 10
MAX_LIMIT: Final = 500
# The longest query accepted (search, recall, the MCP query fields). Every arm
# is linear in the query, but a query is plain words, and a pasted document is
# a mistake better refused than ranked: 4,096 characters is ~600 words.
MAX_QUERY_CHARS: Final = 4096
# Words that match nearly every memory: they cost time in BM25 and add no rank.
# Negations and modals are never stopwords: "must not drain" and "must drain"
# are opposite facts, and the lexical arm is what tells them apart.
STOPWORDS: Final = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
    )
)


def check_query(query: str) -> str:
    """Refuse a query over MAX_QUERY_CHARS before any work is done on it."""
    if len(query) > MAX_QUERY_CHARS:
        raise InputTooLargeError(
            f"the query is {len(query):,} characters; at most {MAX_QUERY_CHARS:,} are accepted",
            suggestions=["search with the few words that matter, not a whole document"],
            details={"field": "query", "limit": MAX_QUERY_CHARS, "length": len(query)},
        )
    return query


def fts_words(text: str) -> list[str]:
    """The query's distinct word tokens, lowercased, stopwords dropped (unless that is all)."""
    tokens = list(dict.fromkeys(t.lower() for t in _TOKEN.findall(text)))
    return [t for t in tokens if t not in STOPWORDS] or tokens


def fts_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression: `fts_words` as quoted phrases, OR-ed."""
    chosen = fts_words(text)
    return _match(chosen) if chosen else None


def _match(words: Sequence[str]) -> str:
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def resolve_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """Default weights overridden per arm; unknown arms and negative weights refused."""
    merged = dict(DEFAULT_WEIGHTS)
    for arm, w in (weights or {}).items():
        if arm not in ARMS:
            raise InvalidFlagError(f"unknown arm {arm!r}; arms are {', '.join(ARMS)}")
        if w < 0:
            raise InvalidFlagError(f"weight of {arm} must be >= 0")
        merged[arm] = float(w)
    return merged


def parse_weights(items: Sequence[str] | str | None) -> dict[str, float] | None:
    """`["recency=0.8", "fts=2"]` or `"recency=0.8,fts=2"` -> {arm: weight}; None when empty.

    Only the arms named; `resolve_weights` merges them over the defaults.
    """
    if not items:
        return None
    parts = items.split(",") if isinstance(items, str) else list(items)
    out: dict[str, float] = {}
    for item in (p.strip() for p in parts):
        if not item:
            continue
        arm, sep, value = item.partition("=")
        try:
            weight = float(value)
        except ValueError:
            sep = ""
        if not sep or arm.strip() not in ARMS:
            raise InvalidFlagError(
                f"weight {item!r} is not ARM=NUMBER with ARM one of {', '.join(ARMS)}",
                suggestions=["e.g. --weight recency=0.8"],
            )
        out[arm.strip()] = weight
    return out


@dataclass
class Hit:
    """One ranked memory."""

    path: str
    title: str
    gist: str
    memory_type: str
    score: float
    confidence: float | None = None
    updated_at: str | None = None
    event_at: str | None = None
    snippet: str = ""
    superseded_by: str | None = None
    content_hash: str = ""
    arms: dict[str, dict[str, float | int]] | None = None
    entities: list[str] = field(default_factory=list)
    adjustments: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)  # per arm; what the order key reads

    def to_data(self) -> dict[str, Any]:
        """The envelope payload."""
        out: dict[str, Any] = {
            "path": self.path,
            "title": self.title,
            "gist": self.gist,
            "memory_type": self.memory_type,
            "score": round(self.score, 8),
            "confidence": self.confidence,
            "updated_at": self.updated_at,
            "event_at": self.event_at,
            "snippet": self.snippet,
            "entities": self.entities,
            "superseded_by": self.superseded_by,
        }
        if self.arms is not None:
            out["arms"] = self.arms
            out["adjustments"] = self.adjustments
        return out


@dataclass
class SearchResult:
    """Hits plus how they were produced."""

    query: str
    hits: list[Hit]
    degraded: bool
    degraded_reason: str | None
    arms: list[str]
    weights: dict[str, float]
    k: int
    mmr_lambda: float | None
    vector_coverage: float | None = None
    index_fresh: bool = True
    # The time the query named, as resolved ({expression, start, end}: days, end
    # exclusive), when it lifted the memories of that time; else None.
    time_interval: dict[str, str] | None = None

    def to_data(self) -> dict[str, Any]:
        """The envelope payload."""
        return {
            "query": self.query,
            "hits": [h.to_data() for h in self.hits],
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "arms": self.arms,
            "weights": self.weights,
            "k": self.k,
            "mmr_lambda": self.mmr_lambda,
            "vector_coverage": self.vector_coverage,
            "index_fresh": self.index_fresh,
            "time_interval": self.time_interval,
        }


def vector_candidates(
    conn: sqlite3.Connection,
    matrix: LoadedMatrix,
    query_vector: npt.NDArray[Any],
    scope: Scope,
    want: int,
    *,
    norms: npt.NDArray[Any] | None = None,
) -> list[tuple[str, float]]:
    """(content_hash, best chunk cosine) for the top memories, best first, scope-aware."""
    return best_vectors(
        matrix, query_vector, want, norms=norms, mask=scope_mask(conn, matrix, scope)
    )


def scope_mask(
    conn: sqlite3.Connection, matrix: LoadedMatrix, scope: Scope
) -> npt.NDArray[Any] | None:
    """Which matrix rows belong to memories in scope; None for the default scope (all rows)."""
    import numpy as np

    from memhtml.index.embedding import matrix_key

    if scope.is_default or matrix.rows == 0:
        return None
    keys = matrix.keys[: matrix.rows]
    where, params = scope.sql("f")
    allowed = [
        matrix_key(r[0]).encode("ascii")
        for r in conn.execute(f"SELECT DISTINCT f.content_hash FROM files f WHERE {where}", params)
    ]
    if not allowed:
        return np.zeros(matrix.rows, bool)
    return np.isin(keys, np.array(allowed, dtype=keys.dtype))


def best_vectors(
    matrix: LoadedMatrix,
    query_vector: npt.NDArray[Any],
    want: int,
    *,
    norms: npt.NDArray[Any] | None = None,
    mask: npt.NDArray[Any] | None = None,
) -> list[tuple[str, float]]:
    """The vector scan itself: no database, so it may run beside the fts arm's query."""
    import numpy as np

    from memhtml.domain.vectors import cosine_similarities
    from memhtml.index.embedding import content_hash_of_key

    rows = matrix.rows
    if rows == 0:
        return []
    sims = cosine_similarities(
        matrix.vectors[:rows], query_vector, None if norms is None else norms[:rows]
    )
    if mask is not None:
        sims = np.where(mask, sims, -np.inf)
    take = min(rows, max(want * VECTOR_OVERSAMPLE, want))
    top = np.argpartition(-sims, take - 1)[:take] if take < rows else np.arange(rows)
    top = top[np.argsort(-sims[top], kind="stable")]
    best: dict[str, float] = {}
    for i in top:
        s = float(sims[i])
        if s == -np.inf:
            break
        key = content_hash_of_key(matrix.key(int(i)))
        if key not in best:
            best[key] = s
            if len(best) >= want * VECTOR_OVERSAMPLE:
                break
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))


def vector_arm(
    conn: sqlite3.Connection,
    vector: Sequence[tuple[str, float]],
    scope: Scope,
    arm_limit: int,
    members: Members | None = None,
) -> list[str]:
    """The vector arm's ranked paths: in-scope memories of the candidate hashes, best first.

    Each memory has one content hash, so its similarity is its hash's; equal
    similarities go by path (str order is UTF-8 byte order, SQLite's BINARY).
    The default scope's `members`, while current, answer without a statement.
    """
    if not vector:
        return []
    if members is not None and members.current(conn):
        paths_of = members.paths_of_hash
        ranked = sorted((-sim, path) for chash, sim in vector for path in paths_of.get(chash, ()))
        return [path for _, path in ranked[:arm_limit]]
    where, params = scope.sql("f")
    found: list[tuple[float, str]] = []
    start, step = 0, arm_limit + arm_limit // 4
    while start < len(vector):
        # Best hashes first: once arm_limit paths are in hand from hashes all more
        # similar than the next one, no later hash can place (most searches: one query).
        part = vector[start : start + step]
        sims = dict(part)
        marks = ",".join(f":vh_{i}" for i in range(len(sims)))
        rows = conn.execute(
            f"SELECT f.path, f.content_hash FROM files f WHERE f.content_hash IN ({marks})"
            f" AND {where}",
            {**params, **{f"vh_{i}": h for i, h in enumerate(sims)}},
        ).fetchall()
        found += [(-sims[chash], path) for path, chash in rows]
        start += len(part)
        if len(found) >= arm_limit and (
            start >= len(vector) or vector[start - 1][1] > vector[start][1]
        ):
            break
        step = len(vector)
    found.sort()
    return [path for _, path in found[:arm_limit]]


def fts_arm(
    conn: sqlite3.Connection,
    query: str,
    scope: Scope,
    weights: Mapping[str, float],
    arm_limit: int = ARM_LIMIT,
    *,
    postings: Postings | None = None,
    members: Members | None = None,
) -> list[str] | None:
    """The fts arm's ranked paths (BM25, in scope), best first; None when the arm does not run.

    FTS5 sorts by its own rank cheaply; adding the path tie-break to that
    ORDER BY forces a generic sort of every match (~40 % of the arm at 10k).
    So FTS5 picks the best 2 x arm_limit in scope, and the path breaks ties
    among those: exact unless more than arm_limit matches tie at the cut.
    SQLite runs it without Python's lock, so a search ranks its vectors meanwhile.
    A long-lived process passes `postings` (memhtml.index.bm25): the same scores from
    memory once the index is unchanged since its previous search, ties broken by path
    over every match; with the default scope's `members` (memhtml.index.members) still
    current, the scope check needs no statement either.
    """
    words = fts_words(query)
    if not words or weights.get("fts", 0) <= 0:
        return None
    where, params = scope.sql("f")
    if postings is not None:
        from memhtml.index.db import read_snapshot

        # The cache's key, the postings it loads and the scope check: one state of the index.
        with read_snapshot(conn):
            ranked = postings.ranked(conn, words)
            if ranked is not None:
                lookup = (
                    _members_lookup(members.path_of_row)
                    if members is not None and members.current(conn)
                    else _scope_lookup(conn, where, params)
                )
                return _in_scope(ranked, arm_limit, lookup)
    rows = conn.execute(
        "SELECT path FROM (SELECT f.path AS path, files_fts.rank AS r"
        " FROM files_fts JOIN files f ON f.id = files_fts.rowid"
        f" WHERE files_fts MATCH :fts_q AND {where}"
        " ORDER BY files_fts.rank LIMIT 2 * :arm_limit)"
        " ORDER BY r, path LIMIT :arm_limit",
        {**params, "fts_q": _match(words), "arm_limit": arm_limit},
    ).fetchall()
    return [r[0] for r in rows]


def _scope_lookup(
    conn: sqlite3.Connection, where: str, params: Mapping[str, Any]
) -> Callable[[list[int]], Iterable[tuple[int, str]]]:
    """The (rowid, path) of the given rows that are in scope, asked of SQLite."""

    def lookup(part: list[int]) -> Iterable[tuple[int, str]]:
        return conn.execute(
            "SELECT f.id, f.path FROM files f"
            f" WHERE f.id IN (SELECT value FROM json_each(:fts_rows)) AND {where}",
            {**params, "fts_rows": json.dumps(part)},
        )

    return lookup


def _members_lookup(path_of: Mapping[int, str]) -> Callable[[list[int]], Iterable[tuple[int, str]]]:
    """The (rowid, path) of the given rows that are in the default scope, from its members."""
    return lambda part: [(rowid, path_of[rowid]) for rowid in part if rowid in path_of]


def _in_scope(
    ranked: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]],
    arm_limit: int,
    lookup: Callable[[list[int]], Iterable[tuple[int, str]]],
) -> list[str]:
    """The best `arm_limit` in-scope paths of rows ranked in memory, ties by path.

    Rows are asked about (`lookup`: rowid and path of those in scope) in rank
    order a band at a time (`best_first`) until `arm_limit` are in scope; a
    band ends with every row tied with its last, so the path tie-break sees
    every tie at the cut.
    """
    from memhtml.index.bm25 import best_first

    found: list[tuple[float, str]] = []
    for part, scores in best_first(*ranked, 2 * arm_limit):
        by_id = dict(zip(part, scores, strict=True))
        found += [(by_id[rowid], path) for rowid, path in lookup(part)]
        if len(found) >= arm_limit:
            break
    found.sort()
    return [path for _, path in found[:arm_limit]]


def _fused_statement(
    use_fts: bool, use_vector: bool, use_rec: bool, use_sal: bool
) -> tuple[str, list[str]]:
    ctes: list[str] = []
    unions: list[str] = []
    cand_parts: list[str] = []
    if use_fts:
        # The arm's paths, best first (`fts_arm`).
        ctes.append(
            "fts_arm AS MATERIALIZED (SELECT path, rnk, memhtml_rrf(:w_fts, :k, rnk) AS c FROM"
            " (SELECT value AS path, key + 1 AS rnk FROM json_each(:fts)))"
        )
        cand_parts.append("SELECT path FROM fts_arm")
        unions.append("SELECT path, c, rnk AS fr, NULL AS vr, NULL AS rr, NULL AS sr FROM fts_arm")
    if use_vector:
        # The arm is ranked in Python (`vector_arm`): here its paths, best first.
        ctes.append(
            "vec_arm AS MATERIALIZED (SELECT path, rnk, memhtml_rrf(:w_vector, :k, rnk) AS c"
            " FROM (SELECT value AS path, key + 1 AS rnk FROM json_each(:vec)))"
        )
        cand_parts.append("SELECT path FROM vec_arm")
        unions.append("SELECT path, c, NULL AS fr, rnk AS vr, NULL AS rr, NULL AS sr FROM vec_arm")
    names: list[str] = []
    if not cand_parts:
        return "", names
    # The pool recency and salience rank: the best `rerank_pool` memories by the
    # content arms alone. They reorder what is relevant; they never pull in
    # what is merely new or much read.
    ctes.append(
        "cand AS MATERIALIZED (SELECT path FROM (SELECT path, sum(c) AS s, max(fr) AS fr,"
        " max(vr) AS vr FROM (" + " UNION ALL ".join(unions) + ") GROUP BY path)"
        " ORDER BY s DESC, fr IS NULL, fr, vr IS NULL, vr, path LIMIT :rerank_pool)"
    )
    if use_rec:
        ctes.append(
            # Equal times share a rank: a tie in time is no evidence either way.
            "rec_arm AS (SELECT f.path AS path, rank() OVER"
            " (ORDER BY coalesce(f.event_at, f.updated_at) DESC) AS rnk"
            " FROM cand JOIN files f ON f.path = cand.path)"
        )
        unions.append(
            "SELECT path, memhtml_rrf(:w_recency, :k, rnk) AS c, NULL AS fr, NULL AS vr,"
            " rnk AS rr, NULL AS sr FROM rec_arm"
        )
    if use_sal:
        sal = salience_sql(
            "(julianday(:now) - julianday(a.last_accessed_at)) * 24.0",
            "a.access_count",
            "a.outcome_score",
        )
        ctes.append(
            f"sal_arm AS (SELECT f.path AS path, rank() OVER (ORDER BY {sal} DESC)"
            " AS rnk FROM cand JOIN files f ON f.path = cand.path"
            " LEFT JOIN state.access a ON a.path = f.path"
            " WHERE a.path IS NOT NULL AND f.memory_type <> 'task'"
            f" AND f.origin_path NOT LIKE '{PEOPLE_DIR}/%')"
        )
        unions.append(
            "SELECT path, memhtml_rrf(:w_salience, :k, rnk) AS c, NULL AS fr, NULL AS vr,"
            " NULL AS rr, rnk AS sr FROM sal_arm"
        )
    sql = (
        "WITH " + ", ".join(ctes) + ", fused AS (SELECT path, sum(c) AS score, max(fr) AS fr,"
        " max(vr) AS vr, max(rr) AS rr, max(sr) AS sr FROM (" + " UNION ALL ".join(unions) + ")"
        " GROUP BY path)"
        " SELECT f.path, f.title, f.gist, f.memory_type, fused.score, f.confidence, f.updated_at,"
        " f.event_at, f.superseded_by, f.content_hash, f.body_text, fused.fr, fused.vr, fused.rr,"
        " fused.sr FROM fused JOIN files f ON f.path = fused.path"
        " ORDER BY fused.score DESC, fused.fr IS NULL, fused.fr, fused.vr IS NULL, fused.vr,"
        " f.path LIMIT :pool"
    )
    names = [a for a, on in zip(ARMS, (use_fts, use_vector, use_rec, use_sal), strict=True) if on]
    return sql, names


def fused_rows(
    conn: sqlite3.Connection,
    *,
    scope: Scope,
    weights: Mapping[str, float],
    k: int,
    fts: Sequence[str] | None,
    vector: list[tuple[str, float]] | None,
    now: str,
    pool: int,
    arm_limit: int = ARM_LIMIT,
    rerank_pool: int | None = None,
    members: Members | None = None,
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Fuse the content arms (`fts_arm`'s paths, `vector`'s candidates; None: the arm did
    not run) with recency and salience in one statement; rows and the arms that ran."""
    use_fts = fts is not None
    use_vec = vector is not None and weights.get("vector", 0) > 0
    sql, arms = _fused_statement(
        use_fts, use_vec, weights.get("recency", 0) > 0, weights.get("salience", 0) > 0
    )
    if not sql:
        return [], []
    named: dict[str, Any] = {
        "fts": json.dumps(list(fts or [])),
        "rerank_pool": rerank_pool if rerank_pool is not None else RERANK_POOL,
        "k": k,
        "pool": pool,
        "now": now,
        "vec": json.dumps(
            vector_arm(conn, vector or [], scope, arm_limit, members) if use_vec else []
        ),
        "w_fts": weights.get("fts", 0.0),
        "w_vector": weights.get("vector", 0.0),
        "w_recency": weights.get("recency", 0.0),
        "w_salience": weights.get("salience", 0.0),
    }
    return conn.execute(sql, named).fetchall(), arms


def _snippet_finder(query: str) -> SnippetFinder:
    return SnippetFinder([t.lower() for t in _TOKEN.findall(query) if t.lower() not in STOPWORDS])


def attach_snippets(hits: Sequence[Hit], query: str, bodies: Mapping[str, str]) -> None:
    """Give each hit its snippet of its body (as `rows_to_hits` would have)."""
    finder = _snippet_finder(query)
    for hit in hits:
        hit.snippet = finder.snippet(bodies[hit.path])


def rows_to_hits(
    rows: Sequence[tuple[Any, ...]],
    query: str,
    weights: Mapping[str, float],
    k: int,
    explain: bool,
    *,
    snippets: bool = True,
) -> list[Hit]:
    """Hits (with per-arm ranks and contributions when explained), in fused order.

    Without `snippets` the hits carry none: a caller that keeps only some of
    them gives those theirs with `attach_snippets` (the same text).

    Scores are recomputed from the arms' ranks with the domain function and an
    exactly rounded sum, then sorted by the shared tie key, so search and an
    offline replay of the same arms agree to the last bit (SQL's own float sum
    may differ in the last place, and that could flip a near-tie in MMR).
    """
    import math

    from memhtml.domain.rrf import order_key, rrf_contribution

    finder = _snippet_finder(query) if snippets else None
    hits: list[Hit] = []
    for row in rows:
        (
            path,
            title,
            gist,
            mtype,
            score,
            conf,
            updated,
            event,
            sup,
            chash,
            body,
            fr,
            vr,
            rr,
            sr,
        ) = row
        ranks = {arm: int(rank) for arm, rank in zip(ARMS, (fr, vr, rr, sr), strict=True) if rank}
        parts = {arm: rrf_contribution(rank, weights[arm], k) for arm, rank in ranks.items()}
        score = math.fsum(parts.values())
        arms = None
        if explain:
            arms = {
                arm: {"rank": rank, "weight": weights[arm], "contribution": parts[arm]}
                for arm, rank in ranks.items()
            }
        hits.append(
            Hit(
                path=path,
                title=title,
                gist=gist,
                memory_type=mtype,
                score=float(score),
                confidence=conf,
                updated_at=updated,
                event_at=event,
                snippet=finder.snippet(body) if finder is not None else "",
                superseded_by=sup,
                content_hash=chash,
                arms=arms,
                ranks=ranks,
            )
        )
    hits.sort(key=lambda h: order_key(h.score, h.ranks, h.path))
    return hits
