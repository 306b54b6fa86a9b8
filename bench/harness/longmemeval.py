"""LongMemEval harness (S / M / oracle files), retrieval only.

    python -m bench.harness.longmemeval --data longmemeval_s.json [--embedder local|fake|openai]
        [--roles user|user,assistant] [--limit-conversations N]

The data is not available on these machines (it is distributed through a
model hub); this harness is exercised on the small sample under
memhtml/eval/benchmarks/samples/ and is ready for the real file.

One fresh memory repo per question (its haystack only); one memory per turn
at ``areas/longmemeval/<question>/s<session:03d>-t<turn:03d>.html`` (session
index in the haystack and 1-based turn number: the loader's turn id
``<session_id>#<turn>`` is recoverable from the haystack order), the session
date plus turn offset as ``event_at``. Metrics per LongMemEval
(``src/retrieval/eval_utils.py``): recall_any@k, recall_all@k and ndcg_any@k
at k = 1, 3, 5, 10, 30, 50, at turn level (gold: ``has_answer`` turns) and
session level (the turn ranking collapsed to sessions, gold:
``answer_session_ids``); abstention questions are skipped by the loader.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bench.harness import common as h
from memhtml.eval.benchmarks import load_longmemeval
from memhtml.eval.benchmarks import metrics as bm
from memhtml.eval.benchmarks.records import Corpus as BenchCorpus
from memhtml.eval.benchmarks.records import Question

if TYPE_CHECKING:
    from memhtml.analysis.fanout import Executor

NAME = "longmemeval"
FORMAT = "turn"
UNIT = "one session turn"
KS = (1, 3, 5, 10, 30, 50)
LIMIT = max(KS)
TUNE_METRIC = "any@5"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "q"


def to_ops(corpus: BenchCorpus) -> list[tuple[str, dict[str, Any]]]:
    """One write op per loaded turn."""
    order: dict[str, int] = {}
    ops: list[tuple[str, dict[str, Any]]] = []
    for d in corpus.docs:
        session = d.session_id or "session"
        si = order.setdefault(session, len(order))
        turn = int(d.doc_id.rpartition("#")[2])
        claim = d.text.strip().split("\n", 1)[0][:280].strip() or d.text[:280]
        rest = d.text.strip()[len(claim) :].strip()
        op: dict[str, Any] = {
            "op": "write",
            "type": "episodic",
            "title": f"{d.speaker or 'turn'} in session {si + 1}",
            "claim": claim,
            "body": [p for p in re.split(r"\n\s*\n", rest) if p.strip()],
            "path": f"areas/longmemeval/{_slug(corpus.scope_id)}/s{si:03d}-t{turn:03d}.html",
            "tag": ["longmemeval"],
        }
        if d.timestamp:
            op["event_at"] = d.timestamp
        ops.append((d.doc_id, op))
    return ops


def score(ranked_turns: Sequence[str], q: Question) -> dict[str, Any]:
    """Turn-level and session-level recall_any / recall_all / ndcg_any at every k."""
    sessions = bm.sessions_from_turns(ranked_turns)
    gold_sessions = q.meta.get("gold_session_ids") or ()
    row: dict[str, Any] = {}
    for k in KS:
        row[f"turn_any@{k}"] = bm.recall_any_at_k(ranked_turns, q.gold_ids, k)
        row[f"turn_all@{k}"] = bm.recall_all_at_k(ranked_turns, q.gold_ids, k)
        row[f"turn_ndcg@{k}"] = bm.ndcg_any_at_k(ranked_turns, q.gold_ids, k)
        if gold_sessions:
            row[f"session_any@{k}"] = bm.recall_any_at_k(sessions, gold_sessions, k)
            row[f"session_all@{k}"] = bm.recall_all_at_k(sessions, gold_sessions, k)
            row[f"session_ndcg@{k}"] = bm.ndcg_any_at_k(sessions, gold_sessions, k)
        else:
            row[f"session_any@{k}"] = row[f"session_all@{k}"] = row[f"session_ndcg@{k}"] = None
    return row


METRICS = tuple(
    f"{level}_{kind}@{k}"
    for level in ("turn", "session")
    for kind in ("any", "all", "ndcg")
    for k in KS
)
GROUP = "category"


def parser() -> argparse.ArgumentParser:
    p = h.base_parser(NAME, "longmemeval_{s,m,oracle}.json (required: not shipped here)")
    p.add_argument("--roles", default="user,assistant", help="roles to ingest (default both)")
    return p


def run(
    args: argparse.Namespace, executor: Executor | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The whole measurement (payload, per-question rows); nothing written or printed."""
    if args.data is None:
        raise SystemExit(
            "LongMemEval is not available on these machines: pass --data longmemeval_s.json"
        )
    data = h.data_path(args.data)
    settings = h.Settings.from_args(args)
    roles = tuple(r.strip() for r in args.roles.split(",") if r.strip())
    corpora, report = load_longmemeval(data, roles=roles)
    chosen = h.scopes(corpora, args.limit_conversations)
    capture = args.ablations or args.tune or args.save_capture is not None
    run = h.run_scopes(
        NAME,
        chosen,
        to_ops,
        args,
        settings,
        limit=LIMIT,
        capture=capture,
        label=lambda c: _slug(c.scope_id),
        executor=executor,
    )
    asked, captures, timings, ids = run.asked, run.captures, run.timings, run.ids
    n_docs = sum(len(c.docs) for c in chosen)
    n_q = sum(len(c.questions) for c in chosen)

    rows = [
        {
            "qid": a.question.qid,
            "category": a.question.category,
            "n_gold_turns": len(a.question.gold_ids),
            **score(a.doc_ids, a.question),
            "latency_ms": a.ms,
            "degraded": a.degraded,
        }
        for a in asked
    ]
    metric_names = [k for k in (rows[0] if rows else {}) if "@" in k]
    summary = bm.summarize(rows, metrics=metric_names)
    payload: dict[str, Any] = {
        "benchmark": NAME,
        "format": FORMAT,
        "unit": UNIT,
        **h.provenance(args, data, settings, h.embedder_model(args.embedder), executor),
        "limit": LIMIT,
        "roles": list(roles),
        "load_report": {
            "questions": n_q,
            "turns": n_docs,
            "skipped": report.skip_reasons(),
            "malformed_ids": report.malformed_reasons(),
        },
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "summary": summary,
        "published": {
            "LongMemEval paper, session level, LongMemEval_M, Stella V5, K = V + fact": {
                "recall@5": 0.732,
                "recall@10": 0.862,
            }
        },
    }
    cap = h.merge_captures(captures)
    h.save_capture(args, cap, asked)
    if cap is not None:
        payload["replay_check"] = h.replay_check(cap, asked, settings, LIMIT)

        def score_asked(a: h.Asked, paths: Sequence[str]) -> dict[str, Any]:
            return score(ids(paths), a.question)

        if args.ablations:
            payload["ablations"] = h.replay_rows(
                cap, asked, h.ablation_configs(), score_asked, limit=LIMIT
            )
        if args.tune:
            payload["tuning"] = h.tune_and_evaluate(
                cap, asked, TUNE_METRIC, score_asked, limit=LIMIT, args=args
            )
    return payload, rows


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    with h.executor_for(args) as executor:
        payload, rows = run(args, executor)
    summary = payload["summary"]
    n_q = payload["load_report"]["questions"]
    json_path, parquet_path = h.write_results(args.out_dir, NAME, args.tag, payload, rows)
    if not args.quiet:
        o = summary["overall"]["metrics"]
        print(f"LongMemEval ({args.embedder}, {n_q} questions)")
        h.print_table(
            "production run",
            ["level", *[f"any@{k}" for k in KS]],
            [
                [lvl, *[h.pct(o[f"{lvl}_any@{k}"]["mean"]) for k in KS]]
                for lvl in ("turn", "session")
            ],
        )
        print(f"\nwrote {json_path} and {parquet_path}")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
