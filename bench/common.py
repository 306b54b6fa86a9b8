"""Shared bench plumbing: timing, percentiles, machine facts, JSON results."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memhtml.ops.config import prefer_single_threaded_blas

RESULTS = Path(__file__).resolve().parent / "results"

# The thread setting the CLI and the MCP server use, so an in-process figure
# means what a user of either sees. numpy is not loaded yet.
prefer_single_threaded_blas()


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of `values`."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[list[float], Any]:
    """Milliseconds per call over `repeat` calls, and the last result."""
    out: Any = None
    times: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - started) * 1000)
    return times, out


def summary(times: list[float]) -> dict[str, float]:
    """p50 / p95 / mean in ms."""
    return {
        "p50_ms": round(percentile(times, 50), 3),
        "p95_ms": round(percentile(times, 95), 3),
        "mean_ms": round(statistics.fmean(times), 3) if times else float("nan"),
        "n": len(times),
    }


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg(),
        "commit": commit,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def peak_rss_mb() -> float:
    """Peak resident set size of this process (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_result(name: str, data: dict[str, Any]) -> Path:
    """Write bench/results/<name>.json and print it."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine(), **data}
    target = RESULTS / f"{name}.json"
    target.write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps(payload, indent=2))
    return target


def digest(rows: Any) -> str:
    """A sha256 of JSON rows (keys sorted; what JSON cannot hold, by repr): an identity print."""
    import hashlib

    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=repr).encode()).hexdigest()


def bm25_top25(conn: Any, queries: list[str], *, exact: bool) -> str:
    """A digest of each query's FTS5 top 25 (bm25, then path): with `exact`, each hit's rowid
    and its score's bits; otherwise its path and its score to 9 decimals."""
    from memhtml.index.retrieval import fts_query

    out = []
    for q in queries:
        match = fts_query(q)
        if not match:
            continue
        rows = conn.execute(
            "SELECT f.rowid, f.path, bm25(files_fts) FROM files_fts"
            " JOIN files f ON f.rowid = files_fts.rowid WHERE files_fts MATCH ?"
            " ORDER BY bm25(files_fts), f.path LIMIT 25",
            (match,),
        ).fetchall()
        hits = (
            [[r, p, s.hex()] for r, p, s in rows]
            if exact
            else [[p, round(s, 9)] for _, p, s in rows]
        )
        out.append([q, hits])
    return digest(out)
