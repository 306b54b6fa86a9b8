"""Index costs: full rebuild (no embedding) time and peak RSS, and incremental updates.

Reference (the original memhtml on a machine like this, no embeddings): rebuild
1.1 s at 1k and 8.0 s at 10k. Targets (issue 19): rebuild of 10k <= 2.5 s; update
of one changed file <= 50 ms in process (committed, and a hand edit left in the
working tree, at 10k and 100k); a 256-file batch <= 500 ms; cost per file flat
from 1k to 100k. The rebuild's timings: start (ls-tree, handing chunks to the
workers, which read their blobs, `git status` and `git log`), parse (waiting for
the parse workers), write (the inserts, made while the workers parse), fts (FTS5,
the secondary indexes and the pending vectors, built in bulk after the inserts),
commit (COMMIT and its WAL checkpoint). Each rebuild is a fresh copy of the store,
so its `git status` re-hashes every file (a user's checkout seldom needs that).

    python -m bench.bench_index [--sizes 1000 10000 100000] [--rebuild-repeat 3]
    python -m bench.bench_index --sizes 10000 --rebuild-only --rebuild-repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import summary, write_result
from bench.stores import fresh_copy

REBUILD = """
import json, os, resource, sys, time
import memhtml
c = memhtml.open(sys.argv[1], embedder="off")
load = os.getloadavg()[0]
t = time.perf_counter()
cpu = time.process_time()
report = c.index.rebuild(embed=False)
elapsed = (time.perf_counter() - t) * 1000
cpu = time.process_time() - cpu
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"ms": elapsed, "files": report["projected"], "timings": report["timings_ms"],
                  "cpu_s": cpu, "children_cpu_s": kids.ru_utime + kids.ru_stime, "load": load,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def edit(root: Path, paths: list[str], stamp: str) -> None:
    for rel in paths:
        target = root / rel
        text = target.read_text()
        target.write_text(text.replace("</mark>", f" {stamp}</mark>", 1))


def long_lived_hand_edit(root: Path, files: list[str], rounds: int) -> dict[str, object]:
    """`index update` of one hand-edited file in a long-lived process (the watcher on).

    A Corpus that ranked two queries watches the tree (as a library loop or the
    MCP server does), so its update checks only the paths the kernel names plus
    the overlay's instead of running `git status` over the whole tree. Two files
    alternate; each round edits one (timed update) and reverts it (timed update).
    Wall time of the whole call, the freshness check included.
    """
    import memhtml

    corpus = memhtml.open(root, embedder="off")
    for query in ("cache eviction", "deploy pipeline"):  # the second read starts the watcher
        corpus.search(query, limit=3)
    assert corpus.watch_tree(), "inotify unavailable: no long-lived figure"
    pair = [files[len(files) // 3], files[2 * len(files) // 3]]
    originals = {path: (root / path).read_bytes() for path in pair}
    edits: list[float] = []
    reverts: list[float] = []
    for i in range(rounds):
        path = pair[i % 2]
        edit(root, [path], f"w{i}")
        started = time.perf_counter()
        report = corpus.index.update(embed=False)
        edits.append((time.perf_counter() - started) * 1000)
        assert report["projected"] >= 1, report
        (root / path).write_bytes(originals[path])
        started = time.perf_counter()
        corpus.index.update(embed=False)
        reverts.append((time.perf_counter() - started) * 1000)
    fresh = corpus.index.status()["index_fresh"]
    corpus.close()
    assert fresh, "the long-lived updates left the index stale"
    return {
        "all": summary(edits + reverts),
        "edit": summary(edits),
        "revert": summary(reverts),
        "load_avg": os.getloadavg(),
    }


def rebuild_once(n: int) -> dict[str, object]:
    """One rebuild of a fresh copy of the `n` store, in a fresh process (see REBUILD)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = fresh_copy(n, Path(tmp) / "m")
        out = subprocess.run(
            [sys.executable, "-c", REBUILD, str(root)], capture_output=True, text=True, check=True
        )
        return dict(json.loads(out.stdout))


def rebuild_row(n: int, repeat: int) -> dict[str, object]:
    """The rebuild figures: the median run of `repeat` (each a fresh copy and process)."""
    runs = sorted((rebuild_once(n) for _ in range(repeat)), key=lambda r: float(r["ms"]))
    rebuild = runs[len(runs) // 2]
    return {
        "memories": n,
        "rebuild_ms": round(rebuild["ms"], 1),
        "rebuild_ms_all": [round(r["ms"], 1) for r in runs],
        "rebuild_ms_per_file": round(rebuild["ms"] / n, 4),
        "rebuild_timings_ms": rebuild["timings"],
        # CPU of the rebuilding process, and of its parse workers and git processes.
        "rebuild_cpu_s": round(rebuild["cpu_s"], 2),
        "rebuild_children_cpu_s": round(rebuild["children_cpu_s"], 2),
        "rebuild_load_avg": round(rebuild["load"], 2),
        "fts_share_of_rebuild": round(rebuild["timings"]["fts_ms"] / rebuild["ms"], 3),
        "rebuild_peak_rss_mb": round(rebuild["peak_rss_mb"], 1),
    }


def measure(n: int, update_rounds: int, watched_rounds: int, repeat: int) -> dict[str, object]:
    import memhtml

    row = rebuild_row(n, repeat)
    with tempfile.TemporaryDirectory() as tmp:
        root = fresh_copy(n, Path(tmp) / "m")
        with memhtml.open(root, embedder="off") as built:  # close waits for its checkpoint
            built.index.rebuild(embed=False)
        corpus = memhtml.open(root, embedder="off")
        files = sorted(r[0] for r in corpus.conn.execute("SELECT path FROM files"))
        one, batch, hand = [], [], []
        for i in range(update_rounds):
            # A hand edit left uncommitted (the working-tree pass finds it), then undone.
            path = files[(i * 4801 + 13) % len(files)]
            before = (root / path).read_bytes()
            edit(root, [path], f"h{i}")
            hand.append(corpus.index.update(embed=False)["elapsed_ms"])
            (root / path).write_bytes(before)
            corpus.index.update(embed=False)
        watched = long_lived_hand_edit(root, files, watched_rounds)
        for i in range(update_rounds):
            edit(root, [files[(i * 7919) % len(files)]], f"u{i}")
            git(root, "commit", "-qam", "one")
            one.append(corpus.index.update(embed=False)["elapsed_ms"])
        for i in range(update_rounds):
            chosen = [files[(i * 257 + j * 31) % len(files)] for j in range(256)]
            edit(root, sorted(set(chosen)), f"b{i}")
            git(root, "commit", "-qam", "batch")
            batch.append(corpus.index.update(embed=False)["elapsed_ms"])
        corpus.close()
    return {
        **row,
        "update_one_file": summary(one),
        "update_hand_edit": summary(hand),
        # The same hand edit in a long-lived process (watcher on): edits and reverts.
        "update_hand_edit_long_lived": watched,
        "update_256_files": summary(batch),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--watched-rounds", type=int, default=20)
    parser.add_argument(
        "--rebuild-repeat", type=int, default=1, help="rebuilds per size (the median is reported)"
    )
    parser.add_argument(
        "--rebuild-only",
        action="store_true",
        help="the rebuild alone (index-rebuild.json)",
    )
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        if args.rebuild_only:
            row = rebuild_row(n, args.rebuild_repeat)
            rows.append(row)
            print(
                f"{n}: rebuild {row['rebuild_ms']} ms (all {row['rebuild_ms_all']};"
                f" {row['rebuild_ms_per_file']} ms/file, timings {row['rebuild_timings_ms']},"
                f" cpu {row['rebuild_cpu_s']} s + workers/git {row['rebuild_children_cpu_s']} s,"
                f" load {row['rebuild_load_avg']})",
                file=sys.stderr,
            )
            continue
        row = measure(n, args.rounds, args.watched_rounds, args.rebuild_repeat)
        rows.append(row)
        print(
            f"{n}: rebuild {row['rebuild_ms']} ms ({row['rebuild_ms_per_file']} ms/file,"
            f" fts {row['fts_share_of_rebuild']:.0%}, rss {row['rebuild_peak_rss_mb']} MB,"
            f" cpu {row['rebuild_cpu_s']} s + workers/git {row['rebuild_children_cpu_s']} s,"
            f" load {row['rebuild_load_avg']});"
            f" update 1 file p50 {row['update_one_file']['p50_ms']} ms"
            f" (hand edit {row['update_hand_edit']['p50_ms']} ms, long-lived"
            f" {row['update_hand_edit_long_lived']['all']['p50_ms']} ms);"
            f" 256 files p50 {row['update_256_files']['p50_ms']} ms",
            file=sys.stderr,
        )
    write_result(
        "index-rebuild" if args.rebuild_only else "index",
        {
            "rows": rows,
            "reference": {
                "original_rebuild_1k_s": 1.1,
                "original_rebuild_10k_s": 8.0,
                "target_rebuild_10k_s": 2.5,
                "target_update_one_ms": 50,
                "target_update_256_ms": 500,
            },
        },
    )


if __name__ == "__main__":
    main()
