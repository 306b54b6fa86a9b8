"""A sleep night with the model off: wall time per phase and in total, and peak memory.

Reference (the original memhtml on a machine like this, 1,000 synthetic
memories with embeddings, model off): a whole night 27.9 s (5 commits).
Targets: 1k under 10 s, 10k under 60 s, cost per memory flat from 1k to 10k.

Each size runs on a private copy of the cached synthetic store, indexed (and
embedded with the fake embedder, so the vector paths run) before the clock
starts; the night itself runs in a child process (`memhtml.sleep.engine.run`,
exactly what `memhtml sleep run` calls), which reports its own wall times and
peak RSS (getrusage of the child and of the git processes it waited for), then
times `sleep merge` of that night (both gates, the fast-forward, the index).

    python -m bench.bench_sleep [--sizes 1000 10000] [--embedder fake|off|local]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import write_result
from bench.stores import fresh_copy

NIGHT = """
import json, resource, sys, time
import memhtml
from memhtml.contracts.errors import MemhtmlError
from memhtml.sleep.engine import run
from memhtml.sleep.merge import merge

def merged(corpus, run_id):
    t = time.perf_counter()
    try:
        out = merge(corpus, run_id)
        verdict = {"merged": True, "mode": out["mode"], "corpus_gate": out["gate"]["corpus"]}
    except MemhtmlError as exc:
        verdict = {"merged": False, "code": exc.code, "error": exc.message[:300]}
    return {"ms": (time.perf_counter() - t) * 1000, **verdict}

corpus = memhtml.open(sys.argv[1], embedder=sys.argv[2])
t = time.perf_counter()
report = run(corpus, date="2026-03-02", progress=False)
wall = (time.perf_counter() - t) * 1000
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
git_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({
    "wall_ms": wall,
    "status": report["status"],
    "commits": len(report["commits"]),
    "phases": [
        {k: p.get(k) for k in ("phase", "status", "elapsed_ms", "commit_ms", "touched",
                                "commit_sha", "detail")}
        for p in report["phases"]
    ],
    "peak_rss_mb": peak,
    "git_peak_rss_mb": git_peak,
    "merge": merged(corpus, report["run_id"]),
}))
"""

INDEX = """
import sys, memhtml
c = memhtml.open(sys.argv[1], embedder=sys.argv[2])
c.index.rebuild(embed=sys.argv[2] != "off", progress=False)
"""


def _child(script: str, *args: str) -> str:
    env = {**os.environ, "MEMHTML_LLM": "off", "MEMHTML_NOW": "2026-03-02T09:00:00Z"}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    out = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return out.stdout


def measure(n: int, embedder: str) -> dict[str, Any]:
    """One night over a fresh copy of the n-memory store."""
    with tempfile.TemporaryDirectory() as tmp:
        root = fresh_copy(n, Path(tmp) / "m")
        # The copy leaves `.memhtml/` behind, tracked placeholders included: put those back.
        subprocess.run(["git", "checkout", "--", "."], cwd=root, check=True, capture_output=True)
        _child(INDEX, str(root), embedder)
        night = json.loads(_child(NIGHT, str(root), embedder))
    phases = {
        p["phase"]: {
            "ms": round(p["elapsed_ms"], 1),
            "commit_ms": round(p["commit_ms"] or 0.0, 1),
            "status": p["status"],
            "files": p["touched"],
            "committed": bool(p["commit_sha"]),
            **({"detail": p["detail"]} if p["detail"] else {}),
        }
        for p in night["phases"]
    }
    return {
        "memories": n,
        "embedder": embedder,
        "status": night["status"],
        "total_ms": round(night["wall_ms"], 1),
        "ms_per_memory": round(night["wall_ms"] / n, 3),
        "commits": night["commits"],
        "peak_rss_mb": round(night["peak_rss_mb"], 1),
        "git_peak_rss_mb": round(night["git_peak_rss_mb"], 1),
        "phases": phases,
        "merge": {
            "ms": round(night["merge"]["ms"], 1),
            **{k: v for k, v in night["merge"].items() if k != "ms"},
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--embedder", default="fake", choices=("fake", "off", "local"))
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        row = measure(n, args.embedder)
        rows.append(row)
        slowest = sorted(row["phases"].items(), key=lambda kv: -kv[1]["ms"])[:4]
        verdict = "merged" if row["merge"]["merged"] else row["merge"].get("code")
        named = ", ".join(f"{k} {v['ms'] / 1000:.2f} s" for k, v in slowest)
        print(
            f"{n:>6} memories: {row['total_ms'] / 1000:.2f} s ({row['ms_per_memory']:.2f} ms per"
            f" memory), {row['commits']} commits, peak RSS {row['peak_rss_mb']} MB;"
            f" merge {row['merge']['ms'] / 1000:.2f} s ({verdict});"
            f" slowest: {named}",
            file=sys.stderr,
        )
    write_result(
        "sleep",
        {
            "reference": {"original_1k_night_s": 27.9, "original_commits": 5},
            "targets": {"1k_s": 10, "10k_s": 60},
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
