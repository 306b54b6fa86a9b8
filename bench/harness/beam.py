"""BEAM 100K harness: message-id retrieval against source_chat_ids, retrieval only.

    python -m bench.harness.beam [--data .../beam/100K] [--embedder local|fake|openai]
        [--limit-conversations N] [--ablations] [--tune]

One fresh memory repo per conversation; one memory per chat message at
``areas/beam/<conv>/m<id:05d>.html`` (the message id is in the path), its
time (the batch's time anchor plus the message offset) as ``event_at``, the
role as a ``role:`` entity and the batch as a tag. The claim is the message's
first sentence (``"role: ..."``), the body the rest, paragraph by paragraph.
Every probing question with source ids is searched with
``Corpus.search(limit=50)``.

Metrics: any@k / all@k (k = 5, 10, 25, 50) against the flattened
``source_chat_ids``; contradiction resolution: both statements in the top 10
(and 50); knowledge update: ``updated_info`` ranks above ``original_info``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bench.harness import common as h
from memhtml.eval.benchmarks import load_beam
from memhtml.eval.benchmarks import metrics as bm
from memhtml.eval.benchmarks.records import Corpus as BenchCorpus
from memhtml.eval.benchmarks.records import Question

if TYPE_CHECKING:
    from memhtml.analysis.fanout import Executor

NAME = "beam"
FORMAT = "claim-body"
UNIT = "one chat message (claim = its first sentence, body = the rest)"
KS = (5, 10, 25, 50)
LIMIT = max(KS)
TUNE_METRIC = "any@10"
CLAIM_MAX = 280
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def doc_path(conv: str, msg_id: str) -> str:
    """Message 17 of conversation 3 -> ``areas/beam/3/m00017.html``."""
    return f"areas/beam/{conv}/m{int(msg_id):05d}.html"


def split_message(text: str) -> tuple[str, list[str]]:
    """(claim, body paragraphs): the first sentence (or a word-bounded head) and the rest.

    Nothing is dropped: the claim plus the body is the whole message text.
    """
    text = text.strip()
    first_par, _, rest = text.partition("\n")
    m = _SENTENCE_END.search(first_par)
    head = first_par[: m.start()] if m and m.start() <= CLAIM_MAX else first_par
    if len(head) > CLAIM_MAX:
        cut = head.rfind(" ", 0, CLAIM_MAX)
        head = head[: cut if cut > 0 else CLAIM_MAX]
    remainder = (first_par[len(head) :].strip() + "\n" + rest).strip()
    body = [p.strip() for p in re.split(r"\n\s*\n", remainder) if p.strip()]
    return head.strip() or text[:CLAIM_MAX], body


def to_ops(corpus: BenchCorpus) -> list[tuple[str, dict[str, Any]]]:
    """One write op per message, in conversation order."""
    ops: list[tuple[str, dict[str, Any]]] = []
    for d in corpus.docs:
        claim, body = split_message(d.text)
        role = d.speaker or "unknown"
        when = d.meta.get("anchor_date")
        op: dict[str, Any] = {
            "op": "write",
            "type": "episodic",
            "title": f"{role} message {d.doc_id}" + (f", {when}" if when else ""),
            "claim": claim,
            "body": body,
            "path": doc_path(corpus.scope_id, d.doc_id),
            "tag": ["beam", f"batch-{d.meta.get('batch', '0')}"],
            "entity": [f"role:{role}"],
        }
        if d.timestamp:
            op["event_at"] = d.timestamp
        ops.append((d.doc_id, op))
    return ops


def score(ranked_ids: Sequence[str], q: Question) -> dict[str, Any]:
    """any@k, all@k; both-in-top-k for contradictions; update-above-original for updates."""
    row: dict[str, Any] = {}
    for k in KS:
        row[f"any@{k}"] = bm.recall_any_at_k(ranked_ids, q.gold_ids, k)
        row[f"all@{k}"] = bm.recall_all_at_k(ranked_ids, q.gold_ids, k)
    row["mrr"] = bm.reciprocal_rank(ranked_ids, q.gold_ids)
    groups = q.meta.get("gold_groups") or {}
    row["both@10"] = row["both@50"] = None
    row["update_first"] = None
    a, b = groups.get("first_statement"), groups.get("second_statement")
    if q.category == "contradiction_resolution" and a and b:
        row["both@10"] = bm.both_in_top_k(ranked_ids, a, b, 10)
        row["both@50"] = bm.both_in_top_k(ranked_ids, a, b, 50)
    new, old = groups.get("updated_info"), groups.get("original_info")
    if q.category == "knowledge_update" and new is not None and old is not None:
        row["update_first"] = bm.ranked_before(ranked_ids, new, old)
    return row


METRICS = (
    *[f"any@{k}" for k in KS],
    *[f"all@{k}" for k in KS],
    "mrr",
    "both@10",
    "both@50",
    "update_first",
)


GROUP = "category"


def parser() -> argparse.ArgumentParser:
    return h.base_parser(NAME, "the BEAM 100K folder (default: <shared data>/beam/100K)")


def run(
    args: argparse.Namespace, executor: Executor | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The whole measurement (payload, per-question rows); nothing written or printed."""
    data = h.data_path(args.data, "beam", "100K")
    settings = h.Settings.from_args(args)
    names = None
    if args.limit_conversations:
        names = sorted((d.name for d in data.iterdir() if d.name.isdigit()), key=int)
        names = names[: args.limit_conversations]
    corpora, report = load_beam(data, conversations=names)
    chosen = list(corpora)
    capture = args.ablations or args.tune or args.save_capture is not None
    run = h.run_scopes(
        NAME, chosen, to_ops, args, settings, limit=LIMIT, capture=capture, executor=executor
    )
    asked, captures, timings, ids = run.asked, run.captures, run.timings, run.ids
    n_docs = sum(len(c.docs) for c in chosen)
    n_q = sum(len(c.questions) for c in chosen)

    rows: list[dict[str, Any]] = []
    for a in asked:
        q = a.question
        rows.append(
            {
                "qid": q.qid,
                "scope": a.scope_id,
                "category": q.category,
                "n_gold": len(q.gold_ids),
                **score(a.doc_ids, q),
                "latency_ms": a.ms,
                "degraded": a.degraded,
                "gold_ids": list(q.gold_ids),
                "top10": a.doc_ids[:10],
            }
        )
    summary = bm.summarize(rows, metrics=list(METRICS))
    payload: dict[str, Any] = {
        "benchmark": NAME,
        "format": FORMAT,
        "unit": UNIT,
        **h.provenance(args, data, settings, h.embedder_model(args.embedder), executor),
        "limit": LIMIT,
        "load_report": {
            "conversations": [c.scope_id for c in chosen],
            "messages": n_docs,
            "questions": n_q,
            "skipped": report.skip_reasons(),
            "malformed_ids": report.malformed_reasons(),
        },
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "summary": summary,
    }
    cap = h.merge_captures(captures)
    h.save_capture(args, cap, asked)
    if cap is not None:
        payload["replay_check"] = h.replay_check(cap, asked, settings, LIMIT)

        def score_asked(a: h.Asked, paths: Sequence[str]) -> dict[str, Any]:
            return score(ids(paths), a.question)

        group = lambda a: a.question.category  # noqa: E731
        if args.ablations:
            payload["ablations"] = h.replay_rows(
                cap, asked, h.ablation_configs(), score_asked, limit=LIMIT, group=group
            )
        if args.tune:
            payload["tuning"] = h.tune_and_evaluate(
                cap, asked, TUNE_METRIC, score_asked, limit=LIMIT, args=args, group=group
            )
    return payload, rows


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    with h.executor_for(args) as executor:
        payload, rows = run(args, executor)
    summary = payload["summary"]
    json_path, parquet_path = h.write_results(args.out_dir, NAME, args.tag, payload, rows)
    if not args.quiet:
        n_conv = len(payload["load_report"]["conversations"])
        print(f"BEAM 100K ({args.embedder}, {n_conv} conversations)")
        cats = [("overall", summary["overall"]), *summary["groups"].items()]
        h.print_table(
            "production run",
            ["category", "n", "any@5", "any@10", "all@10", "any@50", "both@10", "update_first"],
            [
                [
                    c,
                    b["n"],
                    *[
                        h.pct(b["metrics"][m]["mean"])
                        for m in ("any@5", "any@10", "all@10", "any@50", "both@10", "update_first")
                    ],
                ]
                for c, b in cats
            ],
        )
        if "ablations" in payload:
            h.print_table(
                "ablations (replayed from one capture)",
                ["config", "any@10", "all@10", "any@50", "both@10", "update_first"],
                [
                    [
                        t["config"],
                        *[
                            h.pct(t["overall"][m])
                            for m in ("any@10", "all@10", "any@50", "both@10", "update_first")
                        ],
                    ]
                    for t in payload["ablations"]
                ],
            )
        if "tuning" in payload:
            print("\n" + "\n".join(payload["tuning"]["lines"]))
        print(f"\nwrote {json_path} and {parquet_path}")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
