"""Tune the four RRF weights and k on captured arms, never without a held-out split.

The search space is replayed offline (`memhtml.analysis.replay`), so a grid of
hundreds of configurations costs no query. Queries are split once, seeded,
into train and held-out; configurations are ranked by their TRAIN mean and
every row carries the HELD-OUT mean beside it, so a winner that does not
transfer is visible in the same line. `TuningReport.lines()` is the printable
form and always shows both.

A metric is any ``metric(ranked_paths, gold_paths) -> float`` averaged over
queries; the benchmark metrics in `memhtml.eval.benchmarks.metrics` have that
shape once k is bound (``functools.partial(recall_at_k, k=10)``,
``reciprocal_rank``, ``functools.partial(ndcg_any_at_k, k=10)``). The caller
passes them in: this layer sits below `memhtml.eval` and does not import it.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from memhtml.analysis.replay import ArmCapture, FusionConfig
from memhtml.contracts.vocab import ARMS, DEFAULT_RRF_K, DEFAULT_WEIGHTS
from memhtml.domain.mmr import DEFAULT_MMR_LAMBDA

if TYPE_CHECKING:
    import polars as pl

    from memhtml.analysis.fanout import Executor

MetricFn = Callable[[Sequence[str], Collection[str]], float]

DEFAULT_GRID: Final[dict[str, tuple[float, ...]]] = {
    "fts": (0.0, 0.5, 1.0, 1.5, 2.0),
    "vector": (0.0, 0.5, 1.0, 1.5, 2.0),
    "recency": (0.0, 0.25, 0.5, 1.0),
    "salience": (0.0, 0.4),
}
DEFAULT_KS: Final[tuple[int, ...]] = (10, 30, 60, 100)
# Gap between the train and held-out means above which a winner is flagged.
OVERFIT_GAP: Final = 0.02


def production_config(mmr_lambda: float | None = DEFAULT_MMR_LAMBDA) -> FusionConfig:
    """The production weights and k (with production MMR unless told otherwise)."""
    return FusionConfig(dict(DEFAULT_WEIGHTS), DEFAULT_RRF_K, mmr_lambda)


def split_queries(
    query_ids: Iterable[str], held_out: float = 0.3, seed: int = 0
) -> tuple[list[str], list[str]]:
    """A seeded (train, held-out) split; held_out is the held-out share, in (0, 1).

    The split depends only on the sorted ids and the seed, never on input order.
    """
    if not 0.0 < held_out < 1.0:
        raise ValueError("held_out must be within (0, 1)")
    ids = sorted(set(query_ids))
    rng = random.Random(seed)
    rng.shuffle(ids)
    n_held = max(1, round(len(ids) * held_out)) if len(ids) > 1 else 0
    held = sorted(ids[:n_held])
    train = sorted(ids[n_held:])
    return train, held


def mean_metric(
    capture: ArmCapture,
    config: FusionConfig,
    metric: MetricFn,
    gold: Mapping[str, Collection[str]],
    query_ids: Sequence[str],
    *,
    limit: int,
) -> float:
    """The metric's mean over `query_ids` under `config` (NaN when there is none)."""
    if not query_ids:
        return math.nan
    total = 0.0
    for q in query_ids:
        total += metric(capture.ranking(q, config, limit), gold[q])
    return total / len(query_ids)


@dataclass(frozen=True)
class Scored:
    """One configuration with its train and held-out means."""

    config: FusionConfig
    train: float
    held_out: float

    @property
    def gap(self) -> float:
        """train - held_out (positive: it did better on what it was tuned on)."""
        return self.train - self.held_out

    def to_row(self) -> dict[str, Any]:
        """A flat row for frames and JSON."""
        return {
            **{f"w_{a}": self.config.weights[a] for a in ARMS},
            "k": self.config.k,
            "mmr_lambda": self.config.mmr_lambda,
            "train": self.train,
            "held_out": self.held_out,
            "gap": self.gap,
        }


@dataclass
class TuningReport:
    """The ranked search results, the production baseline and the chosen configuration."""

    metric: str
    limit: int
    seed: int
    n_train: int
    n_held_out: int
    baseline: Scored
    scored: list[Scored] = field(default_factory=list)
    method: str = "grid"

    @property
    def best(self) -> Scored:
        """The configuration with the best TRAIN mean.

        Among exact train ties the one closest to production wins (the smallest
        change that achieves the score), then the earlier in the search.
        """
        if not self.scored:
            return self.baseline
        top = max(s.train for s in self.scored)
        return min(
            (s for s in self.scored if s.train == top),
            key=lambda s: _distance(s.config, self.baseline.config),
        )

    @property
    def overfit(self) -> bool:
        """True when the winner's train-held-out gap exceeds OVERFIT_GAP."""
        return self.best.gap > OVERFIT_GAP

    def frame(self) -> pl.DataFrame:
        """Every configuration, best train first."""
        import polars as pl

        rows = [s.to_row() for s in sorted(self.scored, key=lambda s: -s.train)]
        return pl.DataFrame(rows, infer_schema_length=None)

    def frontier(self, by: str = "k") -> list[dict[str, Any]]:
        """For each value of one parameter (`k`, an arm name, `mmr_lambda`), the best config.

        The best is chosen on train; its held-out mean is reported beside it.
        """
        groups: dict[Any, Scored] = {}
        for s in self.scored:
            key = (
                s.config.k
                if by == "k"
                else s.config.mmr_lambda
                if by == "mmr_lambda"
                else s.config.weights[by]
            )
            if key not in groups or s.train > groups[key].train:
                groups[key] = s
        return [
            {by: key, **groups[key].to_row()}
            for key in sorted(groups, key=lambda v: (v is None, v if v is not None else 0))
        ]

    def to_data(self) -> dict[str, Any]:
        """JSON-ready summary (the full table is `frame()`)."""
        return {
            "metric": self.metric,
            "method": self.method,
            "limit": self.limit,
            "seed": self.seed,
            "n_train": self.n_train,
            "n_held_out": self.n_held_out,
            "configs": len(self.scored),
            "baseline": {**self.baseline.config.to_data(), **_means(self.baseline)},
            "best": {**self.best.config.to_data(), **_means(self.best)},
            "overfit_warning": self.overfit,
            "frontier_k": self.frontier("k"),
        }

    def lines(self, top: int = 5) -> list[str]:
        """The printable summary: held-out is always printed next to train."""
        out = [
            f"{self.method} search over {len(self.scored)} configs; metric {self.metric};"
            f" train n={self.n_train}, held-out n={self.n_held_out} (seed {self.seed})",
            f"  production  {self.baseline.config.label():58s}"
            f" train {self.baseline.train:.4f}  held-out {self.baseline.held_out:.4f}",
        ]
        for i, s in enumerate(sorted(self.scored, key=lambda s: -s.train)[:top], start=1):
            out.append(
                f"  #{i:<10d} {s.config.label():58s} train {s.train:.4f}  held-out {s.held_out:.4f}"
            )
        if self.overfit:
            out.append(
                f"  WARNING: the winner's train-held-out gap is {self.best.gap:+.4f}"
                f" (> {OVERFIT_GAP}): it may not transfer"
            )
        delta = self.best.held_out - self.baseline.held_out
        out.append(f"  held-out change of the winner over production: {delta:+.4f}")
        return out


def _distance(a: FusionConfig, b: FusionConfig) -> float:
    """How far a configuration is from another (weights L1 plus relative k change)."""
    return sum(abs(a.weights[arm] - b.weights[arm]) for arm in ARMS) + abs(a.k - b.k) / b.k


def _means(s: Scored) -> dict[str, float]:
    return {"train": s.train, "held_out": s.held_out}


@dataclass(frozen=True)
class _Task:
    """What every configuration is scored against."""

    capture: ArmCapture
    metric: MetricFn
    gold: Mapping[str, Collection[str]]
    train: Sequence[str]
    held: Sequence[str]
    limit: int

    def score(self, config: FusionConfig) -> Scored:
        def run(ids: Sequence[str]) -> float:
            return mean_metric(self.capture, config, self.metric, self.gold, ids, limit=self.limit)

        return Scored(config, run(self.train), run(self.held))


def _score_chunk(task: _Task, configs: Sequence[FusionConfig]) -> list[Scored]:
    """One share of a sweep (module level: a Ray worker imports it by name)."""
    return [task.score(c) for c in configs]


# Shares per worker: enough that a slow share does not leave the other workers idle, few
# enough that each is worth a task's overhead.
SHARES_PER_WORKER: Final = 4


def score_all(
    task: _Task, configs: Sequence[FusionConfig], executor: Executor | None = None
) -> list[Scored]:
    """Every configuration scored, in order: here without an executor, else shared out.

    A score is a pure function of the capture and the configuration, so the
    list is the same whoever computes it; Ray ships the task (the capture)
    once, not once per share.
    """
    if executor is None or executor.workers <= 1 or len(configs) < 2:
        return _score_chunk(task, configs)
    n = min(len(configs), executor.workers * SHARES_PER_WORKER)
    size = -(-len(configs) // n)
    shares = [configs[i : i + size] for i in range(0, len(configs), size)]
    return [s for part in executor.map(_score_chunk, shares, shared=task) for s in part]


def _gold_ids(capture: ArmCapture, gold: Mapping[str, Collection[str]]) -> list[str]:
    missing = [q for q in gold if q not in capture.arms]
    if missing:
        raise ValueError(f"{len(missing)} gold query ids were not captured, e.g. {missing[0]!r}")
    return [q for q in capture.query_ids if q in gold]


def grid_search(
    capture: ArmCapture,
    gold: Mapping[str, Collection[str]],
    metric: MetricFn,
    *,
    metric_name: str = "metric",
    grid: Mapping[str, Sequence[float]] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    mmr_lambdas: Sequence[float | None] = (None,),
    limit: int = 10,
    held_out: float = 0.3,
    seed: int = 0,
    baseline: FusionConfig | None = None,
    executor: Executor | None = None,
) -> TuningReport:
    """Every combination of the grid's weights, `ks` and `mmr_lambdas`, scored on both splits.

    Only queries with gold are used. An all-zero weight vector is skipped
    (it ranks nothing). `baseline` defaults to production weights and k with
    the first of `mmr_lambdas`. `executor` (`memhtml.analysis.fanout`) shares
    the configurations out to Ray workers; the report is the same.
    """
    g = {a: tuple((grid or DEFAULT_GRID).get(a, (DEFAULT_WEIGHTS[a],))) for a in ARMS}
    train, held = split_queries(_gold_ids(capture, gold), held_out, seed)
    task = _Task(capture, metric, gold, train, held, limit)
    base = baseline or FusionConfig(dict(DEFAULT_WEIGHTS), DEFAULT_RRF_K, mmr_lambdas[0])
    report = TuningReport(
        metric=metric_name,
        limit=limit,
        seed=seed,
        n_train=len(train),
        n_held_out=len(held),
        baseline=task.score(base),
        method="grid",
    )
    configs = []
    for values in itertools.product(*(g[a] for a in ARMS)):
        if not any(values):
            continue
        weights = dict(zip(ARMS, values, strict=True))
        for k in ks:
            for lam in mmr_lambdas:
                configs.append(FusionConfig(weights, k, lam))
    report.scored = score_all(task, configs, executor)
    return report


def coordinate_search(
    capture: ArmCapture,
    gold: Mapping[str, Collection[str]],
    metric: MetricFn,
    *,
    metric_name: str = "metric",
    grid: Mapping[str, Sequence[float]] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    mmr_lambda: float | None = None,
    start: FusionConfig | None = None,
    rounds: int = 3,
    limit: int = 10,
    held_out: float = 0.3,
    seed: int = 0,
    executor: Executor | None = None,
) -> TuningReport:
    """Move one coordinate (an arm weight, or k) at a time to its best train value.

    Cheaper than the grid (sum instead of product of the axis sizes per
    round); stops early when a round changes nothing. Every configuration
    visited is in the report with both means. With `executor`, one axis's
    unseen options are scored together on the workers; the walk is the same.
    """
    g = {a: tuple((grid or DEFAULT_GRID).get(a, (DEFAULT_WEIGHTS[a],))) for a in ARMS}
    train, held = split_queries(_gold_ids(capture, gold), held_out, seed)
    task = _Task(capture, metric, gold, train, held, limit)
    current = start or FusionConfig(dict(DEFAULT_WEIGHTS), DEFAULT_RRF_K, mmr_lambda)
    report = TuningReport(
        metric=metric_name,
        limit=limit,
        seed=seed,
        n_train=len(train),
        n_held_out=len(held),
        baseline=task.score(current),
        method="coordinate",
    )
    seen: dict[str, Scored] = {current.label(): report.baseline}
    report.scored.append(report.baseline)

    def visit(options: Sequence[FusionConfig]) -> list[Scored]:
        fresh: dict[str, FusionConfig] = {}
        for cfg in options:
            if cfg.label() not in seen:
                fresh.setdefault(cfg.label(), cfg)
        for key, scored in zip(fresh, score_all(task, list(fresh.values()), executor), strict=True):
            seen[key] = scored
            report.scored.append(scored)
        return [seen[cfg.label()] for cfg in options]

    best = report.baseline
    for _ in range(rounds):
        before = best.config.label()
        for axis in (*ARMS, "k"):
            options: Iterable[FusionConfig]
            if axis == "k":
                options = (FusionConfig(best.config.weights, k, best.config.mmr_lambda) for k in ks)
            else:
                options = (
                    FusionConfig(
                        {**best.config.weights, axis: v}, best.config.k, best.config.mmr_lambda
                    )
                    for v in g[axis]
                    if any({**best.config.weights, axis: v}.values())
                )
            for s in visit(list(options)):
                if s.train > best.train:
                    best = s
        if best.config.label() == before:
            break
    return report


__all__ = [
    "DEFAULT_GRID",
    "DEFAULT_KS",
    "OVERFIT_GAP",
    "MetricFn",
    "Scored",
    "TuningReport",
    "coordinate_search",
    "grid_search",
    "mean_metric",
    "production_config",
    "score_all",
    "split_queries",
]
