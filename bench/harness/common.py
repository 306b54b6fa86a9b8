"""Shared machinery of the retrieval harnesses: ingest, query, replay, report.

A harness turns a benchmark (loaded by `memhtml.eval.benchmarks`) into one
fresh memory repository per scope (conversation, row), writing one memory
per turn / fact / message through the real write path (`Corpus.apply`, one
commit per batch, the benchmark's timestamp as `event_at`, an explicit path
that encodes the doc id). Every question is then asked through
`Corpus.search(limit=max k)` against its own scope only, and the ranked paths
are mapped back to doc ids for the benchmark's own metrics.

For ablations and tuning, each question's arm lists are also captured once
(`memhtml.analysis.replay.capture`) and re-fused offline, which is exactly the
production order for the capture's configuration (checked on every run: the
result JSON carries `replay_check`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memhtml.analysis.replay import ArmCapture, FusionConfig, capture
from memhtml.analysis.tuning import TuningReport, coordinate_search, grid_search
from memhtml.contracts.vocab import ARMS, DEFAULT_RRF_K, DEFAULT_WEIGHTS
from memhtml.domain.mmr import DEFAULT_MMR_LAMBDA
from memhtml.eval.benchmarks import default_data_root
from memhtml.eval.benchmarks import metrics as bm
from memhtml.eval.benchmarks.records import Corpus as BenchCorpus
from memhtml.eval.benchmarks.records import Question
from memhtml.index.retrieval import ARM_LIMIT
from memhtml.progress import Progress

if TYPE_CHECKING:
    from memhtml.analysis.fanout import Executor

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "bench" / "results"
# A fixed clock for every write, so created/updated metas (and the recency
# fallback for undated memories) do not depend on when the harness ran.
FIXED_NOW = "2030-01-01T00:00:00Z"
BATCH_SIZE = 1000


# -- options --------------------------------------------------------------------------
def parse_weights(text: str | None) -> dict[str, float] | None:
    """`fts=1,vector=1,recency=0.5` -> a weight dict merged over production; None for None."""
    from memhtml.contracts.errors import InvalidFlagError
    from memhtml.index.retrieval import parse_weights as parse_arms

    try:
        named = parse_arms(text)
    except InvalidFlagError as exc:
        raise SystemExit(f"--weights: {exc.message}") from exc
    return None if named is None else {**DEFAULT_WEIGHTS, **named}


_STARTED: dict[str, Any] = {}


def base_parser(name: str, data_help: str) -> argparse.ArgumentParser:
    """The flags every harness shares (and the commit the run starts from)."""
    _STARTED["memhtml"] = git_commit()
    p = argparse.ArgumentParser(prog=f"python -m bench.harness.{name}", description=__doc__)
    p.add_argument("--data", type=Path, default=None, help=data_help)
    p.add_argument(
        "--embedder",
        default=os.environ.get("MEMHTML_EMBED", "local"),
        choices=("local", "fake", "openai"),
        help="embedder for memories and queries (openai: the endpoint MEMHTML_EMBED_BASE_URL,"
        " _MODEL, _API_KEY, _DIM name; docs/embedders.md)",
    )
    p.add_argument(
        "--weights",
        default=None,
        help="arm weights over production, e.g. fts=1,vector=1,recency=0.5,salience=0.4",
    )
    p.add_argument(
        "--k", type=int, default=None, help=f"RRF k (default: production, {DEFAULT_RRF_K})"
    )
    p.add_argument(
        "--mmr-lambda",
        type=float,
        default=None,
        help=f"MMR lambda (default: production, {DEFAULT_MMR_LAMBDA:g}; 1 disables MMR)",
    )
    p.add_argument(
        "--limit-conversations",
        type=int,
        default=None,
        help="only the first N scopes (conversations / rows)",
    )
    p.add_argument(
        "--ablations",
        action="store_true",
        help="also replay each arm alone, fts+vector, all four, +/- MMR",
    )
    p.add_argument(
        "--tune",
        action="store_true",
        help="grid-search weights and k on a seeded train split; report held-out",
    )
    p.add_argument("--tune-method", choices=("grid", "coordinate"), default="grid")
    p.add_argument("--seed", type=int, default=0, help="split seed for --tune")
    p.add_argument("--held-out", type=float, default=0.3, help="held-out share for --tune")
    p.add_argument("--tag", default=None, help="result file suffix: <name>-<tag>.json")
    p.add_argument("--out-dir", type=Path, default=RESULTS_DIR, help="where results go")
    p.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the temporary memory repos live (default: system temp)",
    )
    p.add_argument("--keep", action="store_true", help="keep the memory repos (under --workdir)")
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="ops per commit")
    p.add_argument(
        "--consolidate",
        choices=("last-wins",),
        default=None,
        help="ingest with `apply --consolidate last-wins` (a conflicting fact supersedes the"
        " older value; docs/conflicts.md)",
    )
    p.add_argument("--quiet", action="store_true", help="no summary on stdout")
    add_cluster_flags(p)
    p.add_argument(
        "--save-capture",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the captured arms (+ gold.json) there for notebooks/rrf_tuning.py",
    )
    return p


def data_path(arg: Path | None, *relative: str) -> Path:
    """--data, else the shared data root joined with `relative`; a clear exit when absent."""
    if arg is not None:
        path = arg
    else:
        root = default_data_root()
        if root is None:
            raise SystemExit("no benchmark data: pass --data PATH or set MEMHTML_BENCH_DATA")
        path = root.joinpath(*relative)
    if not path.exists():
        raise SystemExit(f"benchmark data not found at {path}")
    return path


@dataclass
class Settings:
    """How the production run searches (None: production defaults)."""

    weights: dict[str, float] | None
    k: int | None
    mmr_lambda: float | None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Settings:
        return cls(parse_weights(args.weights), args.k, args.mmr_lambda)

    def config(self) -> FusionConfig:
        """The effective fusion configuration."""
        lam = DEFAULT_MMR_LAMBDA if self.mmr_lambda is None else self.mmr_lambda
        return FusionConfig(self.weights or dict(DEFAULT_WEIGHTS), self.k or DEFAULT_RRF_K, lam)

    def search_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.weights is not None:
            out["weights"] = self.weights
        if self.k is not None:
            out["k"] = self.k
        if self.mmr_lambda is not None:
            out["mmr_lambda"] = self.mmr_lambda
        return out


# -- provenance ------------------------------------------------------------------------
def git_commit(repo: Path = REPO_ROOT) -> dict[str, Any]:
    """HEAD of the memhtml checkout and whether its tree is dirty."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}
    return {"commit": head, "dirty": dirty}


def sha256_of(path: Path) -> str:
    """sha256 of a file, or of a directory's files (sorted relative paths and bytes)."""
    h = hashlib.sha256()
    if path.is_file():
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(path)).encode() + b"\0")
        h.update(bytes.fromhex(sha256_of(f)))
    return h.hexdigest()


# -- ingest ----------------------------------------------------------------------------------
@dataclass
class Ingested:
    """One scope's memory repository and the doc id <-> path maps."""

    scope_id: str
    root: Path
    corpus: Any  # memhtml.ops.corpus.Corpus
    path_of: dict[str, str]
    docs_of: dict[str, list[str]]
    seconds: float
    deduped: int = 0
    vectors: dict[str, Any] = field(default_factory=dict)

    def doc_ranking(self, paths: Sequence[str]) -> list[str]:
        """Ranked paths -> ranked doc ids (a deduped holder yields all its docs, in order)."""
        out: list[str] = []
        for p in paths:
            out.extend(self.docs_of.get(p, ()))
        return out

    def gold_paths(self, gold_ids: Iterable[str]) -> frozenset[str]:
        """Doc ids -> the paths that hold them."""
        return frozenset(self.path_of[g] for g in gold_ids if g in self.path_of)


def _batches(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def ingest(
    scope_id: str,
    ops: Sequence[tuple[str, dict[str, Any]]],
    root: Path,
    *,
    embedder: str,
    batch_size: int = BATCH_SIZE,
    progress: Progress | None = None,
    consolidate: str | None = None,
) -> Ingested:
    """Write `(doc_id, write-op)` pairs into a fresh repo at `root`, one commit per batch.

    A write the store dedups onto an existing memory maps its doc id to the
    holder's path; any failed op stops the harness (the data would be wrong).
    With `consolidate` (last-wins) a doc whose fact a later doc superseded
    maps to no live path: its memory was never written, or was archived.
    """
    import memhtml
    from memhtml.ops.write_checks import WriteChecks
    from memhtml.store.layout import init_repo

    checks = None if consolidate is None else WriteChecks(consolidate="last-wins")

    started = time.perf_counter()
    if root.exists():
        shutil.rmtree(root)
    init_repo(root)
    corpus = memhtml.open(root, embedder=embedder, now=FIXED_NOW)
    # Many searches in one process: let the kernel vouch that the tree did not change, so a
    # search skips `git status` (which stats every file: ~1 s at a few hundred thousand).
    corpus.watch_tree()
    path_of: dict[str, str] = {}
    deduped = 0
    vectors: dict[str, Any] = {"embedded": 0, "errors": []}
    for batch in _batches(list(ops), batch_size):
        # Benchmark transcripts are public data that quote credentials now and then (LoCoMo's
        # signed image URLs carry JWTs, BEAM prints a password hash): the secret guard would
        # refuse those turns and silently change what recall is measured over.
        outcome = corpus.apply([{**op, "allow_secret": True} for _, op in batch], checks=checks)
        if outcome.failure is not None:
            raise SystemExit(f"{scope_id}: ingest failed: {outcome.failure.message}")
        for (doc_id, _), result in zip(batch, outcome.results, strict=True):
            if not result["ok"]:
                raise SystemExit(f"{scope_id}: {doc_id} failed: {result.get('error')}")
            if result.get("consolidated_into") is not None:
                continue  # its content was replaced; the slot's write says by whom
            if result.get("content_from") is not None:
                path_of[batch[result["content_from"]][0]] = str(result["path"])
                continue
            if result.get("deduped"):
                deduped += 1
                path_of[doc_id] = str(result.get("existing_path") or result["path"])
            else:
                path_of[doc_id] = str(result["path"])
        vec = outcome.vectors or {}
        vectors["embedded"] += int(vec.get("embedded") or 0)
        if vec.get("error"):
            vectors["errors"].append(vec["error"])
        if progress is not None:
            progress.advance(len(batch))
    if vectors["errors"]:
        raise SystemExit(f"{scope_id}: embedding failed: {vectors['errors'][0]}")
    docs_of: dict[str, list[str]] = {}
    for doc_id, _ in ops:
        if doc_id in path_of:
            docs_of.setdefault(path_of[doc_id], []).append(doc_id)
    return Ingested(
        scope_id, root, corpus, path_of, docs_of, time.perf_counter() - started, deduped, vectors
    )


@contextmanager
def scope_root(workdir: Path | None, name: str, keep: bool) -> Iterator[Path]:
    """A directory for one scope's repo, removed afterwards unless `keep`."""
    if keep:
        base = workdir or Path(tempfile.gettempdir()) / "memhtml-bench"
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        yield path
        return
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(
        prefix=f"memhtml-{name.replace('/', '-')}-", dir=workdir
    ) as tmp:
        yield Path(tmp) / "repo"


# -- questions -------------------------------------------------------------------------------
@dataclass
class Asked:
    """One question's production ranking (doc ids and paths) and its latency."""

    question: Question
    scope_id: str
    paths: list[str]
    doc_ids: list[str]
    gold_paths: frozenset[str]
    ms: float
    degraded: bool


def ask_all(
    ing: Ingested,
    questions: Sequence[Question],
    settings: Settings,
    *,
    limit: int,
    capture_arms: bool,
    progress: Progress | None = None,
) -> tuple[list[Asked], ArmCapture | None, float]:
    """Search every question (production path); capture arms once for replay when asked.

    Returns the answers, the capture (or None) and the seconds the capture took.
    """
    out: list[Asked] = []
    for q in questions:
        t0 = time.perf_counter()
        result = ing.corpus.search(q.text, limit=limit, **settings.search_kwargs())
        ms = (time.perf_counter() - t0) * 1000
        paths = [h.path for h in result.hits]
        out.append(
            Asked(
                q,
                ing.scope_id,
                paths,
                ing.doc_ranking(paths),
                ing.gold_paths(q.gold_ids),
                ms,
                result.degraded,
            )
        )
        if progress is not None:
            progress.advance(1)
    cap = None
    t0 = time.perf_counter()
    if capture_arms and questions:
        # Production weights (every arm positive) so every arm has a list to replay.
        cap = capture(
            ing.corpus, [(q.qid, q.text) for q in questions], arm_limit=max(ARM_LIMIT, limit)
        )
    return out, cap, time.perf_counter() - t0


def merge_captures(captures: Sequence[ArmCapture]) -> ArmCapture | None:
    """One capture over every scope (query ids and paths are globally unique here)."""
    if not captures:
        return None
    first = captures[0]
    merged = ArmCapture({}, {}, {}, dict(first.weights), first.k, first.arm_limit)
    for c in captures:
        merged.queries.update(c.queries)
        merged.arms.update(c.arms)
        merged.sql_fused.update(c.sql_fused)
        merged.degraded.update(c.degraded)
        merged.vectors.update(c.vectors)
        merged.docs.update(c.docs)
        merged.anchors.update(c.anchors)
    return merged


def save_capture(args: argparse.Namespace, cap: ArmCapture | None, asked: Sequence[Asked]) -> None:
    """--save-capture: the arm capture plus gold.json (query id -> gold paths, category)."""
    if cap is None or args.save_capture is None:
        return
    cap.write(args.save_capture)
    gold = {
        a.question.qid: {
            "paths": sorted(a.gold_paths),
            "category": a.question.category,
            "scope": a.scope_id,
        }
        for a in asked
    }
    (args.save_capture / "gold.json").write_text(json.dumps(gold, indent=1, sort_keys=True))


def replay_check(
    cap: ArmCapture, asked: Sequence[Asked], settings: Settings, limit: int
) -> dict[str, Any]:
    """Does the offline replay reproduce the production order? (Only when configs agree.)"""
    cfg = settings.config()
    if dict(cfg.weights) != dict(cap.weights) or cfg.k != cap.k:
        return {"checked": 0, "equal": 0, "note": "run weights differ from the capture's"}
    equal = sum(1 for a in asked if cap.ranking(a.question.qid, cfg, limit) == a.paths)
    return {"checked": len(asked), "equal": equal}


# -- ablations and tuning -------------------------------------------------------------------
def ablation_configs(mmr_lambda: float = DEFAULT_MMR_LAMBDA) -> list[tuple[str, FusionConfig]]:
    """Each arm alone, fts+vector (plain RRF), all four (production), leave-one-out; +/- MMR."""
    zero = dict.fromkeys(ARMS, 0.0)
    base: list[tuple[str, dict[str, float]]] = [
        ("fts only (lexical)", {**zero, "fts": 1.0}),
        ("vector only", {**zero, "vector": 1.0}),
        ("recency only (over the fts+vector pool)", {**zero, "recency": 1.0}),
        ("salience only (over the fts+vector pool)", {**zero, "salience": 1.0}),
        ("fts+vector (plain RRF)", {**zero, "fts": 1.0, "vector": 1.0}),
        ("all four (production weights)", dict(DEFAULT_WEIGHTS)),
        ("production without recency", {**DEFAULT_WEIGHTS, "recency": 0.0}),
        ("production without fts", {**DEFAULT_WEIGHTS, "fts": 0.0}),
        ("production without vector", {**DEFAULT_WEIGHTS, "vector": 0.0}),
    ]
    out: list[tuple[str, FusionConfig]] = []
    for name, w in base:
        out.append((name, FusionConfig(w, DEFAULT_RRF_K, None)))
        out.append((f"{name} + MMR {mmr_lambda:g}", FusionConfig(w, DEFAULT_RRF_K, mmr_lambda)))
    return out


def replay_rows(
    cap: ArmCapture,
    asked: Sequence[Asked],
    configs: Sequence[tuple[str, FusionConfig]],
    score: Callable[[Asked, list[str]], dict[str, Any]],
    *,
    limit: int,
    group: Callable[[Asked], str] | None = None,
) -> list[dict[str, Any]]:
    """For each config: replayed rankings -> per-question rows -> means (overall and by group)."""
    table: list[dict[str, Any]] = []
    for name, cfg in configs:
        rows = []
        for a in asked:
            paths = cap.ranking(a.question.qid, cfg, limit)
            rows.append({"category": group(a) if group else "all", **score(a, paths)})
        summary = bm.summarize(rows)
        table.append(
            {
                "config": name,
                **cfg.to_data(),
                "overall": {m: v["mean"] for m, v in summary["overall"]["metrics"].items()},
                "groups": {
                    g: {m: v["mean"] for m, v in block["metrics"].items()}
                    for g, block in summary["groups"].items()
                },
                "n": summary["overall"]["n"],
            }
        )
    return table


def metric_by_name(name: str) -> Callable[[Sequence[str], Collection[str]], float]:
    """`mrr`, `recall@K`, `hit@K`, `any@K`, `all@K`, `ndcg@K` as metric(ranked, gold)."""
    if name == "mrr":
        return bm.reciprocal_rank
    kind, _, k = name.partition("@")
    fns: dict[str, Callable[..., float]] = {
        "recall": bm.recall_at_k,
        "hit": bm.hit_at_k,
        "any": bm.recall_any_at_k,
        "all": bm.recall_all_at_k,
        "ndcg": bm.ndcg_any_at_k,
    }
    if kind not in fns or not k.isdigit():
        raise SystemExit(f"unknown metric {name!r}: mrr, recall@K, hit@K, any@K, all@K, ndcg@K")
    return partial(fns[kind], k=int(k))


HARNESS_GRID: dict[str, tuple[float, ...]] = {
    "fts": (0.5, 1.0, 1.5, 2.0),
    "vector": (0.5, 1.0, 1.5, 2.0),
    "recency": (0.0, 0.25, 0.5, 1.0, 2.0),
    "salience": (DEFAULT_WEIGHTS["salience"],),
}


def tune(
    cap: ArmCapture,
    asked: Sequence[Asked],
    metric_name: str,
    *,
    limit: int,
    method: str,
    seed: int,
    held_out: float,
    grid: Mapping[str, Sequence[float]] | None = None,
    ks: Sequence[int] = (20, 60, 120),
) -> TuningReport:
    """Tune weights and k (no MMR during the search) on a seeded split of the questions.

    The harness grid leaves salience at its production weight: a benchmark
    corpus has no recorded access, so the salience arm is empty there.
    """
    grid = grid or HARNESS_GRID
    gold = {a.question.qid: a.gold_paths for a in asked if a.gold_paths}
    metric = metric_by_name(metric_name)
    if method == "coordinate":
        return coordinate_search(
            cap,
            gold,
            metric,
            metric_name=metric_name,
            grid=grid,
            ks=ks,
            limit=limit,
            held_out=held_out,
            seed=seed,
        )
    return grid_search(
        cap,
        gold,
        metric,
        metric_name=metric_name,
        grid=grid,
        ks=ks,
        limit=limit,
        held_out=held_out,
        seed=seed,
    )


def tune_and_evaluate(
    cap: ArmCapture,
    asked: Sequence[Asked],
    metric_name: str,
    score: Callable[[Asked, list[str]], dict[str, Any]],
    *,
    limit: int,
    args: argparse.Namespace,
    group: Callable[[Asked], str] | None = None,
) -> dict[str, Any]:
    """Tune on the train split; then every metric of production vs tuned on the held-out split."""
    from memhtml.analysis.tuning import split_queries

    rep = tune(
        cap,
        asked,
        metric_name,
        limit=limit,
        method=args.tune_method,
        seed=args.seed,
        held_out=args.held_out,
    )
    out = rep.to_data()
    out["lines"] = rep.lines()
    _, held = split_queries(
        [a.question.qid for a in asked if a.gold_paths], args.held_out, args.seed
    )
    held_set = set(held)
    best = rep.best.config
    configs = [
        ("production (MMR 0.7)", Settings(None, None, None).config()),
        ("tuned (no MMR)", best),
        (
            f"tuned + MMR {DEFAULT_MMR_LAMBDA:g}",
            FusionConfig(best.weights, best.k, DEFAULT_MMR_LAMBDA),
        ),
    ]
    out["held_out_metrics"] = replay_rows(
        cap,
        [a for a in asked if a.question.qid in held_set],
        configs,
        score,
        limit=limit,
        group=group,
    )
    return out


# -- output ------------------------------------------------------------------------------------
def result_paths(out_dir: Path, name: str, tag: str | None) -> tuple[Path, Path]:
    """(<name>[-<tag>].json, <name>[-<tag>].questions.parquet)."""
    stem = f"{name}-{tag}" if tag else name
    return out_dir / f"{stem}.json", out_dir / f"{stem}.questions.parquet"


def write_results(
    out_dir: Path,
    name: str,
    tag: str | None,
    payload: Mapping[str, Any],
    question_rows: Sequence[Mapping[str, Any]],
) -> tuple[Path, Path]:
    """The result JSON and the per-question Parquet (ids and numbers only: no benchmark text)."""
    import polars as pl

    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, parquet_path = result_paths(out_dir, name, tag)
    json_path.write_text(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")
    pl.DataFrame(list(question_rows), infer_schema_length=None).write_parquet(parquet_path)
    return json_path, parquet_path


def provenance(
    args: argparse.Namespace,
    data: Path,
    settings: Settings,
    embedder_model: str | None,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """What a result was measured with."""
    cfg = settings.config()
    return {
        "embedder": args.embedder,
        "embedder_model": embedder_model,
        "weights": dict(cfg.weights),
        "k": cfg.k,
        "mmr_lambda": cfg.mmr_lambda,
        "production_defaults": settings.weights is None
        and settings.k is None
        and settings.mmr_lambda is None,
        "memhtml": _STARTED.get("memhtml") or git_commit(),
        "dataset": {"path": str(data), "sha256": sha256_of(data)},
        "consolidate": getattr(args, "consolidate", None),
        "argv": sys.argv[1:],
        "machine": {"cpus": os.cpu_count(), "loadavg_at_start": list(os.getloadavg())},
        "executor": executor.describe() if executor else {"kind": "serial", "workers": 1},
    }


def pct(x: float | None) -> str:
    """0.5 -> '50.0'; None -> '-'."""
    return "-" if x is None else f"{100 * x:.1f}"


def print_table(title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A plain aligned table on stdout."""
    rows = [list(map(str, r)) for r in rows]
    widths = [
        max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h))
        for i, h in enumerate(header)
    ]
    print(f"\n{title}")
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def scopes(corpora: Sequence[BenchCorpus], limit: int | None) -> list[BenchCorpus]:
    """The first `limit` scopes (all when None)."""
    return list(corpora[:limit] if limit else corpora)


def embedder_model(embedder: str) -> str | None:
    """The vector space the named embedder writes (model id and dim: an endpoint's model
    and width, which a result must name to be reproduced)."""
    from memhtml.embed.registry import get_embedder

    try:
        found = get_embedder(embedder)
        return None if found is None else f"{found.model_id}@{found.dim}"
    except Exception:
        return None


# -- the run loop every harness shares ------------------------------------------------------
@dataclass
class Run:
    """What a harness run gathered over its scopes."""

    asked: list[Asked] = field(default_factory=list)
    captures: list[ArmCapture] = field(default_factory=list)
    docs_of: dict[str, list[str]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    deduped: int = 0

    def ids(self, paths: Sequence[str]) -> list[str]:
        """Ranked paths -> ranked doc ids, across every scope."""
        return [d for p in paths for d in self.docs_of.get(p, ())]


@dataclass(frozen=True)
class ScopeJob:
    """One scope's work, self-contained so that it runs the same here or on a Ray worker."""

    name: str
    slug: str
    tag: str | None
    corpus: BenchCorpus
    ops: Sequence[tuple[str, dict[str, Any]]]
    settings: Settings
    limit: int
    capture: bool
    embedder: str
    batch_size: int
    consolidate: str | None
    workdir: Path | None
    keep: bool


@dataclass
class ScopeResult:
    """What one scope gave back: its answers, capture, doc map and phase seconds."""

    tag: str | None
    asked: list[Asked]
    capture: ArmCapture | None
    docs_of: dict[str, list[str]]
    deduped: int
    seconds: dict[str, float]


def run_scope(job: ScopeJob) -> ScopeResult:
    """Ingest one scope into its own fresh repo and ask its questions (module level: Ray
    ships it by reference)."""
    with scope_root(job.workdir, f"{job.name}/{job.slug}", job.keep) as root:
        t0 = time.perf_counter()
        ing = ingest(
            job.corpus.scope_id,
            job.ops,
            root,
            embedder=job.embedder,
            batch_size=job.batch_size,
            consolidate=job.consolidate,
        )
        ingest_s = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()
            got, cap, cap_s = ask_all(
                ing, job.corpus.questions, job.settings, limit=job.limit, capture_arms=job.capture
            )
            search_s = time.perf_counter() - t0 - cap_s
        finally:
            ing.corpus.close()
    return ScopeResult(
        job.tag,
        got,
        cap,
        ing.docs_of,
        ing.deduped,
        {"ingest": ingest_s, "search": search_s, "capture": cap_s},
    )


def run_scopes(
    name: str,
    chosen: Sequence[BenchCorpus],
    ops_for: Callable[[BenchCorpus], Sequence[tuple[str, dict[str, Any]]]],
    args: argparse.Namespace,
    settings: Settings,
    *,
    limit: int,
    capture: bool,
    label: Callable[[BenchCorpus], str] | None = None,
    executor: Executor | None = None,
) -> Run:
    """Ingest each scope into its own repo and ask its questions (arms captured when asked).

    The scopes are independent tasks (`run_scope`) handed to `executor`: this
    process one after the other without ``--ray``, Ray workers with it; the
    results are merged in scope order either way. Timings are summed per
    phase (with Ray: the sum of the workers' seconds, not wall time), and
    also kept per scope label when `label` names the scopes (FactConsolidation
    reports each size).
    """
    from memhtml.analysis.fanout import Serial

    executor = executor or Serial()
    jobs = []
    for corpus in chosen:
        tag = label(corpus) if label else None
        jobs.append(
            ScopeJob(
                name=name,
                slug=(tag or corpus.scope_id).replace(":", "-").replace("/", "-"),
                tag=tag,
                corpus=corpus,
                ops=list(ops_for(corpus)),
                settings=settings,
                limit=limit,
                capture=capture,
                embedder=args.embedder,
                batch_size=args.batch_size,
                consolidate=getattr(args, "consolidate", None),
                workdir=args.workdir,
                keep=args.keep,
            )
        )
    results: dict[int, ScopeResult] = {}
    total = sum(len(c.docs) + len(c.questions) for c in chosen)
    with Progress(total, f"{name} ({executor.kind})") as bar:
        for i, res in executor.as_completed(run_scope, jobs):
            results[i] = res
            bar.advance(len(jobs[i].corpus.docs) + len(jobs[i].corpus.questions))
    run = Run(timings={"ingest_s": 0.0, "search_s": 0.0, "capture_s": 0.0})
    for i in range(len(jobs)):
        res = results[i]
        run.deduped += res.deduped
        run.docs_of.update(res.docs_of)
        for phase, seconds in res.seconds.items():
            run.timings[f"{phase}_s"] += seconds
            if res.tag:
                run.timings[f"{phase}_{res.tag}_s"] = seconds
        run.asked += res.asked
        if res.capture is not None:
            run.captures.append(res.capture)
    return run


# -- the executor (--ray) ------------------------------------------------------------------------
def add_cluster_flags(p: argparse.ArgumentParser) -> None:
    """`--ray [ADDRESS]` and `--workers N`: the fan-out of independent scopes / cells."""
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="fan the scopes out over Ray: a local cluster when no ADDRESS (auto, host:port,"
        " ray://host:10001 join a running one); needs memhtml[cluster]. Results equal the"
        " serial run's",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="CPUs of the local Ray cluster (default: this machine's CPU count)",
    )


def executor_for(args: argparse.Namespace) -> Executor:
    """Serial without --ray; a Ray cluster (the checkout on the workers' path) with it."""
    from memhtml.analysis.fanout import executor_for as make

    if args.workers is not None and args.workers < 1:
        raise SystemExit("--workers: give at least 1")
    return make(args.ray, workers=args.workers, pythonpath=[REPO_ROOT])
