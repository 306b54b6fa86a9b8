"""Arm replay: capture each arm's ranked list once per query, re-fuse offline.

A capture runs `Corpus.capture_arms` for every query (one fused SQL
statement each, production weights unless told otherwise) and keeps the four
ranked lists as a long Polars frame ``(query_id, arm, rank, path)``, the SQL's
own fused order ``(query_id, rank, path, score)``, and, for MMR, the vector
production would use for each captured memory.

`fuse` then re-ranks one query with any weights, k and MMR lambda using the
production functions (`memhtml.domain.rrf.rrf`, `memhtml.domain.mmr.mmr`) and
the production pool rule (``limit * POOL_FACTOR`` fused candidates enter MMR).
With the capture's own weights and k it reproduces `Corpus.search` exactly;
tests/analysis/test_replay.py proves it for the production weights.

What a replay cannot see: an arm whose weight was 0 at capture time did not
run, so it has no list; recency and salience rank the candidate pool that fts
and vector produced at capture time, so zeroing fts or vector in a replay
keeps that pool (the SQL statement would shrink it). Capture with every
weight positive (the production weights are) and a deep enough ``arm_limit``
(at least the largest limit you will replay).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.vocab import ARMS, DEFAULT_RRF_K, DEFAULT_TIME_WEIGHT, DEFAULT_WEIGHTS
from memhtml.domain.mmr import mmr
from memhtml.domain.neardup import arbitrate_scored, near_map
from memhtml.domain.rrf import rrf
from memhtml.domain.temporal import day_of, focus_scored, resolve
from memhtml.index.retrieval import ARM_LIMIT, POOL_FACTOR, resolve_weights

if TYPE_CHECKING:
    import numpy.typing as npt
    import polars as pl

    from memhtml.ops.corpus import Corpus

ARM_FRAME_COLUMNS: Final[tuple[str, ...]] = ("query_id", "arm", "rank", "path")
FUSED_FRAME_COLUMNS: Final[tuple[str, ...]] = ("query_id", "rank", "path", "score")


@dataclass(frozen=True)
class FusionConfig:
    """One way to fuse: weights per arm, RRF k, MMR lambda (None or 1.0: no MMR), the
    near-duplicate arbitration and the time-expression list's weight (0: off)."""

    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    k: int = DEFAULT_RRF_K
    mmr_lambda: float | None = None
    near_duplicates: bool = True
    time_weight: float = DEFAULT_TIME_WEIGHT

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", resolve_weights(self.weights))
        if self.k < 1:
            raise ValueError("k must be >= 1")
        if self.time_weight < 0:
            raise ValueError("time_weight must be >= 0")
        if self.mmr_lambda is not None and not 0.0 <= self.mmr_lambda <= 1.0:
            raise ValueError("mmr_lambda must be within [0, 1]")

    @property
    def uses_mmr(self) -> bool:
        """True when MMR re-orders the fused pool."""
        return self.mmr_lambda is not None and self.mmr_lambda < 1.0

    def label(self) -> str:
        """A compact, stable name: `fts=1.5 vector=1 recency=0.25 salience=0.4 k=10 mmr=0.7`."""
        w = " ".join(f"{a}={self.weights[a]:g}" for a in ARMS)
        lam = "off" if not self.uses_mmr else f"{self.mmr_lambda:g}"
        nd = "" if self.near_duplicates else " neardup=off"
        tw = "" if self.time_weight == DEFAULT_TIME_WEIGHT else f" time={self.time_weight:g}"
        return f"{w} k={self.k} mmr={lam}{nd}{tw}"

    def to_data(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "weights": dict(self.weights),
            "k": self.k,
            "mmr_lambda": self.mmr_lambda,
            "near_duplicates": self.near_duplicates,
            "time_weight": self.time_weight,
        }


def fuse(
    arms: Mapping[str, Sequence[str] | Mapping[str, int]],
    config: FusionConfig,
    *,
    limit: int,
    vectors: Mapping[str, npt.ArrayLike] | None = None,
    docs: Mapping[str, tuple[str, str | None]] | None = None,
    query: str = "",
    near: Mapping[str, frozenset[str]] | None = None,
    memo: dict[tuple[str, str], bool] | None = None,
    anchor: str | None = None,
) -> list[str]:
    """One query's ranking under `config`, the way `memhtml.ops.query.search` ranks.

    RRF over the arms (lists, or path -> rank where ranks are shared); then,
    over the first limit*POOL_FACTOR (limit when neither of the next two
    runs), the query's time expression as one more list (resolved against
    `anchor`, the day search counted from; over `docs`' times),
    near-duplicate arbitration (when `docs` gives each memory's claim and
    time and the config enables it) and MMR (when lambda < 1 and vectors are
    available).
    """
    fused = rrf(arms, config.weights, config.k)
    arbitrating = config.near_duplicates and docs is not None
    pooled = arbitrating or config.uses_mmr
    scored = [(f.doc, f.score) for f in fused[: limit * POOL_FACTOR if pooled else limit]]
    if config.time_weight > 0 and docs:
        scored = focus_scored(
            scored,
            {d: docs[d][1] for d, _ in scored if d in docs},
            resolve(query, day_of(anchor)),
            weight=config.time_weight,
            k=config.k,
        )
    if not pooled or len(fused) < 2:
        return [d for d, _ in scored[:limit]]
    if arbitrating and docs is not None:
        scored = arbitrate_scored(
            scored,
            {d: docs[d][0] for d, _ in scored if d in docs},
            {d: docs[d][1] for d, _ in scored if d in docs},
            {d: vectors[d] for d, _ in scored if d in vectors} if vectors else None,
            query=query,
            near=near,
            memo=memo,
        )
    if config.uses_mmr and vectors is not None:
        lam = float(config.mmr_lambda)  # type: ignore[arg-type]  # uses_mmr checked it
        present = {d: vectors[d] for d, _ in scored if d in vectors}
        return mmr(scored, present, lam=lam, limit=limit)
    return [d for d, _ in scored[:limit]]


@dataclass
class ArmCapture:
    """Captured arm lists for a query set, ready to be re-fused many times."""

    queries: dict[str, str]
    arms: dict[str, dict[str, dict[str, int]]]  # query -> arm -> path -> rank (ties shared)
    sql_fused: dict[str, tuple[tuple[str, float], ...]]
    weights: dict[str, float]
    k: int
    arm_limit: int
    vectors: dict[str, Any] = field(default_factory=dict)
    degraded: dict[str, bool] = field(default_factory=dict)
    docs: dict[str, dict[str, tuple[str, str | None]]] = field(default_factory=dict)
    anchors: dict[str, str | None] = field(default_factory=dict)  # the day search counted from
    # the near-duplicate relation per query, computed once for every configuration replayed
    _near: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict, repr=False)
    _told: dict[str, dict[tuple[str, str], bool]] = field(default_factory=dict, repr=False)

    # -- building ---------------------------------------------------------------
    def add(self, query_id: str, query: str, captured: Mapping[str, Any]) -> None:
        """Record one `Corpus.capture_arms` answer under `query_id`."""
        if query_id in self.queries:
            raise ValueError(f"query id {query_id!r} captured twice")
        self.queries[query_id] = query
        ranks = captured.get("arm_ranks") or {
            arm: {p: i for i, p in enumerate(paths, start=1)}
            for arm, paths in captured["arms"].items()
        }
        self.arms[query_id] = {arm: dict(ranks[arm]) for arm in ARMS if arm in ranks}
        self.docs[query_id] = {
            str(p): (str(d.get("text", "")), d.get("time"))
            for p, d in (captured.get("docs") or {}).items()
        }
        self.anchors[query_id] = captured.get("anchor")
        self.sql_fused[query_id] = tuple((str(p), float(s)) for p, s in captured["fused"])
        self.degraded[query_id] = bool(captured.get("degraded"))

    @property
    def query_ids(self) -> list[str]:
        """Query ids in capture order."""
        return list(self.queries)

    def paths(self) -> set[str]:
        """Every path any arm listed."""
        return {p for lists in self.arms.values() for ranked in lists.values() for p in ranked}

    # -- replay ------------------------------------------------------------------
    def vectors_for(self, query_id: str) -> Mapping[str, Any] | None:
        """The MMR vectors for a query, or None when its vector arm did not run."""
        if self.degraded.get(query_id) or not self.vectors:
            return None
        return self.vectors

    def _near_for(self, query_id: str) -> dict[str, frozenset[str]] | None:
        docs = self.docs.get(query_id)
        if not docs:
            return None
        if query_id not in self._near:
            vecs = self.vectors_for(query_id)
            self._near[query_id] = near_map(
                list(docs),
                {d: text for d, (text, _) in docs.items()},
                {d: vecs[d] for d in docs if d in vecs} if vecs else None,
            )
        return self._near[query_id]

    def ranking(self, query_id: str, config: FusionConfig, limit: int) -> list[str]:
        """One query re-fused under `config`."""
        return fuse(
            self.arms[query_id],
            config,
            limit=limit,
            vectors=self.vectors_for(query_id),
            docs=self.docs.get(query_id) or None,
            query=self.queries[query_id],
            near=self._near_for(query_id),
            memo=self._told.setdefault(query_id, {}),
            anchor=self.anchors.get(query_id),
        )

    def rankings(
        self, config: FusionConfig, limit: int, query_ids: Iterable[str] | None = None
    ) -> dict[str, list[str]]:
        """Every (or the given) query re-fused under `config`."""
        ids = self.query_ids if query_ids is None else list(query_ids)
        return {q: self.ranking(q, config, limit) for q in ids}

    def capture_config(self) -> FusionConfig:
        """The fused statement's own order: the capture's weights and k, no MMR, no arbitration,
        no time list."""
        return FusionConfig(self.weights, self.k, None, near_duplicates=False, time_weight=0.0)

    # -- frames ------------------------------------------------------------------
    def arm_frame(self) -> pl.DataFrame:
        """The long frame (query_id, arm, rank, path), rank 1-based."""
        import polars as pl

        rows = [
            (q, arm, rank, p)
            for q, lists in self.arms.items()
            for arm, ranked in lists.items()
            for p, rank in sorted(ranked.items(), key=lambda kv: (kv[1], kv[0]))
        ]
        return pl.DataFrame(
            rows,
            schema={"query_id": pl.String, "arm": pl.String, "rank": pl.Int64, "path": pl.String},
            orient="row",
        )

    def sql_frame(self) -> pl.DataFrame:
        """The SQL statement's fused order (query_id, rank, path, score)."""
        import polars as pl

        rows = [
            (q, i, p, s)
            for q, fused in self.sql_fused.items()
            for i, (p, s) in enumerate(fused, start=1)
        ]
        return pl.DataFrame(
            rows,
            schema={
                "query_id": pl.String,
                "rank": pl.Int64,
                "path": pl.String,
                "score": pl.Float64,
            },
            orient="row",
        )

    def query_frame(self) -> pl.DataFrame:
        """(query_id, query, degraded, anchor)."""
        import polars as pl

        return pl.DataFrame(
            {
                "query_id": list(self.queries),
                "query": list(self.queries.values()),
                "degraded": [self.degraded.get(q, False) for q in self.queries],
                "anchor": [self.anchors.get(q) for q in self.queries],
            },
            schema={
                "query_id": pl.String,
                "query": pl.String,
                "degraded": pl.Boolean,
                "anchor": pl.String,
            },
        )

    def replay_frame(
        self,
        config: FusionConfig,
        limit: int,
        query_ids: Iterable[str] | None = None,
    ) -> pl.DataFrame:
        """A re-fused ranking per query as a frame (query_id, rank, path)."""
        import polars as pl

        rows = [
            (q, i, p)
            for q, ranked in self.rankings(config, limit, query_ids).items()
            for i, p in enumerate(ranked, start=1)
        ]
        return pl.DataFrame(
            rows,
            schema={"query_id": pl.String, "rank": pl.Int64, "path": pl.String},
            orient="row",
        )

    # -- persistence ---------------------------------------------------------------
    def write(self, out_dir: Path) -> dict[str, str]:
        """arms, fused, queries, vectors and docs (.parquet), and capture.json."""
        import json

        import polars as pl

        out_dir.mkdir(parents=True, exist_ok=True)
        files = {
            "arms": out_dir / "arms.parquet",
            "fused": out_dir / "fused.parquet",
            "queries": out_dir / "queries.parquet",
            "vectors": out_dir / "vectors.parquet",
            "docs": out_dir / "docs.parquet",
            "meta": out_dir / "capture.json",
        }
        self.arm_frame().write_parquet(files["arms"])
        self.sql_frame().write_parquet(files["fused"])
        self.query_frame().write_parquet(files["queries"])
        paths = sorted(self.vectors)
        pl.DataFrame(
            {"path": paths, "vector": [[float(x) for x in self.vectors[p]] for p in paths]},
            schema={"path": pl.String, "vector": pl.List(pl.Float32)},
        ).write_parquet(files["vectors"])
        pl.DataFrame(
            [(q, p, text, time) for q, by in self.docs.items() for p, (text, time) in by.items()],
            schema={"query_id": pl.String, "path": pl.String, "text": pl.String, "time": pl.String},
            orient="row",
        ).write_parquet(files["docs"])
        meta = {"weights": self.weights, "k": self.k, "arm_limit": self.arm_limit}
        files["meta"].write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return {name: str(path) for name, path in files.items()}

    @classmethod
    def read(cls, out_dir: Path) -> ArmCapture:
        """The inverse of `write`."""
        import json

        import numpy as np
        import polars as pl

        meta = json.loads((out_dir / "capture.json").read_text())
        queries = pl.read_parquet(out_dir / "queries.parquet")
        cap = cls(
            queries=dict(zip(queries["query_id"], queries["query"], strict=True)),
            arms={q: {} for q in queries["query_id"]},
            sql_fused={q: () for q in queries["query_id"]},
            weights={k: float(v) for k, v in meta["weights"].items()},
            k=int(meta["k"]),
            arm_limit=int(meta["arm_limit"]),
            degraded=dict(zip(queries["query_id"], queries["degraded"], strict=True)),
        )
        if "anchor" in queries.columns:
            cap.anchors = dict(zip(queries["query_id"], queries["anchor"], strict=True))
        arms = pl.read_parquet(out_dir / "arms.parquet").sort(["query_id", "arm", "rank"])
        for (q, arm), part in arms.group_by(["query_id", "arm"], maintain_order=True):
            cap.arms[str(q)][str(arm)] = dict(
                zip(part["path"], (int(r) for r in part["rank"]), strict=True)
            )
        fused = pl.read_parquet(out_dir / "fused.parquet").sort(["query_id", "rank"])
        for (q,), part in fused.group_by(["query_id"], maintain_order=True):
            cap.sql_fused[str(q)] = tuple(
                zip(part["path"], (float(s) for s in part["score"]), strict=True)
            )
        if (out_dir / "docs.parquet").exists():
            for q, p, text, time in pl.read_parquet(out_dir / "docs.parquet").iter_rows():
                cap.docs.setdefault(str(q), {})[str(p)] = (str(text), time)
        vec = pl.read_parquet(out_dir / "vectors.parquet")
        cap.vectors = {
            p: np.asarray(v, dtype=np.float32)
            for p, v in zip(vec["path"], vec["vector"].to_list(), strict=True)
        }
        return cap


def capture(
    corpus: Corpus,
    queries: Mapping[str, str] | Iterable[tuple[str, str]],
    *,
    arm_limit: int = ARM_LIMIT,
    weights: Mapping[str, float] | None = None,
    k: int | None = None,
    with_vectors: bool = True,
    progress: Any = None,
    **filters: Any,
) -> ArmCapture:
    """Capture every query's arm lists from `corpus` (one fused statement per query).

    `arm_limit` is each arm's depth; replaying a ranking of N needs N <=
    arm_limit, and `Corpus.search(limit=N)` itself runs at max(ARM_LIMIT, N).
    `progress` is anything with `advance(n)` (memhtml.progress.Progress).
    """
    from memhtml.analysis.export import path_vectors

    items = list(queries.items()) if isinstance(queries, Mapping) else list(queries)
    cap: ArmCapture | None = None
    for query_id, text in items:
        got = corpus.capture_arms(text, weights=weights, k=k, arm_limit=arm_limit, **filters)
        if cap is None:
            cap = ArmCapture({}, {}, {}, dict(got["weights"]), int(got["k"]), arm_limit)
        cap.add(str(query_id), text, got)
        if progress is not None:
            progress.advance(1)
    if cap is None:
        w = resolve_weights(weights)
        cap = ArmCapture({}, {}, {}, w, int(k or DEFAULT_RRF_K), arm_limit)
    if with_vectors and cap.queries:
        cap.vectors = path_vectors(corpus.root, cap.paths())
    return cap


__all__ = [
    "ARM_FRAME_COLUMNS",
    "FUSED_FRAME_COLUMNS",
    "ArmCapture",
    "FusionConfig",
    "capture",
    "fuse",
]
