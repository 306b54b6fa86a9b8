"""The trace plane: `trace index` over ~50 MB of synthetic transcripts, re-scans, `trace search`.

Targets (issue 15): first scan >= 20 MB/s on this machine; a re-scan with
nothing appended under 100 ms for 200 sessions. The corpus comes from
memhtml.trace.synth (no real transcript is used): 200 sessions of ~250 KB,
tool outputs drawn uniformly from --tool-bytes and stored twice per result
line, as real transcripts do (the result block and its `toolUseResult`
copy). `--tool-bytes 200,3000` is the text-heavy stress case (small tool
outputs, so a third of the bytes are indexed text).

    python -m bench.bench_trace [--sessions 200] [--session-bytes 250000]
        [--tool-bytes 500,20000] [--append 20] [--queries 200] [--tag NAME]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import memhtml
from bench.common import peak_rss_mb, summary, write_result
from memhtml.ops.traces import index_traces, search_traces
from memhtml.trace.synth import append_exchanges, write_corpus

COMMON_QUERIES = (
    "migration rollback",
    "timeout retry backoff",
    '"cache the config"',
    "deploy pipeline artifact",
    "flaky test fixture",
    "lock mutex thread",
    "certificate secret credential",
    "histogram latency",
)


def _cli(root: Path, projects: Path, *argv: str) -> float:
    env = {**os.environ, "MEMHTML_ROOT": str(root), "MEMHTML_TRACE_ROOT": str(projects)}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *argv, "--dense"],
        env=env,
        check=True,
        capture_output=True,
    )
    return (time.perf_counter() - started) * 1000


def _pass(corpus: Any, projects: Path) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    cpu = time.process_time()
    data = index_traces(corpus, root=projects, progress=False)
    data["cpu_ms"] = (time.process_time() - cpu) * 1000
    return (time.perf_counter() - started) * 1000, data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--session-bytes", type=int, default=250_000)
    parser.add_argument("--tool-bytes", default="500,20000")
    parser.add_argument("--append", type=int, default=20, help="sessions appended to")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="first scans (the best counts)")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    lo, hi = (int(x) for x in args.tool_bytes.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        projects = Path(tmp) / "claude" / "projects"
        started = time.perf_counter()
        made = write_corpus(
            projects,
            sessions=args.sessions,
            seed=1,
            session_bytes=args.session_bytes,
            tool_bytes=(lo, hi),
        )
        generated_s = time.perf_counter() - started
        total = sum(p.stat().st_size for p in projects.rglob("*.jsonl"))
        files = sum(1 for _ in projects.rglob("*.jsonl"))
        root = Path(tmp) / "memory"
        memhtml.init(root)
        corpus = memhtml.open(root, embedder="off")

        firsts = []
        for _ in range(args.repeat):  # the plane deleted before each: a first scan every time
            shutil.rmtree(root / ".memhtml" / "traces", ignore_errors=True)
            firsts.append(_pass(corpus, projects))
        first_ms, first = min(firsts, key=lambda r: r[0])
        assert first["rescanned"] == files and first["bytes_read"] == total, first
        text = corpus.root / ".memhtml" / "traces" / "traces.db"
        plane_mb = sum(p.stat().st_size for p in text.parent.glob("traces.db*")) / 1e6

        idle = [_pass(corpus, projects)[0] for _ in range(7)]
        appended = sum(
            append_exchanges(s, exchanges=2, seed=100 + i, tool_bytes=(lo, hi))
            for i, s in enumerate(made[: args.append])
        )
        tail_ms, tail = _pass(corpus, projects)
        assert tail["tailed"] == args.append and tail["bytes_read"] == appended, tail

        queries = [f'"{s.phrase}"' for s in made[: args.queries // 2]]
        queries += [COMMON_QUERIES[i % len(COMMON_QUERIES)] for i in range(args.queries // 2)]
        search_ms = []
        for q in queries:
            t0 = time.perf_counter()
            found = search_traces(corpus, q, limit=20)
            search_ms.append((time.perf_counter() - t0) * 1000)
            if q.startswith('"') and "handshake" in q:
                assert {h["session_id"] for h in found["hits"]} == {
                    made[queries.index(q)].session_id
                }
        corpus.close()
        cold_idle = [_cli(root, projects, "trace", "index") for _ in range(5)]
        cold_search = [
            _cli(root, projects, "trace", "search", "migration rollback") for _ in range(5)
        ]

    mb = total / 1e6
    result = {
        "setup": {
            "sessions": args.sessions,
            "files": files,
            "corpus_mb": round(mb, 1),
            "session_bytes": args.session_bytes,
            "tool_bytes": [lo, hi],
            "generated_s": round(generated_s, 1),
            "turns": first["turns_written"],
            "plane_mb": round(plane_mb, 1),
        },
        "first_scan": {
            "ms": round(first_ms, 1),
            "mb_per_s": round(mb / (first_ms / 1000), 1),
            "runs_ms": [round(ms, 1) for ms, _ in firsts],
            # CPU seconds of the process (both threads): what the scan costs, whatever the load
            "cpu_ms": round(first["cpu_ms"], 1),
            "mb_per_cpu_s": round(mb / (first["cpu_ms"] / 1000), 1),
            "target_mb_per_s": 20,
        },
        "rescan_nothing_appended": {**summary(idle), "target_ms": 100},
        "rescan_appended": {
            "sessions_appended": args.append,
            "appended_mb": round(appended / 1e6, 2),
            "ms": round(tail_ms, 1),
            "mb_per_s": round(appended / 1e6 / (tail_ms / 1000), 1),
            "cpu_ms": round(tail["cpu_ms"], 1),
        },
        "search": summary(search_ms),
        "cold_cli": {"trace_index_idle": summary(cold_idle), "trace_search": summary(cold_search)},
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    print(
        f"first scan {mb:.1f} MB in {first_ms:.0f} ms ({result['first_scan']['mb_per_s']} MB/s,"
        f" {result['first_scan']['mb_per_cpu_s']} MB per CPU-second);"
        f" idle re-scan p50 {result['rescan_nothing_appended']['p50_ms']} ms;"
        f" appended {appended / 1e6:.2f} MB in {tail_ms:.0f} ms;"
        f" search p50 {result['search']['p50_ms']} ms",
        file=sys.stderr,
    )
    write_result("trace" + (f"-{args.tag}" if args.tag else ""), result)


if __name__ == "__main__":
    main()
