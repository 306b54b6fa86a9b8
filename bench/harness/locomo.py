"""LoCoMo retrieval harness: evidence recall@k per official category, retrieval only.

    python -m bench.harness.locomo [--data locomo10.json] [--embedder local|fake|openai]
        [--format plain,bare,context] [--ablations] [--tune] [--tag TAG]

One fresh memory repo per conversation; one memory per dialog turn at
``areas/locomo/<sample_id>/<d3-5>.html`` (the dia_id ``D3:5`` is recoverable
from the path), its session time as ``event_at``, the speaker as a
``person:`` entity and the session as a tag. Every question is searched with
``Corpus.search(limit=50)`` against its own conversation; recall@k is the
fraction of its evidence dia_ids among the top k turns (k = 5, 10, 25, 50).
The headline is categories 1-4 (n = 1,535, comparable to the published
baselines); adversarial (5) is reported separately.

Ingest formats (the memory text; `--format`, a comma list run in one command
into one table; the first format listed that is ``plain``, else the first, is
the headline and gets the ablations, tuning and capture):

- ``bare``: exactly the published baselines' unit: claim = ``"Speaker: text"``
  (+ the image caption the loader adds), title = the dia_id, no event time, no
  entity, no session tag (only ``locomo``);
- ``plain``: the same single turn as a memory is written in production: claim
  ``"Speaker: text"``, title ``"Speaker, session N, 8 May 2023"``, the session
  time as ``event_at``, ``person:Speaker``, the session tag;
- ``dated``: ``plain`` with the session date in words before the claim,
  ``"[8 May 2023] Speaker: text"``;
- ``context``: a WINDOWED unit, not a single turn: ``dated`` plus the previous
  turn of the same session as a body paragraph (``"Previous turn — Speaker:
  text"``), so a reply carries what it answers. Not comparable with the
  turn-level references.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from bench.harness import common as h
from memhtml.eval.benchmarks import load_locomo
from memhtml.eval.benchmarks import metrics as bm
from memhtml.eval.benchmarks.records import Corpus as BenchCorpus
from memhtml.eval.benchmarks.records import Doc

if TYPE_CHECKING:
    from memhtml.analysis.fanout import Executor

NAME = "locomo"
KS = (5, 10, 25, 50)
LIMIT = max(KS)
FORMATS = ("bare", "plain", "dated", "context")
DEFAULT_FORMATS = ("plain", "bare", "context")
HEADLINE_FORMAT = "plain"
UNITS: dict[str, str] = {
    "bare": "one dialog turn, the baselines' unit ('Speaker: text'; title = dia_id; no event time)",
    "plain": "one dialog turn ('Speaker: text'; title speaker, session, date; event time)",
    "dated": "one dialog turn, the session date in words before the claim",
    "context": "windowed: one dialog turn plus the previous turn of its session (dated)",
}
# Published figures that retrieve the same unit (single dialog turns): only these are
# compared with a turn-level format; `context` has no same-unit reference.
TURN_LEVEL_FORMATS = ("bare", "plain", "dated")
HEADLINE = ("multi-hop", "temporal", "open-domain", "single-hop")
CATEGORY_ORDER = (*HEADLINE, "adversarial")
TUNE_METRIC = "recall@10"
# What a campaign compares (memhtml.analysis.campaign): the per-question means, by category.
METRICS = (*[f"recall@{k}" for k in KS], "mrr")
GROUP = "category"


def doc_path(sample_id: str, doc_id: str) -> str:
    """``D3:5`` of ``conv-26`` -> ``areas/locomo/conv-26/d3-5.html``."""
    return f"areas/locomo/{sample_id.lower()}/{doc_id.lower().replace(':', '-')}.html"


def _human_date(iso: str | None) -> str | None:
    if not iso:
        return None
    d = date.fromisoformat(iso[:10])
    return f"{d.day} {d.strftime('%B')} {d.year}"


def parse_formats(text: str) -> tuple[str, ...]:
    """`plain,bare,context` -> the formats in order, each once; SystemExit on an unknown one."""
    out: list[str] = []
    for raw in text.split(","):
        name = raw.strip()
        if not name:
            continue
        if name not in FORMATS:
            raise SystemExit(f"--format: unknown format {name!r} (one of {', '.join(FORMATS)})")
        if name not in out:
            out.append(name)
    if not out:
        raise SystemExit("--format: name at least one format")
    return tuple(out)


def headline_format(formats: Sequence[str]) -> str:
    """`plain` when it ran, else the first format."""
    return HEADLINE_FORMAT if HEADLINE_FORMAT in formats else formats[0]


def _bare_op(corpus: BenchCorpus, doc: Doc) -> dict[str, Any]:
    return {
        "op": "write",
        "type": "episodic",
        "title": doc.doc_id,
        "claim": doc.text,
        "body": [],
        "path": doc_path(corpus.scope_id, doc.doc_id),
        "tag": ["locomo"],
    }


def to_ops(corpus: BenchCorpus, fmt: str) -> list[tuple[str, dict[str, Any]]]:
    """One write op per turn, in conversation order."""
    if fmt == "bare":
        return [(doc.doc_id, _bare_op(corpus, doc)) for doc in corpus.docs]
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


PUBLISHED: dict[str, dict[str, float]] = {
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
}
PUBLISHED_UNIT = "one dialog turn ('speaker: text')"


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


def format_table(formats: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per format (R@k overall 1-4, R@10 per category), then the same-unit references.

    Values are percentages rounded to 0.1; a reference row carries the unit it
    measured so that only same-unit rows are read side by side.
    """
    rows: list[dict[str, Any]] = []
    for fmt, block in formats.items():
        head = block["summary"]["headline_categories_1_4"]
        groups = block["summary"]["all_categories"]["groups"]
        row: dict[str, Any] = {"format": fmt, "unit": block["unit"], "n": head["overall"]["n"]}
        for k in KS:
            row[f"R@{k}"] = _pct1(head["overall"]["metrics"][f"recall@{k}"]["mean"])
        for cat in CATEGORY_ORDER:
            g = groups.get(cat)
            row[f"{cat} R@10"] = None if g is None else _pct1(g["metrics"]["recall@10"]["mean"])
        rows.append(row)
    for name, ref in PUBLISHED.items():
        rows.append(
            {
                "format": f"reference: {name}",
                "unit": PUBLISHED_UNIT,
                "n": None,
                **{f"R@{k}": ref.get(f"recall@{k}") for k in KS},
            }
        )
    return rows


def _pct1(x: float | None) -> float | None:
    return None if x is None else round(100 * x, 1)


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The format table as GitHub markdown (a missing value is blank)."""
    cols = ["format", "unit", "n", *[f"R@{k}" for k in KS], *[f"{c} R@10" for c in HEADLINE]]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = ["" if r.get(c) is None else str(r.get(c)) for c in cols]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _question_rows(fmt: str, asked: Sequence[h.Asked]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for a in asked:
        q = a.question
        rows.append(
            {
                "format": fmt,
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
    return rows


def parser() -> argparse.ArgumentParser:
    p = h.base_parser(NAME, "locomo10.json (default: <shared data>/locomo/locomo10.json)")
    p.add_argument(
        "--format",
        default=",".join(DEFAULT_FORMATS),
        help=f"memory text format(s), a comma list run into one table ({', '.join(FORMATS)};"
        f" default {','.join(DEFAULT_FORMATS)}; the headline is {HEADLINE_FORMAT} when listed)",
    )
    return p


def run(
    args: argparse.Namespace, executor: Executor | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The whole measurement (payload, per-question rows); nothing written or printed."""
    formats = parse_formats(args.format)
    lead = headline_format(formats)
    data = h.data_path(args.data, "locomo", "locomo10.json")
    settings = h.Settings.from_args(args)
    corpora, report = load_locomo(data)
    chosen = h.scopes(corpora, args.limit_conversations)
    capture = args.ablations or args.tune or args.save_capture is not None
    n_docs = sum(len(c.docs) for c in chosen)
    n_q = sum(len(c.questions) for c in chosen)

    rows: list[dict[str, Any]] = []
    blocks: dict[str, dict[str, Any]] = {}
    lead_run: h.Run | None = None
    for fmt in formats:
        run = h.run_scopes(
            f"{NAME}-{fmt}",
            chosen,
            lambda c, f=fmt: to_ops(c, f),  # type: ignore[misc]
            args,
            settings,
            limit=LIMIT,
            capture=capture and fmt == lead,
            executor=executor,
        )
        fmt_rows = _question_rows(fmt, run.asked)
        rows += fmt_rows
        blocks[fmt] = {
            "unit": UNITS[fmt],
            "comparable_with_published": fmt in TURN_LEVEL_FORMATS,
            "summary": summarize_rows(fmt_rows),
            "deduped_turns": run.deduped,
            "timings": {
                **{k: round(v, 2) for k, v in run.timings.items()},
                "search_ms_mean": round(sum(a.ms for a in run.asked) / max(len(run.asked), 1), 2),
            },
        }
        if fmt == lead:
            lead_run = run
    assert lead_run is not None
    table = format_table(blocks)
    payload: dict[str, Any] = {
        "benchmark": NAME,
        **h.provenance(args, data, settings, h.embedder_model(args.embedder), executor),
        # the headline: its format and unit stated next to its numbers
        "format": lead,
        "unit": UNITS[lead],
        "formats_run": list(formats),
        "limit": LIMIT,
        "ks": list(KS),
        "load_report": {
            "conversations": len(chosen),
            "turns": n_docs,
            "questions": n_q,
            "skipped": report.skip_reasons(),
            "malformed_ids": report.malformed_reasons(),
            "deduped_turns": blocks[lead]["deduped_turns"],
        },
        "timings": blocks[lead]["timings"],
        "summary": blocks[lead]["summary"],
        "formats": blocks,
        "table": table,
        "published": PUBLISHED,
        "published_unit": PUBLISHED_UNIT,
    }
    asked, ids = lead_run.asked, lead_run.ids
    cap = h.merge_captures(lead_run.captures)
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
    return payload, rows


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    with h.executor_for(args) as executor:
        payload, rows = run(args, executor)
    formats, lead, blocks, table = (
        payload["formats_run"],
        payload["format"],
        payload["formats"],
        payload["table"],
    )
    n_conv = payload["load_report"]["conversations"]
    json_path, parquet_path = h.write_results(args.out_dir, NAME, args.tag, payload, rows)
    md_path = json_path.with_suffix(".md")
    md_path.write_text(
        f"LoCoMo evidence recall@k, categories 1-4 ({args.embedder} embedder,"
        f" {n_conv} conversations); headline format: {lead}\n\n" + markdown_table(table)
    )
    if not args.quiet:
        for fmt in formats:
            print(
                f"\nLoCoMo evidence recall@k ({args.embedder}, format {fmt}: {UNITS[fmt]};"
                f" {n_conv} conversations)"
            )
            h.print_table(
                "production run",
                ["category", "n", *[f"R@{k}" for k in KS]],
                _table(blocks[fmt]["summary"]),
            )
        print("\n" + markdown_table(table))
        if "ablations" in payload:
            h.print_table(
                f"ablations (format {lead}; replayed from one capture; categories 1-4)",
                ["config", *[f"R@{k}" for k in KS]],
                [
                    [t["config"], *[h.pct(t["overall"][f"recall@{k}"]) for k in KS]]
                    for t in payload["ablations"]
                ],
            )
        if "tuning" in payload:
            print("\n" + "\n".join(payload["tuning"]["lines"]))
        print(f"\nwrote {json_path}, {md_path} and {parquet_path}")
    return payload


if __name__ == "__main__":
    main(sys.argv[1:])
