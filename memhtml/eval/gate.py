"""The discrimination gate: can retrieval tell a fact from its near-identical controls?

`run_gate` writes the fixture (targets and controls included) into a fresh
memory root, indexes it with the chosen embedder, and runs every probe query
through the production `Corpus.search` (production weights, RRF k, MMR,
limit 50, explained). For each probe it records the target's rank and every
control's rank in the returned order and their fused scores.

A probe fails when its target is missing from the top 50 or any control
*does not strictly outrank-lose*: a control ranked above the target, or one
whose fused score equals the target's (a tie decided by path or by MMR is not
discrimination). The gate passes when no probe fails, the mean reciprocal
rank of the targets clears the floor, and the vector arm actually ran.

Modes: `fake` (deterministic hashed embedder; CI), `local` (the default
MiniLM model; CI), `live` (Bedrock). A live run that cannot reach the model
reports `skipped: true` and `passed: null`, never a pass.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import (
    DiscriminationFailedError,
    InvalidFlagError,
    ModelUnavailableError,
)
from memhtml.eval.fixture import (
    DEFAULT_NOW,
    DEFAULT_SEED,
    DEFAULT_SIZE,
    FixturePlan,
    generate_fixture,
)
from memhtml.eval.probes import Probe
from memhtml.seams import extra_missing

if TYPE_CHECKING:
    from memhtml.index.retrieval import Hit, SearchResult
    from memhtml.ops.corpus import Corpus

MODES: Final[tuple[str, ...]] = ("fake", "local", "live")
EMBEDDER_FOR_MODE: Final[dict[str, str]] = {"fake": "fake", "local": "local", "live": "bedrock"}
DEFAULT_MRR_FLOOR: Final = 0.85
SEARCH_LIMIT: Final = 50
LIVE_PING_TIMEOUT_S: Final = 5


@dataclass(frozen=True)
class ProbeResult:
    """One probe's outcome: ranks are 1-based positions in the result, None when absent."""

    probe: Probe
    target_rank: int | None
    target_score: float | None
    control_ranks: tuple[int | None, ...]
    control_scores: tuple[float | None, ...]
    margin: float | None
    margin_is_bound: bool
    inverted: tuple[str, ...]
    tied: tuple[str, ...] = ()
    target_arms: Mapping[str, int] = field(default_factory=dict)
    best_control_arms: Mapping[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """The target is present and strictly outranks every control."""
        return self.target_rank is not None and not self.inverted

    @property
    def reciprocal_rank(self) -> float:
        """1/rank of the target (0 when missing)."""
        return 1.0 / self.target_rank if self.target_rank else 0.0

    def to_row(self) -> dict[str, Any]:
        """One row of the per-probe table (JSON and Parquet)."""
        p = self.probe
        return {
            "probe_id": p.probe_id,
            "kind": p.kind,
            "query": p.query,
            "target": p.target,
            "target_claim": p.target_claim,
            "target_rank": self.target_rank,
            "target_score": self.target_score,
            "controls": list(p.controls),
            "control_kinds": list(p.control_kinds),
            "control_rules": list(p.rules),
            "control_claims": list(p.control_claims),
            "control_ranks": list(self.control_ranks),
            "control_scores": list(self.control_scores),
            "best_control_rank": min(
                (r for r in self.control_ranks if r is not None), default=None
            ),
            "margin": self.margin,
            "margin_is_bound": self.margin_is_bound,
            "inverted": list(self.inverted),
            "tied": list(self.tied),
            "passed": self.passed,
            "reciprocal_rank": self.reciprocal_rank,
            "target_fts_rank": self.target_arms.get("fts"),
            "target_vector_rank": self.target_arms.get("vector"),
            "target_recency_rank": self.target_arms.get("recency"),
            "control_fts_rank": self.best_control_arms.get("fts"),
            "control_vector_rank": self.best_control_arms.get("vector"),
            "control_recency_rank": self.best_control_arms.get("recency"),
        }

    def failure(self) -> dict[str, Any]:
        """What a failing probe reports in the envelope."""
        return {
            "probe_id": self.probe.probe_id,
            "kind": self.probe.kind,
            "query": self.probe.query,
            "target": self.probe.target,
            "target_rank": self.target_rank,
            "controls": dict(zip(self.probe.controls, self.control_ranks, strict=True)),
            "inverted": list(self.inverted),
            "tied": list(self.tied),
            "margin": self.margin,
        }


@dataclass
class GateReport:
    """The gate's verdict and its evidence."""

    mode: str
    seed: int
    size: int
    now: str
    mrr_floor: float
    files: int = 0
    probes: int = 0
    mrr: float | None = None
    inversions: int = 0
    ties: int = 0
    worst_margin: float | None = None
    failing: list[dict[str, Any]] = field(default_factory=list)
    duration_s: float = 0.0
    skipped: bool = False
    reason: str | None = None
    passed: bool | None = None
    embedder: str | None = None
    degraded: bool = False
    by_kind: dict[str, dict[str, Any]] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    mmr_lambda: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    report_files: dict[str, str | None] = field(default_factory=dict)
    results: list[ProbeResult] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        """The `eval.discrimination` payload."""
        return {
            "mode": self.mode,
            "passed": self.passed,
            "skipped": self.skipped,
            "reason": self.reason,
            "seed": self.seed,
            "size": self.size,
            "now": self.now,
            "files": self.files,
            "probes": self.probes,
            "mrr": self.mrr,
            "mrr_floor": self.mrr_floor,
            "inversions": self.inversions,
            "ties": self.ties,
            "failing_probes": len(self.failing),
            "worst_margin": self.worst_margin,
            "degraded": self.degraded,
            "embedder": self.embedder,
            "weights": self.weights,
            "mmr_lambda": self.mmr_lambda,
            "by_kind": self.by_kind,
            "failing": self.failing,
            "duration_s": round(self.duration_s, 3),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "report_files": self.report_files,
        }

    def raise_for_failure(self) -> None:
        """Raise DiscriminationFailedError when the gate ran and did not pass."""
        if self.skipped or self.passed:
            return
        why = self.reason or "the gate did not pass"
        raise DiscriminationFailedError(
            f"discrimination gate failed ({self.mode}): {why}",
            suggestions=[
                "inspect the failing probes with: memhtml search '<query>' --explain --limit 50",
                "the per-probe table: memhtml eval discriminate --report-dir DIR",
            ],
            details=self.to_data(),
        )


def _arms(hit: Hit | None) -> dict[str, int]:
    if hit is None or not hit.arms:
        return {}
    return {arm: int(v["rank"]) for arm, v in hit.arms.items()}


def score_probe(probe: Probe, result: SearchResult) -> ProbeResult:
    """Ranks, scores and inversions of one probe in one search result."""
    position = {h.path: i for i, h in enumerate(result.hits, start=1)}
    by_path = {h.path: h for h in result.hits}
    t_rank = position.get(probe.target)
    t_hit = by_path.get(probe.target)
    t_score = t_hit.score if t_hit else None
    c_ranks = tuple(position.get(c) for c in probe.controls)
    c_scores = tuple(by_path[c].score if c in by_path else None for c in probe.controls)
    inverted: list[str] = []
    tied: list[str] = []
    for path, rank, score in zip(probe.controls, c_ranks, c_scores, strict=True):
        if rank is None:
            continue
        if t_rank is None or rank < t_rank:
            inverted.append(path)
        elif t_score is not None and score is not None and score >= t_score:
            # Equal fused scores: the order came from the tie-break (the lexical
            # arm's ranks), which is evidence, but thinner; reported, not failed.
            tied.append(path)
    margin: float | None = None
    bound = False
    if t_score is not None:
        present = [s for s in c_scores if s is not None]
        if present:
            margin = t_score - max(present)
        elif result.hits:
            margin = t_score - min(h.score for h in result.hits)
            bound = True
    best = min(
        ((r, c) for r, c in zip(c_ranks, probe.controls, strict=True) if r is not None),
        default=None,
    )
    return ProbeResult(
        probe=probe,
        target_rank=t_rank,
        target_score=t_score,
        control_ranks=c_ranks,
        control_scores=c_scores,
        margin=margin,
        margin_is_bound=bound,
        inverted=tuple(inverted),
        tied=tuple(tied),
        target_arms=_arms(t_hit),
        best_control_arms=_arms(by_path.get(best[1])) if best else {},
    )


def _summarize(report: GateReport, results: Sequence[ProbeResult]) -> None:
    report.results = list(results)
    report.probes = len(results)
    report.mrr = sum(r.reciprocal_rank for r in results) / len(results) if results else None
    report.inversions = sum(len(r.inverted) for r in results)
    report.ties = sum(len(r.tied) for r in results)
    margins = [r.margin for r in results if r.margin is not None]
    report.worst_margin = min(margins) if margins else None
    report.failing = [r.failure() for r in results if not r.passed]
    kinds: dict[str, list[ProbeResult]] = {}
    for r in results:
        kinds.setdefault(r.probe.kind, []).append(r)
    report.by_kind = {
        kind: {
            "probes": len(rs),
            "mrr": sum(r.reciprocal_rank for r in rs) / len(rs),
            "failing": sum(1 for r in rs if not r.passed),
            "inversions": sum(len(r.inverted) for r in rs),
            "worst_margin": min((r.margin for r in rs if r.margin is not None), default=None),
        }
        for kind, rs in sorted(kinds.items())
    }
    problems = []
    if report.degraded:
        problems.append("the vector arm did not run (degraded search)")
    if report.failing:
        problems.append(
            f"{len(report.failing)} probe(s) failed with {report.inversions} inversion(s)"
        )
    if report.mrr is None:
        problems.append("no probes ran")
    elif report.mrr < report.mrr_floor:
        problems.append(f"MRR {report.mrr:.4f} is below the floor {report.mrr_floor}")
    report.passed = not problems
    report.reason = "; ".join(problems) or None


def live_preflight() -> str | None:
    """None when Bedrock answers an embed call quickly; else why the live gate must skip."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        return extra_missing("live gate", "bedrock", exc).message
    from memhtml.embed.bedrock import REGION_ENV, BedrockEmbedder

    region = os.environ.get(REGION_ENV) or None
    try:
        session = boto3.Session(region_name=region)
        if session.get_credentials() is None:
            return "no AWS credentials in the default chain"
        if session.region_name is None:
            return f"no AWS region (set {REGION_ENV} or AWS_REGION)"
        config = Config(
            connect_timeout=LIVE_PING_TIMEOUT_S,
            read_timeout=LIVE_PING_TIMEOUT_S,
            retries={"mode": "standard", "max_attempts": 1},
        )
        client = session.client("bedrock-runtime", config=config)
        BedrockEmbedder(client=client).embed_query("discrimination gate preflight")
    except ModelUnavailableError as exc:
        return f"{exc.code}: {exc.message}"
    except Exception as exc:  # any SDK failure means the model is out of reach
        return f"{type(exc).__name__}: {exc}"
    return None


def write_probe_table(
    results: Sequence[ProbeResult], report_dir: str | os.PathLike[str], meta: Mapping[str, Any]
) -> dict[str, str | None]:
    """Write probes.json (always) and probes.parquet (when polars is installed)."""
    out = Path(report_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [r.to_row() for r in results]
    json_path = out / "probes.json"
    json_path.write_text(
        json.dumps({"meta": dict(meta), "probes": rows}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    files: dict[str, str | None] = {"json": str(json_path), "parquet": None}
    try:
        import polars as pl
    except ImportError:
        files["parquet_skipped"] = "polars is not installed (pip install 'memhtml[research]')"
        return files
    frame = pl.DataFrame(rows, infer_schema_length=None)
    parquet_path = out / "probes.parquet"
    frame.write_parquet(parquet_path)
    files["parquet"] = str(parquet_path)
    return files


def _run_probes(
    corpus: Corpus,
    probes: Sequence[Probe],
    weights: Mapping[str, float] | None,
    mmr_lambda: float | None,
) -> tuple[list[ProbeResult], bool, Any]:
    results: list[ProbeResult] = []
    degraded = False
    last = None
    for probe in probes:
        # The exact scan: the gate is the oracle approximate search is measured against.
        last = corpus.search(
            probe.query,
            limit=SEARCH_LIMIT,
            weights=weights,
            mmr_lambda=mmr_lambda,
            explain=True,
            exact=True,
        )
        degraded = degraded or last.degraded
        results.append(score_probe(probe, last))
    return results, degraded, last


def _index_and_probe(
    report: GateReport,
    plan: FixturePlan,
    chosen: Sequence[Probe],
    *,
    workdir: str | os.PathLike[str] | None,
    weights: Mapping[str, float] | None,
    mmr_lambda: float | None,
) -> list[ProbeResult]:
    """Write the plan into a temporary root, index it, and run the chosen probes."""
    import memhtml
    from memhtml.eval.fixture import write_fixture

    mode = report.mode
    with tempfile.TemporaryDirectory(prefix="memhtml-gate-", dir=workdir) as tmp:
        mark = time.perf_counter()
        root = Path(tmp) / "corpus"
        write_fixture(plan, root, configure=False)
        report.files = len(plan.files)
        report.timings["write"] = time.perf_counter() - mark
        corpus = memhtml.open(root, embedder=report.embedder, now=plan.now)
        try:
            mark = time.perf_counter()
            index = corpus.index.rebuild(embed=True, progress=False)
            report.timings["index"] = time.perf_counter() - mark
            error = (index.get("vectors") or {}).get("error")
            if corpus.embedder is None or error:
                raise ModelUnavailableError(
                    f"the {mode} embedder did not embed the fixture: "
                    f"{error or corpus.embedder_error}",
                    suggestions=["memhtml index status", "check the model install"],
                )
            mark = time.perf_counter()
            results, report.degraded, last = _run_probes(corpus, chosen, weights, mmr_lambda)
            report.timings["search"] = time.perf_counter() - mark
            if last is not None:
                report.weights, report.mmr_lambda = dict(last.weights), last.mmr_lambda
        finally:
            corpus.close()
    return results


def run_gate(
    mode: str = "fake",
    seed: int = DEFAULT_SEED,
    size: int = DEFAULT_SIZE,
    probes: int | None = None,
    now: str = DEFAULT_NOW,
    *,
    mrr_floor: float = DEFAULT_MRR_FLOOR,
    workdir: str | os.PathLike[str] | None = None,
    report_dir: str | os.PathLike[str] | None = None,
    weights: Mapping[str, float] | None = None,
    mmr_lambda: float | None = None,
    embedder: str | None = None,
) -> GateReport:
    """Run the gate; the report says passed, failed (with the failing probes) or skipped.

    `probes` runs only the first N probes of the plan. `weights` and
    `mmr_lambda` override the production retrieval settings: diagnostics for
    attributing a failure to an arm or to MMR, not a way to pass the gate.
    `embedder` names the registry's embedder to run instead of the mode's (a
    model migration gates its target, `eval compare-embedders` any two).
    """
    if mode not in MODES and embedder is None:
        raise InvalidFlagError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if not 0.0 <= mrr_floor <= 1.0:
        raise InvalidFlagError("--mrr-floor must be within [0, 1]")
    if probes is not None and probes < 1:
        raise InvalidFlagError("--probes must be at least 1")
    started = time.perf_counter()
    report = GateReport(
        mode=mode,
        seed=seed,
        size=size,
        now=now,
        mrr_floor=mrr_floor,
        embedder=embedder or EMBEDDER_FOR_MODE[mode],
    )
    if mode == "live":
        why = live_preflight()
        if why is not None:
            report.skipped, report.passed = True, None
            report.reason = f"live model unreachable: {why}"
            report.duration_s = time.perf_counter() - started
            return report
    plan = generate_fixture(seed, size, now)
    report.now = plan.now
    report.timings["generate"] = time.perf_counter() - started
    chosen = plan.probes[:probes] if probes else plan.probes
    try:
        results = _index_and_probe(
            report, plan, chosen, workdir=workdir, weights=weights, mmr_lambda=mmr_lambda
        )
    except ModelUnavailableError as exc:
        if mode != "live":
            raise
        report.skipped, report.passed = True, None
        report.reason = f"live model unreachable during the run: {exc.code}: {exc.message}"
        report.duration_s = time.perf_counter() - started
        return report
    if mode == "live" and report.degraded:
        report.skipped, report.passed = True, None
        report.reason = "live model unreachable during the run: searches ran degraded"
        report.duration_s = time.perf_counter() - started
        return report
    _summarize(report, results)
    report.duration_s = time.perf_counter() - started
    if report_dir is not None:
        report.report_files = write_probe_table(
            results,
            report_dir,
            {k: v for k, v in report.to_data().items() if k not in ("failing", "report_files")},
        )
    return report


__all__ = [
    "DEFAULT_MRR_FLOOR",
    "MODES",
    "GateReport",
    "ProbeResult",
    "live_preflight",
    "run_gate",
    "score_probe",
    "write_probe_table",
]
