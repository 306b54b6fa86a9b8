"""Judging embedders with numbers: the migration's gate verdict and `eval compare-embedders`.

`gate_verdict` runs the discrimination gate (`memhtml.eval.gate`, the fixture
corpus) on a migration's target embedder and, when it fails, on the active
space's embedder too: a failure is a regression when the old model passes,
or fails with fewer probes or a higher MRR. `index migrate` receives it from
the CLI adapter (the gate sits above `ops/`).
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.errors import InvalidFlagError, MemhtmlError

MRR_TOLERANCE: Final = 0.005


def gate_summary(report: Any) -> dict[str, Any]:
    """The few figures of a gate report a verdict or a comparison shows."""
    return {
        "embedder": report.embedder,
        "passed": report.passed,
        "mrr": report.mrr,
        "failing_probes": len(report.failing),
        "inversions": report.inversions,
        "worst_margin": report.worst_margin,
        "degraded": report.degraded,
        "reason": report.reason,
        "duration_s": round(report.duration_s, 3),
    }


def gate_verdict(new_name: str, old_name: str | None) -> dict[str, Any]:
    """The gate on `new_name`; when it fails, on `old_name` too: a regression is failing
    where the old model passes, or failing worse (more probes, lower MRR)."""
    from memhtml.eval.gate import run_gate

    new = run_gate(new_name, embedder=new_name)
    out: dict[str, Any] = {"new": gate_summary(new), "old": None}
    if new.passed:
        return {**out, "passed": True, "reason": None}
    old = None
    if old_name is not None:
        try:
            old = run_gate(old_name, embedder=old_name)
        except MemhtmlError:
            old = None  # the old model out of reach: the new one is judged on its own
    if old is not None:
        out["old"] = gate_summary(old)
        no_worse = (
            not old.passed
            and not new.degraded
            and len(new.failing) <= len(old.failing)
            and (new.mrr or 0.0) >= (old.mrr or 0.0) - MRR_TOLERANCE
        )
        if no_worse:
            reason = f"fails the gate as the old model does ({new.reason}), no worse"
            return {**out, "passed": True, "reason": reason}
    return {**out, "passed": False, "reason": new.reason}


# -- eval compare-embedders ------------------------------------------------------------------
FIXED_NOW: Final = "2026-01-01T00:00:00Z"
RECALL_K: Final = 10
_SLUG: Final = re.compile(r"[^a-z0-9]+")


def _ms(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None}
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3),
    }


def benchmark_sets(data: str | None, conversations: int) -> list[tuple[str, str, list[Any]]]:
    """(name, where it came from, corpora) for LoCoMo and BEAM: from `data` (a folder laid
    out as the shared benchmark data: locomo/locomo10.json, beam/100K), else the
    `MEMHTML_BENCH_DATA` folder, else the samples bundled with memhtml."""
    from memhtml.eval.benchmarks import (
        SAMPLES_DIR,
        default_data_root,
        load_beam,
        load_locomo,
    )

    root = Path(data).expanduser() if data else default_data_root()
    out: list[tuple[str, str, list[Any]]] = []
    if root is not None:
        locomo = root / "locomo" / "locomo10.json"
        if locomo.is_file():
            corpora = load_locomo(locomo)[0][:conversations]
            out.append(("locomo", f"{locomo}, {len(corpora)} conversation(s)", corpora))
        beam = root / "beam" / "100K"
        if beam.is_dir():
            names = sorted((p.name for p in beam.iterdir() if p.name.isdigit()), key=int)
            corpora = load_beam(beam, conversations=names[:conversations])[0]
            out.append(("beam", f"{beam}, {len(corpora)} conversation(s)", corpora))
    if data and not out:
        raise InvalidFlagError(
            f"--data {data}: holds neither locomo/locomo10.json nor beam/100K",
            suggestions=["point --data at the folder that holds locomo/ and beam/"],
        )
    if not out:
        samples = SAMPLES_DIR
        out.append(
            (
                "locomo",
                "bundled sample (a smoke check)",
                load_locomo(samples / "locomo_sample.json")[0],
            )
        )
        out.append(("beam", "bundled sample (a smoke check)", load_beam(samples / "beam")[0]))
    return out


def _doc_op(scope: str, doc: Any) -> dict[str, Any]:
    speaker = doc.speaker or "someone"
    op: dict[str, Any] = {
        "op": "write",
        "type": "episodic",
        "title": f"{speaker}, {(doc.session_id or 'conversation').replace('_', ' ')}",
        "claim": doc.text,
        "path": f"areas/bench/{_SLUG.sub('-', scope.lower())}/"
        f"{_SLUG.sub('-', doc.doc_id.lower()).strip('-')}.html",
        "tag": ["bench"],
        "allow_secret": True,  # public benchmark text (BEAM prints a password hash)
    }
    if doc.timestamp:
        op["event_at"] = doc.timestamp
    return op


def _recall(name: str, corpus_set: list[Any], workdir: Path) -> dict[str, Any]:
    """Evidence recall@10 of `name` over the corpora, one fresh memory root each."""
    import memhtml
    from memhtml.eval.benchmarks.metrics import recall_at_k
    from memhtml.store.layout import init_repo

    recalls: list[float] = []
    search_ms: list[float] = []
    for i, bench in enumerate(corpus_set):
        root = workdir / f"{name}-{i}"
        init_repo(root)
        corpus = memhtml.open(root, embedder=name, now=FIXED_NOW)
        try:
            ops = [_doc_op(bench.scope_id, d) for d in bench.docs if d.text.strip()]
            docs = [d for d in bench.docs if d.text.strip()]
            outcome = corpus.apply(ops)
            if outcome.failure is not None:
                raise outcome.failure
            docs_of: dict[str, list[str]] = {}
            for doc, result in zip(docs, outcome.results, strict=True):
                path = result.get("existing_path") or result.get("path")
                docs_of.setdefault(str(path), []).append(doc.doc_id)
            for q in bench.questions:
                if not q.gold_ids:
                    continue
                mark = time.perf_counter()
                hits = corpus.search(q.text, limit=RECALL_K).hits
                search_ms.append((time.perf_counter() - mark) * 1000)
                ranked = [d for h in hits for d in docs_of.get(h.path, ())]
                recalls.append(recall_at_k(ranked, q.gold_ids, RECALL_K))
        finally:
            corpus.close()
    return {
        f"recall@{RECALL_K}": round(statistics.fmean(recalls), 4) if recalls else None,
        "questions": len(recalls),
        "conversations": len(corpus_set),
        "search_ms": _ms(search_ms),
    }


def _speed(name: str, texts: list[str], queries: list[str]) -> dict[str, Any]:
    from memhtml.embed.registry import get_embedder

    embedder = get_embedder(name)
    if embedder is None:
        raise InvalidFlagError(f"{name!r} names no embedder to compare")
    mark = time.perf_counter()
    embedder.embed_documents(texts)
    seconds = time.perf_counter() - mark
    latencies: list[float] = []
    for query in queries:
        mark = time.perf_counter()
        embedder.embed_query(query)
        latencies.append((time.perf_counter() - mark) * 1000)
    return {
        "space": f"{embedder.model_id}@{embedder.dim}",
        "docs_per_s": round(len(texts) / seconds, 1) if seconds > 0 else None,
        "docs_timed": len(texts),
        "query_ms": _ms(latencies),
    }


def _one(
    name: str, sets: list[tuple[str, str, list[Any]]], seed: int, size: int, workdir: Path
) -> dict[str, Any]:
    from memhtml.eval.fixture import generate_fixture
    from memhtml.eval.gate import run_gate

    plan = generate_fixture(seed, size)
    texts = [d.text for _, _, corpora in sets for c in corpora for d in c.docs if d.text.strip()]
    texts += [p.target_claim for p in plan.probes] + [
        c for p in plan.probes for c in p.control_claims
    ]
    queries = [q.text for _, _, corpora in sets for c in corpora for q in c.questions]
    queries += [p.query for p in plan.probes]
    out = {"embedder": name, **_speed(name, texts, queries)}
    report = run_gate(name, seed=seed, size=size, embedder=name, workdir=workdir)
    out["gate"] = {
        **gate_summary(report),
        "by_kind": {k: v["worst_margin"] for k, v in report.by_kind.items()},
        "search_ms_per_probe": round(1000 * report.timings.get("search", 0.0) / report.probes, 3)
        if report.probes
        else None,
    }
    out["benchmarks"] = {bench: _recall(name, corpora, workdir) for bench, _, corpora in sets}
    return out


def compare_embedders(
    a: str,
    b: str,
    *,
    data: str | None = None,
    conversations: int = 1,
    seed: int = 7,
    size: int = 300,
    workdir: str | None = None,
) -> dict[str, Any]:
    """The gate, benchmark recall, throughput and latency of two embedders, side by side."""
    from memhtml.seams import normalize

    if normalize(a) == normalize(b):
        raise InvalidFlagError("compare two different embedders (got the same name twice)")
    sets = benchmark_sets(data, conversations)
    with tempfile.TemporaryDirectory(prefix="memhtml-compare-", dir=workdir) as tmp:
        columns = [_one(normalize(n), sets, seed, size, Path(tmp)) for n in (a, b)]
    return {
        "embedders": columns,
        "benchmarks": [{"name": n, "source": src} for n, src, _ in sets],
        "seed": seed,
        "size": size,
        "rows": _rows(columns),
    }


def _fmt(value: Any, pattern: str = "{}") -> str:
    return "-" if value is None else pattern.format(value)


def _rows(columns: list[dict[str, Any]]) -> list[list[str]]:
    def row(label: str, get: Any, pattern: str = "{}") -> list[str]:
        return [label, *(_fmt(get(c), pattern) for c in columns)]

    rows = [
        row("space", lambda c: c["space"]),
        row("gate passed", lambda c: c["gate"]["passed"]),
        row("gate MRR", lambda c: c["gate"]["mrr"], "{:.4f}"),
        row("gate failing probes", lambda c: c["gate"]["failing_probes"]),
        row("gate worst margin", lambda c: c["gate"]["worst_margin"], "{:.5f}"),
    ]
    kinds = sorted({k for c in columns for k in c["gate"]["by_kind"]})
    rows += [
        row(f"  margin {k}", lambda c, k=k: c["gate"]["by_kind"].get(k), "{:.5f}") for k in kinds
    ]
    benches = list(columns[0]["benchmarks"])
    rows += [
        row(
            f"{b} recall@{RECALL_K} (n={columns[0]['benchmarks'][b]['questions']})",
            lambda c, b=b: c["benchmarks"][b][f"recall@{RECALL_K}"],
            "{:.3f}",
        )
        for b in benches
    ]
    rows += [
        row("docs/s (embedding)", lambda c: c["docs_per_s"], "{:.1f}"),
        row("query embed p50 ms", lambda c: c["query_ms"]["p50"], "{:.2f}"),
        row("search ms per gate probe", lambda c: c["gate"]["search_ms_per_probe"], "{:.2f}"),
    ]
    return rows


def comparison_table(data: dict[str, Any]) -> str:
    """The comparison as aligned text."""
    header = ["", *(c["embedder"] for c in data["embedders"])]
    rows = [header, *data["rows"]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    lines += [f"{b['name']}: {b['source']}" for b in data["benchmarks"]]
    return "\n".join(lines)


def migration_text(data: dict[str, Any]) -> str:
    """`index migrate` for a person at a terminal."""
    mode = data.get("mode")
    if mode == "switched":
        gate = data.get("gate") or {}
        verdict = "skipped" if gate.get("skipped") else ("passed" if gate.get("passed") else "?")
        return (
            f"switched {data['from'] or '(no space)'} -> {data['to']}:"
            f" embedded {data['embedded']:,} chunks this run"
            f" ({data['embedded_total']:,} in all, {data['reused']:,} reused)"
            f" in {data['seconds']:.1f} s; gate {verdict}"
            + ("; the old space is kept (--drop-old frees it)" if data.get("kept_old") else "")
        )
    if mode == "status":
        active = data["active"]["space"] or "(no vector space)"
        record = data.get("migration")
        lines = [f"active space: {active}"]
        if record:
            est = data["estimate"] or {}
            lines.append(
                f"migration to {record['to']} ({record['embedder']}): {record['state']}"
                f"{' (running)' if data.get('running') else ''},"
                f" {est.get('chunks_covered', 0):,}/{est.get('chunks_total', 0):,} chunks covered"
            )
            if record.get("last_error"):
                lines.append(f"  stopped: {record['last_error']}")
        elif data.get("estimate"):
            est = data["estimate"]
            lines.append(
                f"to {data['target']['space']}: {est['chunks_missing']:,} chunks of"
                f" {est['memories_missing']:,} memories, ~{est['tokens_estimate']:,} tokens"
            )
        lines += [f"kept: {k['space']} ({k['vectors']:,} vectors)" for k in data.get("kept", [])]
        return "\n".join(lines)
    return json.dumps(data, indent=2, sort_keys=True)
