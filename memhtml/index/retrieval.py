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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import InputTooLargeError, InvalidFlagError
from memhtml.contracts.vocab import ARMS, DEFAULT_WEIGHTS, PEOPLE_DIR
from memhtml.domain.salience import salience_sql
from memhtml.domain.snippet import TOKEN as _TOKEN
from memhtml.domain.snippet import SnippetFinder
from memhtml.index.scope import Scope

if TYPE_CHECKING:
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
    return fts_match(chosen) if chosen else None


def fts_match(words: Sequence[str]) -> str:
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
    # With explain: how the vector arm scanned (memhtml.ops.ann.VectorPlan.explain).
    vector_search: dict[str, Any] | None = None

    def to_data(self) -> dict[str, Any]:
        """The envelope payload (`vector_search` only when explain set it)."""
        extra = {} if self.vector_search is None else {"vector_search": self.vector_search}
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
            **extra,
        }


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
    from memhtml.index.arms import vector_arm

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
