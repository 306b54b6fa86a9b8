"""LoCoMo retrieval harness: evidence recall@k per official category, retrieval only.

    python -m bench.harness.locomo [--data locomo10.json] [--embedder local|fake]
        [--format plain|dated|context] [--ablations] [--tune] [--tag TAG]

One fresh memory repo per conversation; one memory per dialog turn at
``areas/locomo/<sample_id>/<d3-5>.html`` (the dia_id ``D3:5`` is recoverable
from the path), its session time as ``event_at``, the speaker as a
``person:`` entity and the session as a tag. Every question is searched with
``Corpus.search(limit=50)`` against its own conversation; recall@k is the
fraction of its evidence dia_ids among the top k turns (k = 5, 10, 25, 50).
The headline is categories 1-4 (n = 1,535, comparable to the published
baselines); adversarial (5) is reported separately.

Ingest formats (the memory text; `--format`):

- ``plain``: claim = ``"Speaker: text"`` (+ the image caption the loader adds);
- ``dated``: the session date in words before it, ``"[8 May 2023] Speaker: text"``;
- ``context``: ``dated`` plus the previous turn of the same session as a body
  paragraph (``"Previous turn — Speaker: text"``), so a reply carries what it answers.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import date
from typing import Any

from bench.harness import common as h
from memhtml.eval.benchmarks import load_locomo
from memhtml.eval.benchmarks import metrics as bm
from memhtml.eval.benchmarks.records import Corpus as BenchCorpus
from memhtml.eval.benchmarks.records import Doc

NAME = "locomo"
KS = (5, 10, 25, 50)
LIMIT = max(KS)
FORMATS = ("plain", "dated", "context")
DEFAULT_FORMAT = "context"
HEADLINE = ("multi-hop", "temporal", "open-domain", "single-hop")
CATEGORY_ORDER = (*HEADLINE, "adversarial")
TUNE_METRIC = "recall@10"


def doc_path(sample_id: str, doc_id: str) -> str:
    """``D3:5`` of ``conv-26`` -> ``areas/locomo/conv-26/d3-5.html``."""
    return f"areas/locomo/{sample_id.lower()}/{doc_id.lower().replace(':', '-')}.html"


def _human_date(iso: str | None) -> str | None:
    if not iso:
        return None
    d = date.fromisoformat(iso[:10])
    return f"{d.day} {d.strftime('%B')} {d.year}"


def to_ops(corpus: BenchCorpus, fmt: str) -> list[tuple[str, dict[str, Any]]]:
    """One write op per turn, in conversation order."""
    ops: list[tuple[str, dict[str, Any]]] = []
    previous: Doc | None = None
    for doc in corpus.docs:
        session = doc.session_id or "session"
        when = _human_date(doc.meta.get("session_date"))
        claim = doc.text
        if fmt in ("dated", "context") and when:
            claim = f"[{when}] {claim}"
        body: list[str] = []
        if fmt == "context" and previous is not None and previous.session_id == doc.session_id:
            body.append(f"Previous turn — {previous.text}")
        speaker = doc.speaker or "unknown"
        op: dict[str, Any] = {
            "op": "write",
            "type": "episodic",
            "title": f"{speaker}, {session.replace('_', ' ')}" + (f", {when}" if when else ""),
            "claim": claim,
            "body": body,
            "path": doc_path(corpus.scope_id, doc.doc_id),
            "tag": ["locomo", session.replace("_", "-")],
            "entity": [f"person:{speaker}"],
        }
        if doc.timestamp:
            op["event_at"] = doc.timestamp
        ops.append((doc.doc_id, op))
        previous = doc
    return ops


def score(ranked_ids: Sequence[str], gold: Sequence[str]) -> dict[str, Any]:
    """recall@k for each k, and the rank of the first evidence turn."""
    row: dict[str, Any] = {f"recall@{k}": bm.recall_at_k(ranked_ids, gold, k) for k in KS}
    row["first_rank"] = bm.rank_of(ranked_ids, gold)
    row["mrr"] = bm.reciprocal_rank(ranked_ids, gold)
    return row


def summarize_rows(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means per category, the 1-4 headline, and everything (1-5)."""
    metrics = [f"recall@{k}" for k in KS] + ["mrr"]
    headline = [r for r in rows if r["category"] in HEADLINE]
    return {
        "headline_categories_1_4": bm.summarize(headline, metrics=metrics),
        "all_categories": bm.summarize(rows, metrics=metrics),
    }


def _table(summary: dict[str, Any]) -> list[list[str]]:
    head = summary["headline_categories_1_4"]
    allc = summary["all_categories"]
    lines = [
        ["overall 1-4", str(head["overall"]["n"])]
        + [h.pct(head["overall"]["metrics"][f"recall@{k}"]["mean"]) for k in KS]
    ]
    for cat in CATEGORY_ORDER:
        block = allc["groups"].get(cat)
        if block:
            lines.append(
                [cat, str(block["n"])]
                + [h.pct(block["metrics"][f"recall@{k}"]["mean"]) for k in KS]
            )
    return lines


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = h.base_parser(NAME, "locomo10.json (default: <shared data>/locomo/locomo10.json)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=DEFAULT_FORMAT,
        help=f"memory text format (default {DEFAULT_FORMAT})",
    )
    args = p.parse_args(argv)
    data = h.data_path(args.data, "locomo", "locomo10.json")
    settings = h.Settings.from_args(args)
    corpora, report = load_locomo(data)
    chosen = h.scopes(corpora, args.limit_conversations)
    capture = args.ablations or args.tune or args.save_capture is not None
    run = h.run_scopes(
        NAME, chosen, lambda c: to_ops(c, args.format), args, settings, limit=LIMIT, capture=capture
    )
    asked, captures, timings, ids = run.asked, run.captures, run.timings, run.ids
    n_docs = sum(len(c.docs) for c in chosen)
    n_q = sum(len(c.questions) for c in chosen)
    deduped = run.deduped

    rows: list[dict[str, Any]] = []
    for a in asked:
        q = a.question
        rows.append(
            {
                "qid": q.qid,
                "scope": a.scope_id,
                "category": q.category,
                "category_num": q.meta.get("category_num"),
                "n_gold": len(q.gold_ids),
                **score(a.doc_ids, q.gold_ids),
                "latency_ms": a.ms,
                "degraded": a.degraded,
                "gold_ids": list(q.gold_ids),
                "top10": a.doc_ids[:10],
            }
        )
    summary = summarize_rows(rows)
    payload: dict[str, Any] = {
        "benchmark": NAME,
        **h.provenance(args, data, settings, h.embedder_model(args.embedder)),
        "format": args.format,
        "limit": LIMIT,
        "ks": list(KS),
        "load_report": {
            "conversations": len(chosen),
            "turns": n_docs,
            "questions": n_q,
            "skipped": report.skip_reasons(),
            "malformed_ids": report.malformed_reasons(),
            "deduped_turns": deduped,
        },
        "timings": {
            **{k: round(v, 2) for k, v in timings.items()},
            "search_ms_mean": round(sum(a.ms for a in asked) / max(len(asked), 1), 2),
        },
        "summary": summary,
        "published": {
            "DRAGON (LoCoMo paper, Table 3)": {
                "recall@5": 56.7,
                "recall@10": 66.2,
                "recall@25": 76.7,
                "recall@50": 82.7,
            },
            "RRF(BM25, MiniLM) baseline (shared/data/README)": {
                "recall@5": 47.8,
                "recall@10": 58.8,
                "recall@25": 71.5,
                "recall@50": 80.1,
            },
            "RRF, session date prefixed (shared/data/README)": {
                "recall@5": 51.5,
                "recall@10": 62.0,
                "recall@25": 74.3,
                "recall@50": 81.2,
            },
        },
    }
    cap = h.merge_captures(captures)
    h.save_capture(args, cap, asked)
    if cap is not None:
        payload["replay_check"] = h.replay_check(cap, asked, settings, LIMIT)
        headline_asked = [a for a in asked if a.question.category in HEADLINE]
        if args.ablations:
            payload["ablations"] = h.replay_rows(
                cap,
                headline_asked,
                h.ablation_configs(),
                lambda a, paths: score(ids(paths), a.question.gold_ids),
                limit=LIMIT,
                group=lambda a: a.question.category,
            )
        if args.tune:
            payload["tuning"] = h.tune_and_evaluate(
                cap,
                headline_asked,
                TUNE_METRIC,
                lambda a, paths: score(ids(paths), a.question.gold_ids),
                limit=LIMIT,
                args=args,
                group=lambda a: a.question.category,
            )
    json_path, parquet_path = h.write_results(args.out_dir, NAME, args.tag, payload, rows)
    if not args.quiet:
        print(
            f"LoCoMo evidence recall@k ({args.embedder}, format {args.format},"
            f" {payload['load_report']['conversations']} conversations)"
        )
        h.print_table("production run", ["category", "n", *[f"R@{k}" for k in KS]], _table(summary))
        if "ablations" in payload:
            h.print_table(
                "ablations (replayed from one capture; categories 1-4)",
                ["config", *[f"R@{k}" for k in KS]],
                [
                    [t["config"], *[h.pct(t["overall"][f"recall@{k}"]) for k in KS]]
                    for t in payload["ablations"]
                ],
            )
        if "tuning" in payload:
            print("\n" + "\n".join(payload["tuning"]["lines"]))
        print(f"\nwrote {json_path} and {parquet_path}")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
