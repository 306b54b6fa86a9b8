"""Search latency: warm in process and as a cold CLI, beside a bare FTS5 query and a
bare numpy scan over the same data, so the overhead of fusion shows as a ratio.

Reference (the original memhtml, embeddings off): cold CLI search 0.47 s at 1k and
0.69 s at 10k (about 0.45 s of start-up). Targets on this machine: warm p50 <= 15 ms
at 10k and <= 60 ms at 100k; cold CLI <= 300 ms at 10k; fused <= 4x bare FTS5 at 10k.

    python -m bench.bench_search [--sizes 1000 10000 100000] [--embedders fake local]

Warm searches are a library loop's: from its second search a process watches the
tree (inotify) instead of running `git status` per read; `tree_check_*` gives both
checks' cost, and the cold CLI pays `git status` once.

The local embedder embeds every memory (about a minute per 1,500 memories on 2
cores), so it runs at the sizes given by --local-sizes (default 1k and 10k).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import memhtml
from bench.common import summary, timed, write_result
from bench.stores import CACHE, fresh_copy
from bench.synth import SERVICES, THINGS, VERBS


def queries(n: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SERVICES)} {rng.choice(THINGS)} {rng.choice(VERBS)}" for _ in range(n)]


def indexed(n: int, embedder: str) -> Path:
    """A copy of the cached store indexed (and embedded) for `embedder`; reused across runs.

    One copy per embedder: an index holds one vector space, and searching the
    fake embedder's index with the local model would only measure degraded mode.
    """
    root = CACHE / f"indexed-{n}-{embedder}"
    marker = root / ".memhtml" / "bench-indexed"
    if not marker.exists():
        if root.exists():
            shutil.rmtree(root)
        fresh_copy(n, root)
        with memhtml.open(root, embedder=embedder) as c:
            c.index.rebuild(embed=True, force=True)
        marker.write_text(embedder + "\n")
    return root


def bare_fts(corpus: Any, q: str) -> None:
    from memhtml.index.retrieval import fts_query

    corpus.conn.execute(
        "SELECT rowid FROM files_fts WHERE files_fts MATCH ? ORDER BY rank LIMIT 40",
        (fts_query(q),),
    ).fetchall()


def bare_scan(matrix: Any, qvec: Any, norms: Any) -> None:
    """The vector arm's floor: one scan with the row norms cached, as production keeps them."""
    import numpy as np

    from memhtml.domain.vectors import cosine_similarities

    sims = cosine_similarities(matrix.vectors[: matrix.rows], qvec, norms)
    top = np.argpartition(-sims, 40)[:40]
    top[np.argsort(-sims[top])]


def tree_checks(root: Path, embedder: str, n: int = 30) -> dict[str, Any]:
    """A read's freshness check: `git status` (a one-shot reader: the cold CLI, a process's
    first search) against the watched check a process makes from its second search on."""
    with memhtml.open(root, embedder=embedder) as c:
        unwatched, _ = timed(c.catch_up, n)
        c.watch_tree()
        c.catch_up()  # the exact check the watcher starts from
        watched, _ = timed(c.catch_up, n)
    return {"tree_check_git_status": summary(unwatched), "tree_check_watched": summary(watched)}


def cold_cli(root: Path, embedder: str, qs: list[str]) -> list[float]:
    env = {**os.environ, "MEMHTML_ROOT": str(root), "MEMHTML_EMBED": embedder}
    times = []
    for q in qs:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memhtml.cli", "search", q, "--dense"],
            env=env,
            check=True,
            capture_output=True,
        )
        times.append((time.perf_counter() - started) * 1000)
    return times


def measure(n: int, embedder: str, n_queries: int, n_cold: int) -> dict[str, Any]:
    root = indexed(n, embedder)
    qs = queries(n_queries)
    with memhtml.open(root, embedder=embedder) as c:
        for q in qs[:5]:  # warm: model loaded, matrix mapped, pages cached
            c.search(q)
        fused, fts, scan, embed_q = [], [], [], []
        degraded = 0
        matrix = c.vector_matrix()
        norms = None
        if matrix is not None:
            from memhtml.domain.vectors import row_norms

            norms = row_norms(matrix.vectors[: matrix.rows])
        for q in qs:
            t = time.perf_counter()
            result = c.search(q)
            fused.append((time.perf_counter() - t) * 1000)
            degraded += int(result.degraded)
            t = time.perf_counter()
            bare_fts(c, q)
            fts.append((time.perf_counter() - t) * 1000)
            if c.embedder is not None and matrix is not None:
                t = time.perf_counter()
                qvec = c.embedder.embed_query(q)
                embed_q.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                bare_scan(matrix, qvec, norms)
                scan.append((time.perf_counter() - t) * 1000)
    checks = tree_checks(root, embedder)
    cold = cold_cli(root, embedder, qs[:n_cold])
    cold_off = cold_cli(root, "off", qs[:n_cold])
    row: dict[str, Any] = {
        "memories": n,
        "embedder": embedder,
        "degraded_searches": degraded,
        "warm_search": summary(fused),
        "bare_fts5": summary(fts),
        "bare_numpy_scan": summary(scan),
        "query_embedding": summary(embed_q),
        "fused_over_bare_fts_p50": round(summary(fused)["p50_ms"] / summary(fts)["p50_ms"], 2),
        **checks,
        "cold_cli_search": summary(cold),
        "cold_cli_search_embed_off": summary(cold_off),
    }
    print(
        f"{n} {embedder}: warm p50 {row['warm_search']['p50_ms']} ms"
        f" (p95 {row['warm_search']['p95_ms']}); bare fts {row['bare_fts5']['p50_ms']} ms;"
        f" scan {row['bare_numpy_scan'].get('p50_ms')} ms; ratio {row['fused_over_bare_fts_p50']};"
        f" tree check {row['tree_check_git_status']['p50_ms']} ms unwatched,"
        f" {row['tree_check_watched']['p50_ms']} ms watched;"
        f" cold CLI {row['cold_cli_search']['p50_ms']} ms"
        f" (off {row['cold_cli_search_embed_off']['p50_ms']} ms)",
        file=sys.stderr,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--embedders", nargs="+", default=["fake", "local"])
    parser.add_argument("--local-sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cold", type=int, default=10)
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        for embedder in args.embedders:
            if embedder == "local" and n not in args.local_sizes:
                continue
            rows.append(measure(n, embedder, args.queries, args.cold))
    write_result(
        "search",
        {
            "rows": rows,
            "reference": {
                "original_cold_cli_1k_s": 0.47,
                "original_cold_cli_10k_s": 0.69,
                "target_warm_p50_10k_ms": 15,
                "target_warm_p50_100k_ms": 60,
                "target_cold_cli_10k_ms": 300,
                "target_fused_over_fts_10k": 4,
            },
        },
    )


if __name__ == "__main__":
    main()
