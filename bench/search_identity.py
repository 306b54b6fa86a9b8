"""Ranking identity check: capture every search answer for a fixed query set, compare two captures.

A speed change to the search path must leave every answer identical: the
hits' order, scores, snippets, entities, explain terms, and the degraded flag.
This captures `Corpus.search(...).to_data()` for ~200 fixed queries (plain,
filtered, explained, other limits and settings) over a store, and compares
two captures field by field.

    python -m bench.search_identity capture --store DIR --embedder fake --out before.json
    python -m bench.search_identity capture --fixture --embedder local --out fx-before.json
    python -m bench.search_identity compare before.json after.json

`--fixture` writes the gate's fixture corpus (seed 7, 300 memories) into a
temporary root and queries it with the gate's probes plus claim-derived
queries. Run the capture with the old code (e.g. `PYTHONPATH=<a git archive
of HEAD>`) and with the new, then compare.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NOW = "2026-01-01T00:00:00Z"


def store_queries(n: int = 200) -> list[tuple[str, dict[str, Any]]]:
    """(query, search options) over the synthetic bench corpus's vocabulary."""
    from bench.bench_search import queries
    from bench.synth import PEOPLE, SERVICES, THINGS, VERBS

    rng = random.Random(11)
    out: list[tuple[str, dict[str, Any]]] = [(q, {}) for q in queries(120)]
    for _ in range(20):
        out.append((f"{rng.choice(PEOPLE)} {rng.choice(THINGS)}", {}))
    for _ in range(10):
        out.append((f"{rng.choice(SERVICES)} {rng.randint(2, 9000)} ms", {}))
    filters: list[dict[str, Any]] = [
        {"type": "procedural"},
        {"type": ["semantic", "episodic"]},
        {"tag": "connection-pool"},
        {"entity": "service:checkout-api"},
        {"entity": "edge-proxy"},
        {"include_archived": True},
        {"as_of": "2024-06-01"},
        {"facet": "unit=ms"},
    ]
    for i in range(24):
        q = f"{rng.choice(SERVICES)} {rng.choice(THINGS)} {rng.choice(VERBS)}"
        out.append((q, dict(filters[i % len(filters)])))
    options: list[dict[str, Any]] = [
        {"explain": True},
        {"limit": 3},
        {"limit": 25, "explain": True},
        {"mmr_lambda": 1.0},
        {"near_duplicates": False},
        {"weights": {"recency": 0.0}},
        {"k": 60},
    ]
    for i in range(21):
        q = f"{rng.choice(THINGS)} {rng.choice(VERBS)}"
        out.append((q, dict(options[i % len(options)])))
    out += [
        ("must not drain the connection pool", {}),
        ("zzqx unknownword", {}),
        ("the", {}),
        ("note 4242", {}),
        ("checkout-api", {"explain": True}),
    ]
    return out[:n] if n < len(out) else out


def fixture_queries(plan: Any) -> list[tuple[str, dict[str, Any]]]:
    """The gate's probes (limit 50, explained, as the gate asks) plus claim-derived queries."""
    out: list[tuple[str, dict[str, Any]]] = [
        (p.query, {"limit": 50, "explain": True}) for p in plan.probes
    ]
    rng = random.Random(3)
    from memhtml.html import parse_memory

    paths = sorted(plan.files)
    for path in rng.sample(paths, min(140, len(paths))):
        words = parse_memory(plan.files[path]).gist.split()
        if not words:
            continue
        start = rng.randrange(max(1, len(words) - 3))
        out.append((" ".join(words[start : start + rng.randint(2, 5)]), {}))
    return out


def capture(root: Path, embedder: str, qs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Every answer's envelope data, in query order."""
    import memhtml

    answers = []
    started = time.perf_counter()
    with memhtml.open(root, embedder=embedder, now=NOW) as corpus:
        for q, opts in qs:
            try:
                data = corpus.search(q, **opts).to_data()
            except Exception as exc:  # an error is an answer too: it must not change
                data = {"error": f"{type(exc).__name__}: {exc}"}
            answers.append({"query": q, "options": opts, "data": data})
    return {
        "root": str(root),
        "embedder": embedder,
        "seconds": round(time.perf_counter() - started, 2),
        "answers": answers,
    }


def capture_fixture(embedder: str) -> dict[str, Any]:
    """The gate's fixture corpus, written and indexed in a temporary root, then captured."""
    import memhtml
    from memhtml.eval.fixture import generate_fixture, write_fixture

    plan = generate_fixture(7, 300)
    with tempfile.TemporaryDirectory(prefix="memhtml-identity-") as tmp:
        root = Path(tmp) / "corpus"
        write_fixture(plan, root, configure=False)
        with memhtml.open(root, embedder=embedder, now=plan.now) as corpus:
            corpus.index.rebuild(embed=True, progress=False)
        out = capture(root, embedder, fixture_queries(plan))
    out["root"] = "fixture seed 7 x 300"
    return out


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Human-readable differences (empty when every answer is identical)."""
    diffs: list[str] = []
    if len(a["answers"]) != len(b["answers"]):
        diffs.append(f"answer counts differ: {len(a['answers'])} vs {len(b['answers'])}")
    for i, (x, y) in enumerate(zip(a["answers"], b["answers"], strict=False)):
        if (x["query"], x["options"]) != (y["query"], y["options"]):
            diffs.append(f"#{i}: different queries ({x['query']!r} vs {y['query']!r})")
            continue
        if x["data"] == y["data"]:
            continue
        dx, dy = x["data"], y["data"]
        px = [h["path"] for h in dx.get("hits", [])]
        py = [h["path"] for h in dy.get("hits", [])]
        what = "order" if px != py else "fields"
        keys = sorted(k for k in set(dx) | set(dy) if dx.get(k) != dy.get(k))
        diffs.append(f"#{i} {x['query']!r} {x['options']}: {what} differs ({', '.join(keys)})")
    return diffs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("--store", type=Path)
    cap.add_argument("--fixture", action="store_true")
    cap.add_argument("--embedder", default="fake")
    cap.add_argument("--queries", type=int, default=200)
    cap.add_argument("--out", type=Path, required=True)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "capture":
        if args.fixture:
            result = capture_fixture(args.embedder)
        elif args.store:
            result = capture(args.store, args.embedder, store_queries(args.queries))
        else:
            parser.error("capture needs --store or --fixture")
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        hits = sum(len(x["data"].get("hits", [])) for x in result["answers"])
        print(f"captured {len(result['answers'])} answers ({hits} hits) in {result['seconds']} s")
        return 0
    a, b = (json.loads(p.read_text()) for p in (args.before, args.after))
    diffs = compare(a, b)
    for line in diffs[:50]:
        print(line)
    n = len(a["answers"])
    print(f"{n - len(diffs)} of {n} answers identical" + ("" if not diffs else " — DIFFERENCES"))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
