"""Retrieval levers measured on memory repos a harness kept (`--keep --workdir DIR`).

    python -m bench.harness.levers --locomo DIR/locomo-plain [--beam DIR/beam] [--tag TAG]

Opens each kept repository (LoCoMo: one per conversation, BEAM: one per
conversation), asks every question through the production `Corpus.search`
(limit 50), and scores the production ranking next to the same ranking with
one lever applied (everything else production). Levers:

- ``prf``: a second round: the query plus the words that >= 2 of the first
  round's top 5 claims share and the query lacks (memhtml.domain.expansion),
  fused with the first round by RRF (k 10, second round at weight w);
- ``prf-fts``: the same expanded query through the fts arm alone (no second
  embedding; in memory in a process that searches again);
- ``entities``: the same second round seeded with the entity names the top 5
  hits carry (the corpus's own entities) instead of their words;
- ``temporal``: the query's time expression (memhtml.domain.temporal; the
  anchor is the newest event in the scope: LoCoMo and BEAM give no question
  date) as an extra RRF list of the candidates inside the interval;
- ``topic-recency``: newest first among same-topic hits (complete-link
  cosine >= floor in the top 20; memhtml.domain.topic_recency).

Each row reports the metric, the questions it changed and its cost (the
lever's extra milliseconds per question, mean over every question). Writes
``bench/results/levers[-TAG].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.harness import beam as beam_h
from bench.harness import common as h
from bench.harness import locomo as locomo_h
from memhtml.domain import expansion, temporal, topic_recency
from memhtml.eval.benchmarks import load_beam, load_locomo
from memhtml.eval.benchmarks import metrics as bm

if TYPE_CHECKING:
    from memhtml.analysis.fanout import Executor

LIMIT = 50
TOP_FEEDBACK = 5
RRF_K = 10


def locomo_id(path: str) -> str:
    stem = path.rsplit("/", 1)[-1].removesuffix(".html")
    return stem.upper().replace("-", ":")


def beam_id(path: str) -> str:
    return str(int(path.rsplit("/", 1)[-1].removesuffix(".html").lstrip("m") or "0"))


def _day(value: str | None) -> date | None:
    return date.fromisoformat(value[:10]) if value else None


Scorer = Callable[[Sequence[str], Any], dict[str, Any]]


def _variants(
    corpus: Any, question: str, anchor: date | None, only: frozenset[str] | None = None
) -> dict[str, tuple[list[str], float]]:
    """Each lever's ranking (paths) and its extra milliseconds for one question
    (`only`: the lever names to compute, production always)."""
    from memhtml.index.arms import fts_arm
    from memhtml.index.retrieval import STOPWORDS, resolve_weights
    from memhtml.index.scope import Scope
    from memhtml.ops.query import _content_vectors

    def wanted(name: str) -> bool:
        return only is None or name in only

    out: dict[str, tuple[list[str], float]] = {}
    t0 = time.perf_counter()
    res = corpus.search(question, limit=LIMIT)
    base_ms = (time.perf_counter() - t0) * 1000
    base = [hit.path for hit in res.hits]
    out["production"] = (base, base_ms)
    top = res.hits[:TOP_FEEDBACK]

    t0 = time.perf_counter()
    terms = expansion.feedback_terms(question, [x.gist for x in top], stopwords=STOPWORDS)
    terms_ms = (time.perf_counter() - t0) * 1000
    if wanted("prf"):
        t0 = time.perf_counter()
        second: list[str] = []
        if terms:
            q2 = expansion.expanded_query(question, terms)
            second = [x.path for x in corpus.search(q2, limit=LIMIT).hits]
        prf_ms = terms_ms + (time.perf_counter() - t0) * 1000
        for w in (0.5, 1.0):
            ranked = expansion.merge_rounds(base, second, k=RRF_K, second_weight=w)[:LIMIT]
            out[f"prf w={w:g}"] = (ranked, prf_ms)
    if wanted("prf-fts"):
        # The same expanded query through the fts arm alone (in memory in a warm process).
        t0 = time.perf_counter()
        lexical: list[str] = []
        if terms:
            q2 = expansion.expanded_query(question, terms)
            lexical = fts_arm(
                corpus.conn, q2, Scope(), resolve_weights(None), LIMIT,
                postings=corpus.fts_postings,
            ) or []  # fmt: skip
        fts_ms = terms_ms + (time.perf_counter() - t0) * 1000
        for w in (0.5, 1.0):
            ranked = expansion.merge_rounds(base, lexical, k=RRF_K, second_weight=w)[:LIMIT]
            out[f"prf-fts w={w:g}"] = (ranked, fts_ms)
    if only is not None:
        return out

    t0 = time.perf_counter()
    names = expansion.entity_terms(question, [x.entities for x in top])
    second = []
    if names:
        second = [
            x.path
            for x in corpus.search(expansion.expanded_query(question, names), limit=LIMIT).hits
        ]
    ent_ms = (time.perf_counter() - t0) * 1000
    out["entities w=0.5"] = (
        expansion.merge_rounds(base, second, k=RRF_K, second_weight=0.5)[:LIMIT],
        ent_ms,
    )

    t0 = time.perf_counter()
    interval = temporal.resolve(question, anchor)
    ranked = base
    if interval is not None:
        days = {x.path: _day(x.event_at) for x in res.hits}
        inside = temporal.in_interval_order(base, days, interval)
        ranked = expansion.merge_rounds(base, inside, k=RRF_K, second_weight=1.0)[:LIMIT]
    out["temporal w=1"] = (ranked, (time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    by_hash = _content_vectors(corpus, [x.content_hash for x in res.hits])
    vectors = {x.path: by_hash[x.content_hash] for x in res.hits if x.content_hash in by_hash}
    times = {x.path: x.event_at or x.updated_at for x in res.hits}
    vec_ms = (time.perf_counter() - t0) * 1000
    for floor in (0.6, 0.7, 0.8):
        t1 = time.perf_counter()
        ranked = topic_recency.newer_first(base, vectors, times, floor=floor)
        out[f"topic-recency floor={floor:g}"] = (
            ranked,
            vec_ms + (time.perf_counter() - t1) * 1000,
        )
    return out


def _scope_anchor(corpus: Any) -> date | None:
    row = corpus.conn.execute("SELECT max(event_at) FROM files").fetchone()
    return _day(row[0]) if row and row[0] else None


@dataclass(frozen=True)
class LeverJob:
    """One kept scope's lever run (module-level function and picklable parts: `--ray`)."""

    root: Path
    corpus: Any  # memhtml.eval.benchmarks.records.Corpus
    to_id: Callable[[str], str]
    scorer: Callable[[Sequence[str], Any], dict[str, Any]]
    group: Callable[[Any], str]
    only: frozenset[str] | None
    embedder: str = "local"


def lever_scope(job: LeverJob) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[float]]]:
    """Every lever over one kept repo: per config, its question rows and milliseconds."""
    import memhtml

    rows: dict[str, list[dict[str, Any]]] = {}
    ms: dict[str, list[float]] = {}
    corpus = memhtml.open(job.root, embedder=job.embedder, now=h.FIXED_NOW)
    try:
        corpus.watch_tree()
        anchor = _scope_anchor(corpus)
        for q in job.corpus.questions:
            got = _variants(corpus, q.text, anchor, job.only)
            for cfg, (paths, cost) in got.items():
                row = {
                    "qid": q.qid,
                    "category": job.group(q),
                    **job.scorer([job.to_id(p) for p in paths], q),
                }
                rows.setdefault(cfg, []).append(row)
                ms.setdefault(cfg, []).append(cost)
    finally:
        corpus.close()
    return rows, ms


def run_benchmark(
    name: str,
    repos: Path,
    corpora: Sequence[Any],
    to_id: Callable[[str], str],
    scorer: Callable[[Sequence[str], Any], dict[str, Any]],
    group: Callable[[Any], str],
    headline: Sequence[str] | None = None,
    only: frozenset[str] | None = None,
    executor: Executor | None = None,
    embedder: str = "local",
) -> dict[str, Any]:
    """Every lever over every kept scope; `headline` names the groups of a headline mean.

    Each kept scope is one task for `executor` (serial without ``--ray``); the
    answers are merged in scope order, so the table is the same either way
    (the milliseconds are each worker's own).
    """
    from memhtml.analysis.fanout import Serial

    jobs: list[LeverJob] = []
    scopes: list[str] = []
    for c in corpora:
        root = repos / c.scope_id.replace(":", "-").replace("/", "-")
        if not (root / ".git").exists():
            continue
        scopes.append(c.scope_id)
        jobs.append(LeverJob(root, c, to_id, scorer, group, only, embedder))
    per_config: dict[str, list[dict[str, Any]]] = {}
    ms: dict[str, list[float]] = {}
    for rows, costs in (executor or Serial()).map(lever_scope, jobs):
        for cfg, part in rows.items():
            per_config.setdefault(cfg, []).extend(part)
            ms.setdefault(cfg, []).extend(costs[cfg])
    table = []
    base_rows = {r["qid"]: r for r in per_config.get("production", [])}
    for cfg, rows in per_config.items():
        summary = bm.summarize(rows)
        changed = sum(
            1
            for r in rows
            if any(r[m] != base_rows[r["qid"]][m] for m in r if m not in ("qid", "category"))
        )
        table.append(
            {
                "config": cfg,
                "n": summary["overall"]["n"],
                "changed_questions": changed,
                "ms_per_query": round(sum(ms[cfg]) / max(len(ms[cfg]), 1), 2),
                "overall": {m: v["mean"] for m, v in summary["overall"]["metrics"].items()},
                "groups": {
                    g: {"n": b["n"], **{m: v["mean"] for m, v in b["metrics"].items()}}
                    for g, b in summary["groups"].items()
                },
            }
        )
        if headline is not None:
            head = bm.summarize([r for r in rows if r["category"] in headline])
            table[-1]["headline"] = {
                m: v["mean"] for m, v in head["overall"]["metrics"].items()
            } | {"n": head["overall"]["n"]}
    return {"benchmark": name, "scopes": scopes, "rows": table}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.harness.levers", description=__doc__)
    p.add_argument("--locomo", type=Path, default=None, help="kept LoCoMo repos (one per conv)")
    p.add_argument("--beam", type=Path, default=None, help="kept BEAM repos (one per conv)")
    p.add_argument("--data-root", type=Path, default=None, help="benchmark data root")
    p.add_argument("--tag", default=None)
    p.add_argument(
        "--only",
        nargs="+",
        choices=("prf", "prf-fts"),
        default=None,
        help="run only these PRF levers (and production); default: every lever",
    )
    p.add_argument("--out-dir", type=Path, default=h.RESULTS_DIR)
    p.add_argument(
        "--embedder",
        default="local",
        choices=("local", "fake"),
        help="the embedder the kept repos were written with (default local)",
    )
    h.add_cluster_flags(p)
    args = p.parse_args(argv)
    with h.executor_for(args) as executor:
        return _main(args, executor)


def _main(args: argparse.Namespace, executor: Executor) -> dict[str, Any]:
    only = frozenset(args.only) if args.only else None
    started = {"memhtml": h.git_commit(), "loadavg_at_start": list(os.getloadavg())}
    out: dict[str, Any] = {
        "benchmark": "levers",
        **started,
        "executor": executor.describe(),
        "results": [],
    }
    if args.locomo:
        data = h.data_path(
            args.data_root / "locomo" / "locomo10.json" if args.data_root else None,
            "locomo",
            "locomo10.json",
        )
        corpora, _ = load_locomo(data)
        kept = [c for c in corpora if c.scope_id]
        res = run_benchmark(
            "locomo-plain",
            args.locomo,
            kept,
            locomo_id,
            lambda ids, q: locomo_h.score(ids, q.gold_ids),
            lambda q: q.category,
            headline=locomo_h.HEADLINE,
            only=only,
            executor=executor,
            embedder=args.embedder,
        )
        res["unit"] = locomo_h.UNITS["plain"]
        out["results"].append(res)
    if args.beam:
        data = h.data_path(
            args.data_root / "beam" / "100K" if args.data_root else None, "beam", "100K"
        )
        corpora, _ = load_beam(data)
        res = run_benchmark(
            "beam",
            args.beam,
            corpora,
            beam_id,
            beam_h.score,
            lambda q: q.category,
            only=only,
            executor=executor,
            embedder=args.embedder,
        )
        res["unit"] = beam_h.UNIT
        out["results"].append(res)
    out["loadavg_at_end"] = list(os.getloadavg())
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / (f"levers-{args.tag}.json" if args.tag else "levers.json")
    path.write_text(json.dumps(out, indent=2, default=str) + "\n")
    for res in out["results"]:
        metrics = (
            ("recall@10", "recall@25")
            if res["benchmark"].startswith("locomo")
            else ("any@10", "all@10", "both@10", "update_first")
        )
        print(f"\n{res['benchmark']} ({len(res['scopes'])} scopes: {', '.join(res['scopes'])})")
        cats = sorted({g for r in res["rows"] for g in r["groups"]})
        h.print_table(
            "levers",
            ["config", "n", "changed", "ms/q", *metrics, *[f"{c[:12]} {metrics[0]}" for c in cats]],
            [
                [
                    r["config"],
                    r["n"],
                    r["changed_questions"],
                    r["ms_per_query"],
                    *[h.pct(r.get("headline", r["overall"]).get(m)) for m in metrics],
                    *[h.pct(r["groups"].get(c, {}).get(metrics[0])) for c in cats],
                ]
                for r in res["rows"]
            ],
        )
    print(f"\nwrote {path}")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
