"""The two content arms, ranked outside the fused statement.

`fts_arm` ranks BM25 over `fts_text` (FTS5 itself, or, in a process that
searches again, the same scores from cached postings: memhtml.index.bm25);
`vector_arm` ranks the numpy scan's candidates (`best_vectors`: exact cosine
over the memory-mapped matrix, best chunk per content hash). Both end by
asking which candidates are in scope and under which paths: SQLite, or for
the default scope the members a long-lived process keeps
(memhtml.index.members). Their ranked path lists enter the fused statement
(memhtml.index.retrieval.fused_rows) as JSON arrays.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memhtml.index.retrieval import ARM_LIMIT, VECTOR_OVERSAMPLE, fts_match, fts_words
from memhtml.index.scope import Scope

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memhtml.embed.ann import AnnGraph
    from memhtml.embed.matrix import LoadedMatrix
    from memhtml.index.bm25 import Postings
    from memhtml.index.members import Members


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
    # The in-scope keys as one string SQLite concatenates (a key is the 64 hex digits
    # after "sha256:"): no Python object per memory, ~3x cheaper at 100k in scope.
    count, joined = conn.execute(
        "SELECT count(*), group_concat(substr(h, 8), '') FROM (SELECT DISTINCT"
        f" f.content_hash AS h FROM files f WHERE {where})",
        params,
    ).fetchone()
    if not count:
        return np.zeros(matrix.rows, bool)
    raw = str(joined).encode("ascii", "replace")
    if len(raw) == count * 64 and raw.isalnum():
        allowed = np.frombuffer(raw, dtype=keys.dtype)
    else:  # a hash of another spelling: key by key
        allowed = np.array(
            [
                matrix_key(r[0]).encode("ascii")
                for r in conn.execute(
                    f"SELECT DISTINCT f.content_hash FROM files f WHERE {where}", params
                )
            ],
            dtype=keys.dtype,
        )
    return np.isin(keys, allowed)


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

    from memhtml.domain.vectors import as_vector, cosine_similarities
    from memhtml.embed.blas import split_matvec

    rows = matrix.rows
    if rows == 0:
        return []
    vectors, query = matrix.vectors[:rows], as_vector(query_vector)
    sims = cosine_similarities(
        vectors,
        query,
        None if norms is None else norms[:rows],
        dots=split_matvec(vectors, query),
    )
    if mask is not None:
        sims = np.where(mask, sims, -np.inf)
    return _best_per_hash(matrix, None, sims, want)


def _best_per_hash(
    matrix: LoadedMatrix,
    row_of: npt.NDArray[Any] | None,
    sims: npt.NDArray[Any],
    want: int,
) -> list[tuple[str, float]]:
    """Best chunk per content hash among the most similar rows: the `want x VECTOR_OVERSAMPLE`
    best hashes, best first. `sims[i]` is row `row_of[i]`'s similarity (row `i`'s without
    `row_of`); -inf marks a row out of scope."""
    import numpy as np

    from memhtml.index.embedding import content_hash_of_key

    n = len(sims)
    if n == 0:
        return []
    take = min(n, max(want * VECTOR_OVERSAMPLE, want))
    top = np.argpartition(-sims, take - 1)[:take] if take < n else np.arange(n)
    top = top[np.argsort(-sims[top], kind="stable")]
    best: dict[str, float] = {}
    for i in top:
        s = float(sims[i])
        if s == -np.inf:
            break
        key = content_hash_of_key(matrix.key(int(i if row_of is None else row_of[i])))
        if key not in best:
            best[key] = s
            if len(best) >= want * VECTOR_OVERSAMPLE:
                break
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))


def subset_vectors(
    matrix: LoadedMatrix,
    query_vector: npt.NDArray[Any],
    want: int,
    rows: npt.NDArray[Any],
) -> list[tuple[str, float]]:
    """The exact scan of the given matrix rows only (a scope's): what `best_vectors` with
    their mask answers, at the cost of those rows instead of all of them."""
    from memhtml.domain.vectors import as_vector, cosine_similarities

    query = as_vector(query_vector)
    return _best_per_hash(matrix, rows, cosine_similarities(matrix.vectors[rows], query), want)


def ann_vectors(
    matrix: LoadedMatrix,
    graph: AnnGraph,
    query_vector: npt.NDArray[Any],
    want: int,
    *,
    fetch: int,
    mask: npt.NDArray[Any] | None = None,
) -> tuple[list[tuple[str, float]], int]:
    """The vector arm's candidates through the graph: ((hash, cosine) best first, rows ranked).

    The graph nominates `fetch` rows among those it covers; every row past it
    (the tail: vectors written since it was built) is added, so a write counts
    at once; out-of-scope rows leave (`mask`); the rest are ranked by their
    exact cosine from the matrix, best chunk per content hash, as the scan ranks.
    """
    import numpy as np

    from memhtml.domain.vectors import as_vector, cosine_similarities

    query = as_vector(query_vector)
    covered = min(graph.rows, matrix.rows)
    found = graph.search(query, fetch)
    found = found[(found >= 0) & (found < covered)]
    rows = np.concatenate([found, np.arange(covered, matrix.rows, dtype=np.int64)])
    if mask is not None:
        rows = rows[mask[rows]]
    rows = np.unique(rows)  # sorted: the gather reads the matrix in file order
    sims = cosine_similarities(np.asarray(matrix.vectors[rows]), query)
    return _best_per_hash(matrix, rows, sims, want), len(rows)


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
        {**params, "fts_q": fts_match(words), "arm_limit": arm_limit},
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
