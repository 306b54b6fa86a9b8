"""Search and recall: the query side of the Corpus."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from memhtml.contracts.errors import InvalidFlagError, MemhtmlError
from memhtml.contracts.vocab import DEFAULT_MMR_LAMBDA, DEFAULT_RRF_K
from memhtml.index.arms import fts_arm
from memhtml.index.retrieval import (
    ARM_LIMIT,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    POOL_FACTOR,
    RERANK_POOL,
    SearchResult,
    attach_snippets,
    check_query,
    fts_query,
    fused_rows,
    resolve_weights,
    rows_to_hits,
)
from memhtml.index.scope import Scope
from memhtml.ops.adjust import (
    arbitrate_near_duplicates,
    focus_on_time,
    query_anchor,
    time_weight_of,
)
from memhtml.telemetry import span, traced

if TYPE_CHECKING:
    import numpy.typing as npt

    from memhtml.domain.vectors import FloatArray
    from memhtml.ops.ann import VectorPlan
    from memhtml.ops.corpus import Corpus

CONFIG_PATH: Final = ".memhtml/config.json"
MEMORY_BODY_BUDGET: Final = 16000
ARC_BODY_BUDGET: Final = 9000
MAX_PER_ENTITY: Final = 2
RECALL_POOL: Final = 30


def repo_retrieval_config(root: Path) -> dict[str, Any]:
    """The `retrieval` section of the committed repo config (weights, k, mmr_lambda)."""
    path = root / CONFIG_PATH
    if not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidFlagError(f"{CONFIG_PATH} is not valid JSON: {exc}") from exc
    section = raw.get("retrieval", {}) if isinstance(raw, dict) else {}
    return section if isinstance(section, dict) else {}


def _rerank_pool(config: Mapping[str, Any], explicit: int | None) -> int:
    """How many top content candidates recency and salience rank (call, repo config, default)."""
    value = int(explicit if explicit is not None else config.get("rerank_pool", RERANK_POOL))
    if value < 1:
        raise InvalidFlagError("rerank_pool must be >= 1")
    return value


def _scope(filters: Mapping[str, Any]) -> Scope:
    known = {
        "type",
        "types",
        "memory_types",
        "workspace",
        "tag",
        "tags",
        "entity",
        "include_archived",
        "as_of",
        "facet",
        "facets",
    }
    unknown = set(filters) - known
    if unknown:
        raise InvalidFlagError(f"unknown filter(s): {', '.join(sorted(unknown))}")
    types = filters.get("type") or filters.get("types") or filters.get("memory_types")
    tags = filters.get("tag") or filters.get("tags")
    facets = filters.get("facet") or filters.get("facets")
    return Scope.build(
        types=types,
        workspace=filters.get("workspace"),
        tags=tags,
        entity=filters.get("entity"),
        include_archived=bool(filters.get("include_archived")),
        as_of=filters.get("as_of"),
        facets=[facets] if isinstance(facets, str) else facets,
    )


T = TypeVar("T")
VectorAnswer = tuple[
    list[tuple[str, float]] | None, str | None, float | None, "npt.NDArray[Any] | None"
]


def vector_job(
    corpus: Corpus,
    query: str,
    weights: Mapping[str, float],
    scope: Scope,
    want: int,
    *,
    embedding: _Beside[FloatArray] | None = None,
    exact: bool = False,
) -> tuple[Callable[[], VectorAnswer], VectorPlan | None]:
    """The vector arm in two steps: what needs the index connection runs now (the scan's
    plan: memhtml.ops.ann); the returned call (the query's embedding, then the scan) touches
    no database, so a thread may run it. `embedding` is the query's embedding already under
    way (`_Beside`), if any. `exact` asks for the exact scan whatever the rows."""
    from memhtml.embed.blas import limit_blas_threads
    from memhtml.index.embedding import coverage, mismatch_error, space_matches
    from memhtml.ops.ann import plan
    from memhtml.ops.config import coverage_floor

    def done(answer: VectorAnswer) -> tuple[Callable[[], VectorAnswer], None]:
        return (lambda: answer), None

    if weights.get("vector", 0.0) <= 0:
        return done((None, None, None, None))
    embedder = corpus.embedder
    if embedder is None:
        err = corpus.embedder_error
        reason = f"{err.code}: {err.message}" if err else "embedder off (MEMHTML_EMBED=off)"
        return done((None, reason, None, None))
    if not space_matches(corpus.conn, embedder):
        err = mismatch_error(corpus.conn, embedder)
        return done((None, f"{err.code}: {err.message}", None, None))
    matrix = corpus.vector_matrix()
    if matrix is None or matrix.rows == 0:
        return done((None, "no vectors indexed yet (memhtml index embed)", 0.0, None))
    have, total = coverage(corpus.conn)
    share = have / total if total else 1.0
    if share < coverage_floor():
        return done(
            (
                None,
                (
                    f"only {share:.0%} of chunks have vectors (floor {coverage_floor():.0%});"
                    " run memhtml index embed"
                ),
                share,
                None,
            )
        )
    scan = plan(corpus, matrix, scope, want, exact=exact)
    limit_blas_threads()  # once per process: the scan is faster on one BLAS thread

    def run() -> VectorAnswer:
        try:
            if embedding is not None:
                qvec = embedding.result()
            else:
                with span("memhtml.embed.query", model=embedder.model_id):
                    qvec = embedder.embed_query(query)
        except MemhtmlError as exc:
            return None, f"{exc.code}: {exc.message}", share, None
        except Exception as exc:  # a model failure narrows retrieval instead of stopping it
            return None, f"ERR_MODEL_UNAVAILABLE: {type(exc).__name__}: {exc}", share, None
        with span("memhtml.retrieval.vector", rows=matrix.rows):
            found = scan.run(matrix, qvec, want, lambda: corpus.vector_norms(matrix))
        return found, None, share, qvec

    return run, scan


def _embed_query(embedder: Any, query: str) -> Any:
    with span("memhtml.embed.query", model=embedder.model_id):
        return embedder.embed_query(query)


class _Beside(Generic[T]):
    """A call run on a thread beside the caller's own work; `result()` joins it."""

    def __init__(self, fn: Callable[[], T], name: str) -> None:
        import threading

        self._fn = fn
        self._answer: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._answer = self._fn()
        except BaseException as exc:  # re-raised in the caller by result()
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._answer is not None
        return self._answer


def _content_vectors(corpus: Corpus, hashes: Sequence[str]) -> dict[str, Any]:
    """One vector per content hash (its first chunk), for MMR."""
    from memhtml.domain.vectors import vector_from_blob

    out: dict[str, Any] = {}
    if not hashes:
        return out
    marks = ",".join("?" for _ in hashes)
    # The first chunk is the lowest seq: found in the content_hash index, so only
    # those vectors are read.
    for chash, blob in corpus.conn.execute(
        "SELECT content_hash, vector FROM embeddings WHERE seq IN (SELECT min(seq)"
        f" FROM embeddings WHERE content_hash IN ({marks}) GROUP BY content_hash)",
        list(hashes),
    ):
        out[chash] = vector_from_blob(blob)
    return out


@dataclass
class _Fusion:
    """One query run through the fused statement, with what produced it."""

    rows: list[tuple[Any, ...]]
    arms: list[str]
    weights: dict[str, float]
    k: int
    config: dict[str, Any]
    degraded_reason: str | None
    coverage: float | None
    query_vector: Any
    fresh: bool
    vector_plan: VectorPlan | None = None


def _fuse(
    corpus: Corpus,
    query: str,
    *,
    weights: Mapping[str, float] | None,
    k: int | None,
    filters: Mapping[str, Any],
    pool: Callable[[dict[str, Any]], int],
    arm_limit: int = ARM_LIMIT,
    rerank_pool: int | None = None,
    catch_up: bool = True,
    exact: bool = False,
) -> _Fusion:
    """Configuration (call over repo config over defaults), scope, query vector, one statement.

    `catch_up=False` ranks the index as it is, with no freshness check (a hook that
    must answer within its bound and never write); the result says `index_fresh: False`.
    """
    config = repo_retrieval_config(corpus.root)
    w = resolve_weights({**config.get("weights", {}), **(weights or {})})
    k_value = int(k if k is not None else config.get("k", DEFAULT_RRF_K))
    if k_value < 1:
        raise InvalidFlagError("k must be >= 1")
    scope = _scope(filters)
    # The query's embedding, the vector arm's longest step, starts first: before the
    # freshness check and both arms.
    embedder = corpus.embedder
    embedding = (
        _Beside(partial(_embed_query, embedder, query), "memhtml-query-embedding")
        if embedder is not None and w["vector"] > 0
        else None
    )
    probe = corpus.begin_catch_up() if catch_up else False
    while True:
        # Ranked while `git status` checks the tree; ranked again in the rare case
        # the tree had drifted and the index was caught up meanwhile.
        # The vector arm (embedding, numpy scan) runs on a thread while SQLite ranks
        # the fts arm on this one: both leave Python's lock, so two cores share them.
        members = corpus.scope_members.get(corpus.conn, scope)
        job, scan = vector_job(corpus, query, w, scope, arm_limit, embedding=embedding, exact=exact)
        both = fts_query(query) is not None and w["fts"] > 0 and w["vector"] > 0
        beside = _Beside(job, "memhtml-vector-arm") if both and embedder is not None else None
        try:
            with span("memhtml.retrieval.fts"):
                fts = fts_arm(
                    corpus.conn,
                    query,
                    scope,
                    w,
                    arm_limit,
                    postings=corpus.fts_postings,
                    members=members,
                )
        finally:
            candidates, reason, share, qvec = beside.result() if beside is not None else job()
        with span("memhtml.retrieval.fused_sql"):  # recency and salience rank inside it
            rows, arms = fused_rows(
                corpus.conn,
                scope=scope,
                weights=w,
                k=k_value,
                fts=fts,
                vector=candidates,
                now=corpus.clock(),
                pool=pool(config),
                arm_limit=arm_limit,
                rerank_pool=_rerank_pool(config, rerank_pool),
                members=members,
            )
        fresh = corpus.end_catch_up(probe)
        if fresh is not None:
            break
        probe = True
    return _Fusion(list(rows), arms, w, k_value, config, reason, share, qvec, fresh, scan)


@traced("memhtml.search")
def search(
    corpus: Corpus,
    query: str,
    *,
    limit: int = DEFAULT_LIMIT,
    weights: Mapping[str, float] | None = None,
    k: int | None = None,
    mmr_lambda: float | None = None,
    explain: bool = False,
    arm_limit: int = ARM_LIMIT,
    near_duplicates: bool | None = None,
    rerank_pool: int | None = None,
    time_weight: float | None = None,
    catch_up: bool = True,
    exact: bool = False,
    **filters: Any,
) -> SearchResult:
    """Rank memories for `query`: RRF over the four arms in one statement, then MMR.

    Between the two, a query that names a time lifts the candidates of that
    time (`focus_on_time`), and near-duplicates are arbitrated.
    """
    if not query or not query.strip():
        raise InvalidFlagError("the query is empty")
    check_query(query)
    limit = max(1, min(int(limit), MAX_LIMIT))
    arm_limit = max(arm_limit, limit)
    lam_value: float | None = None

    def pool(config: dict[str, Any]) -> int:
        nonlocal lam_value
        lam = mmr_lambda if mmr_lambda is not None else config.get("mmr_lambda", DEFAULT_MMR_LAMBDA)
        lam_value = None if lam is None else float(lam)
        if lam_value is not None and not 0.0 <= lam_value <= 1.0:
            raise InvalidFlagError("mmr_lambda must be within [0, 1]")
        on = config.get("near_duplicates", True) if near_duplicates is None else near_duplicates
        diversifying = lam_value is not None and lam_value < 1.0
        return limit * POOL_FACTOR if on or diversifying else limit

    fusion = _fuse(
        corpus,
        query,
        weights=weights,
        k=k,
        filters=filters,
        pool=pool,
        arm_limit=arm_limit,
        rerank_pool=rerank_pool,
        catch_up=catch_up,
        exact=exact,
    )
    rows, arms, w, k_value, lam = fusion.rows, fusion.arms, fusion.weights, fusion.k, lam_value
    reason, share, qvec, fresh = (
        fusion.degraded_reason,
        fusion.coverage,
        fusion.query_vector,
        fusion.fresh,
    )
    config = fusion.config
    arbitrate_on = bool(
        config.get("near_duplicates", True) if near_duplicates is None else near_duplicates
    )
    hits = rows_to_hits(rows, query, w, k_value, explain, snippets=False)
    hits, interval = focus_on_time(
        corpus,
        hits,
        query,
        weight=time_weight_of(config, time_weight),
        k=k_value,
        explain=explain,
    )
    vectors = _content_vectors(corpus, [h.content_hash for h in hits]) if qvec is not None else {}
    if arbitrate_on and len(hits) > 1:
        hits = arbitrate_near_duplicates(hits, vectors, query=query, explain=explain)
    if lam is not None and lam < 1.0 and qvec is not None and len(hits) > 1:
        from memhtml.domain.mmr import mmr

        order = mmr(
            [(h.path, h.score) for h in hits],
            {h.path: vectors[h.content_hash] for h in hits if h.content_hash in vectors},
            lam=lam,
            limit=limit,
        )
        by_path = {h.path: h for h in hits}
        hits = [by_path[p] for p in order]
    hits = hits[:limit]
    attach_snippets(hits, query, {r[0]: r[10] for r in rows})  # for the hits kept only
    _attach_entities(corpus, hits)
    result = SearchResult(
        query=query,
        hits=hits,
        degraded=reason is not None,
        degraded_reason=reason,
        arms=arms,
        weights=w,
        k=k_value,
        mmr_lambda=lam,
        vector_coverage=share,
        index_fresh=fresh,
        time_interval=interval,
        vector_search=(
            fusion.vector_plan.explain()
            if explain and fusion.vector_plan is not None and qvec is not None
            else None
        ),
    )
    return result


def _attach_entities(corpus: Corpus, hits: Sequence[Any]) -> None:
    if not hits:
        return
    marks = ",".join("?" for _ in hits)
    names: dict[str, list[str]] = {}
    for path, etype, ename in corpus.conn.execute(
        f"SELECT path, entity_type, entity_name FROM file_entities WHERE path IN ({marks})"
        " ORDER BY path, entity_type, entity_name",
        [h.path for h in hits],
    ):
        names.setdefault(path, []).append(f"{etype}:{ename}")
    for h in hits:
        h.entities = names.get(h.path, [])


def fold_disclosure(
    candidates: Sequence[dict[str, Any]], budget: int, max_per_entity: int = MAX_PER_ENTITY
) -> dict[str, Any]:
    """Quote candidates in rank order under a character budget, at most N per entity name.

    A candidate that does not fit (budget, or an entity already quoted N times)
    collapses to an index line with its path, and the fold continues: a later,
    shorter candidate may still fit.
    """
    spent = 0
    per_entity: dict[str, int] = {}
    disclosed: list[dict[str, Any]] = []
    index_lines: list[dict[str, Any]] = []
    for c in candidates:
        text = c["body"]
        names = c.get("entity_names", [])
        capped = any(per_entity.get(n, 0) >= max_per_entity for n in names)
        if capped or spent + len(text) > budget:
            index_lines.append(
                {k: c[k] for k in ("path", "title", "gist", "memory_type")}
                | {"why": "entity cap" if capped else "budget"}
            )
            continue
        spent += len(text)
        for n in names:
            per_entity[n] = per_entity.get(n, 0) + 1
        entry = {k: c[k] for k in ("path", "title", "gist", "memory_type", "body")}
        if c.get("folds"):
            entry["folds"] = c["folds"]
            entry["fold_note"] = (
                f"{c['folds']} <details> fold(s) not quoted; memhtml read {c['path']}"
            )
        disclosed.append(entry)
    return {
        "disclosed": disclosed,
        "index_lines": index_lines,
        "spent_chars": spent,
        "truncated": bool(index_lines),
    }


@traced("memhtml.recall")
def recall(
    corpus: Corpus,
    query: str,
    *,
    budget: int = MEMORY_BODY_BUDGET,
    catch_up: bool = True,
    **filters: Any,
) -> dict[str, Any]:
    """A disclosure pack: arcs and memories folded separately under their budgets."""
    check_query(query)
    if budget < 0:
        raise InvalidFlagError("budget must be >= 0")
    fusion = _fuse(
        corpus,
        query,
        weights=None,
        k=None,
        filters=filters,
        pool=lambda _: RECALL_POOL,
        catch_up=catch_up,
    )
    rows, reason = fusion.rows, fusion.degraded_reason
    paths = [r[0] for r in rows]
    extra: dict[str, tuple[str, int]] = {}
    names: dict[str, list[str]] = {}
    if paths:
        marks = ",".join("?" for _ in paths)
        for path, disclosure, folds in corpus.conn.execute(
            f"SELECT path, disclosure_text, fold_count FROM files WHERE path IN ({marks})", paths
        ):
            extra[path] = (disclosure, folds)
        for path, name in corpus.conn.execute(
            f"SELECT DISTINCT path, entity_name FROM file_entities WHERE path IN ({marks})", paths
        ):
            names.setdefault(path, []).append(name)
    arcs: list[dict[str, Any]] = []
    memories: list[dict[str, Any]] = []
    for r in rows:
        path, title, gist, mtype = r[0], r[1], r[2], r[3]
        disclosure, folds = extra.get(path, (gist, 0))
        c = {
            "path": path,
            "title": title,
            "gist": gist,
            "memory_type": mtype,
            "body": disclosure,
            "folds": folds,
            "entity_names": sorted(names.get(path, [])),
        }
        (arcs if mtype == "arc" else memories).append(c)
    arc_fold = fold_disclosure(arcs, ARC_BODY_BUDGET)
    memory_fold = fold_disclosure(memories, budget)
    return {
        "query": query,
        "arcs": arc_fold,
        "memories": memory_fold,
        "spent_chars": arc_fold["spent_chars"] + memory_fold["spent_chars"],
        "truncated": arc_fold["truncated"] or memory_fold["truncated"],
        "degraded": reason is not None,
        "degraded_reason": reason,
        "budget": budget,
    }


def capture_arms(
    corpus: Corpus,
    query: str,
    *,
    weights: Mapping[str, float] | None = None,
    k: int | None = None,
    arm_limit: int = ARM_LIMIT,
    rerank_pool: int | None = None,
    **filters: Any,
) -> dict[str, Any]:
    """Each arm's ranked list for `query`, as the fused statement saw it, plus the fused order.

    Re-fusing `arm_ranks` (recency and salience share ranks between equal
    values, so positions in `arms` are not always the ranks) with
    `memhtml.domain.rrf.rrf` under the same weights and k reproduces the SQL
    order exactly; the analysis layer replays other
    weights offline from them. (Recency and salience rank the pool that fts
    and vector produced, so a replay that zeroes fts or vector keeps the pool
    the capture saw; the SQL statement would shrink it.)
    """
    check_query(query)
    fusion = _fuse(
        corpus,
        query,
        weights=weights,
        k=k,
        filters=filters,
        pool=lambda _: 4 * arm_limit + 1,
        arm_limit=arm_limit,
        rerank_pool=rerank_pool,
    )
    rows, arms, w, k_value, reason = (
        fusion.rows,
        fusion.arms,
        fusion.weights,
        fusion.k,
        fusion.degraded_reason,
    )
    lists: dict[str, list[str]] = {}
    ranks: dict[str, dict[str, int]] = {}
    for arm, col in zip(("fts", "vector", "recency", "salience"), range(11, 15), strict=True):
        ranked = sorted((r[col], r[0]) for r in rows if r[col] is not None)
        lists[arm] = [path for _, path in ranked]
        ranks[arm] = {path: int(rank) for rank, path in ranked}
    return {
        "query": query,
        "arms": lists,
        "arm_ranks": ranks,
        # what near-duplicate arbitration reads: the claim and the time of each
        "docs": {r[0]: {"text": r[2], "time": r[7] or r[6]} for r in rows},
        # what the time-expression list reads: the day relative expressions count from
        "anchor": str(query_anchor(corpus) or "") or None,
        "time_weight": time_weight_of(fusion.config, None),
        "arms_ran": arms,
        # exact scores in the shared order, as search ranks them
        "fused": [(h.path, h.score) for h in rows_to_hits(rows, query, w, k_value, False)],
        "weights": w,
        "k": k_value,
        "degraded": reason is not None,
        "degraded_reason": reason,
    }
