"""A store from 10k to 1M memories: what each step costs, and what grows faster than linear.

Per size, on one cached synthetic store (bench/synth.py, fake embedder), each step
runs in a process of its own, timed by wall clock and by that process's own CPU
time (user + system, robust on a shared machine), with its peak resident memory
and the load average beside it:

- ``git``: the git index's size and `git status` as memhtml runs it, plain and with
  git's own scale tools (untracked cache, split index);
- ``first_embed``: `index rebuild --embed` on a store without an index (every
  vector made, the graph built past MEMHTML_ANN_MIN_ROWS);
- ``graph``: building the vector graph alone, from the matrix;
- ``rebuild``: `index rebuild` again (the vectors survive: the issue's rebuild);
- ``write``: single cold CLI writes; ``search_cold``: cold CLI searches;
- ``search_warm``: one process's searches, default (graph) against `exact`, with
  agreement@10 and under a type scope;
- ``mcp``: the stdio server (`memhtml-mcp`) answering searches and writes: its peak
  memory;
- ``doctor``, ``sleep`` (a night with the model off), ``publish`` (to a folder).

    python -m bench.bench_scale [--sizes 10000 100000 1000000] [--steps ...]

The 1M store takes several GB under $MEMHTML_BENCH_CACHE (one copy is kept).
Results: bench/results/scale.json (merged by size, so sizes can run apart).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS, percentile
from bench.stores import CACHE

PY = sys.executable
STEPS = [
    "git",
    "first_embed",
    "graph",
    "rebuild",
    "write",
    "search_cold",
    "search_warm",
    "mcp",
    "doctor",
    "sleep",
    "publish",
]


def store(n: int) -> Path:
    """The one cached store of `n` memories (built in place: no second copy at 1M)."""
    from bench.synth import build_store

    root = CACHE / f"scale-{n}-1"
    marker = root / ".bench-built"
    if not marker.exists():
        if root.exists():
            shutil.rmtree(root)
        started = time.perf_counter()
        build_store(root, n, 1)
        (root / ".git" / "info" / "exclude").write_text(".bench-*\n")
        marker.write_text(f"{time.perf_counter() - started:.1f}\n")
    return root


def env(root: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "MEMHTML_ROOT": str(root), "MEMHTML_EMBED": "fake", **extra}


def child(argv: list[str], **kw: Any) -> dict[str, Any]:
    """Like `measured`, with the child's own CPU time and peak RSS (wait4)."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, **kw)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{argv[:6]} failed ({code}): {text[-1500:]} {errors[-1500:]}")
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "load": round(load, 2),
        "out": text,
    }


def cli(root: Path, *args: str, **extra: str) -> dict[str, Any]:
    return child([PY, "-m", "memhtml.cli", *args, "--dense"], env=env(root, **extra))


def strip(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "out"}


def many(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """p50 of wall and CPU over repeated runs, the largest peak, the mean load."""
    return {
        "n": len(rows),
        "wall_p50_s": round(percentile([r["wall_s"] for r in rows], 50), 3),
        "cpu_p50_s": round(percentile([r["cpu_s"] for r in rows], 50), 3),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in rows),
        "load": round(statistics.fmean(r["load"] for r in rows), 2),
    }


# -- steps ----------------------------------------------------------------------


def step_git(root: Path, n: int) -> dict[str, Any]:
    index = root / ".git" / "index"
    status = ["git", "-C", str(root), "--no-optional-locks", "status", "--porcelain=v1", "-z"]
    # The index's stat data current first (a copied store's is not: every file would hash).
    subprocess.run(["git", "-C", str(root), "update-index", "-q", "--refresh"], check=False)
    plain = [child(status) for _ in range(3)]
    tuned = {
        "core.untrackedCache": "true",
        "core.splitIndex": "true",
    }
    for key, value in tuned.items():
        subprocess.run(["git", "-C", str(root), "config", key, value], check=True)
    git = ["git", "-C", str(root)]
    subprocess.run([*git, "update-index", "--untracked-cache", "--split-index"], check=True)
    subprocess.run([*git, "status", "--porcelain"], capture_output=True, check=True)
    with_tools = [child(status) for _ in range(3)]
    shared = sum(p.stat().st_size for p in (root / ".git").glob("sharedindex.*"))
    small = index.stat().st_size
    for key in tuned:
        subprocess.run(["git", "-C", str(root), "config", "--unset", key], check=False)
    subprocess.run(["git", "-C", str(root), "update-index", "--no-split-index"], check=False)
    subprocess.run(["git", "-C", str(root), "update-index", "--no-untracked-cache"], check=False)
    return {
        "index_mb": round(index.stat().st_size / 2**20, 2),
        "status": many(plain),
        "status_split_untracked_cache": many(with_tools),
        "split_index_mb": round(small / 2**20, 3),
        "shared_index_mb": round(shared / 2**20, 2),
    }


def step_first_embed(root: Path, n: int) -> dict[str, Any]:
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (root / ".memhtml" / name).unlink(missing_ok=True)
    shutil.rmtree(root / ".memhtml" / "vectors", ignore_errors=True)
    row = cli(root, "index", "rebuild", "--embed")
    data = json.loads(row["out"])["data"]
    return {**strip(row), "graph": data.get("graph"), "files": data.get("files")}


GRAPH = """
import json, sys, time
import memhtml
from memhtml.embed import ann
from memhtml.index.embedding import vectors_dir
with memhtml.open(sys.argv[1], embedder="fake") as c:
    m = c.vector_matrix()
    ann.drop(vectors_dir(c.root))
    t = time.perf_counter()
    g = ann.update(vectors_dir(c.root), m)
    print(json.dumps({"rows": g.rows, "build_s": time.perf_counter() - t}))
"""


def step_graph(root: Path, n: int) -> dict[str, Any]:
    row = child([PY, "-c", GRAPH, str(root)], env=env(root))
    return {**strip(row), **json.loads(row["out"].strip().splitlines()[-1])}


def step_rebuild(root: Path, n: int) -> dict[str, Any]:
    row = cli(root, "index", "rebuild")
    return strip(row)


def step_write(root: Path, n: int, count: int = 5) -> dict[str, Any]:
    rows = []
    for i in range(count):
        rows.append(
            cli(
                root,
                "write",
                "--type",
                "semantic",
                "--title",
                f"scale probe {time.time_ns()} {i}",
                "--claim",
                f"The scale probe {time.time_ns()} measured write {i} at {n} memories.",
            )
        )
    return many(rows)


def step_search_cold(root: Path, n: int, count: int = 5) -> dict[str, Any]:
    from bench.bench_search import queries

    rows = [cli(root, "search", q) for q in queries(count, seed=9)]
    exact = [cli(root, "search", q, "--exact") for q in queries(count, seed=9)]
    return {"default": many(rows), "exact": many(exact)}


WARM = """
import json, os, statistics, sys, time, resource
import memhtml
from bench.bench_search import queries
root, count, scoped = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def p50(v): return sorted(v)[len(v) // 2]
with memhtml.open(root, embedder="fake") as c:
    qs = queries(count + 5, seed=13)
    for q in qs[:5]:
        c.search(q)
    out = {}
    scopes = [("default", {})] + ([("type_semantic", {"type": ["semantic"]})] if scoped else [])
    for label, filters in scopes:
        wall, cpu, wall_e, cpu_e, agree, methods = [], [], [], [], [], set()
        # Both paths search the same query; whichever goes second finds the BM25 postings
        # of its terms already cached, so the order alternates: each path goes first on
        # half the queries (a fixed order made the second path look several times faster
        # at 1M, where fetching a common term's postings dominates a cold query).
        for i, q in enumerate(qs[5:]):
            for exact in ((False, True) if i % 2 == 0 else (True, False)):
                t, p = time.perf_counter(), time.process_time()
                r = c.search(q, explain=not exact, exact=exact, **filters)
                dt, dp = time.perf_counter() - t, time.process_time() - p
                if exact:
                    e = r; wall_e.append(dt); cpu_e.append(dp)
                else:
                    a = r; wall.append(dt); cpu.append(dp)
                    methods.add(a.vector_search["method"] if a.vector_search else None)
            want = {h.path for h in e.hits}
            agree.append(len(want & {h.path for h in a.hits}) / max(1, len(want)))
        out[label] = {
            "methods": sorted(m or "none" for m in methods),
            "wall_p50_ms": round(p50(wall) * 1000, 2),
            "cpu_p50_ms": round(p50(cpu) * 1000, 2),
            "exact_wall_p50_ms": round(p50(wall_e) * 1000, 2),
            "exact_cpu_p50_ms": round(p50(cpu_e) * 1000, 2),
            "agreement_at_10": round(statistics.fmean(agree), 4),
            "agreement_min": round(min(agree), 2),
        }
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))
"""


WARM_QUERIES = {"count": 100, "scoped": 1}


def step_search_warm(root: Path, n: int) -> dict[str, Any]:
    count, scoped = WARM_QUERIES["count"], WARM_QUERIES["scoped"]
    row = child([PY, "-c", WARM, str(root), str(count), str(scoped)], env=env(root))
    return {**strip(row), **json.loads(row["out"].strip().splitlines()[-1])}


MCP = """
import anyio, json, os, sys, time
from pathlib import Path
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from bench.bench_search import queries

root, count = sys.argv[1], int(sys.argv[2])

def server_status():
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\\0")
            # the server's own argv (this script's -c text names memhtml-mcp too)
            if int(entry.name) == os.getpid() or not any(
                a.endswith(b"/memhtml-mcp") for a in argv[:2]
            ) or root.encode() not in argv:
                continue
            text = (entry / "status").read_text()
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        hwm = [l for l in text.splitlines() if l.startswith("VmHWM")][0].split()[1]
        tick = os.sysconf("SC_CLK_TCK")
        return int(hwm) / 1024, (int(stat[11]) + int(stat[12])) / tick
    return None, None

async def main():
    server = StdioServerParameters(
        command=str(Path(sys.executable).with_name("memhtml-mcp")), args=["--repo", root],
        env={**os.environ, "MEMHTML_EMBED": "fake", "MEMHTML_LOG": "WARNING"},
    )
    lat, writes = [], []
    async with Client(server, cache=None, read_timeout_seconds=3600) as client:
        qs = queries(count + 3, seed=17)
        for q in qs[:3]:
            await client.call_tool("memory_search", {"query": q})
        _, cpu0 = server_status()
        for q in qs[3:]:
            t = time.perf_counter()
            await client.call_tool("memory_search", {"query": q})
            lat.append(time.perf_counter() - t)
        _, cpu1 = server_status()
        for i in range(3):
            t = time.perf_counter()
            r = await client.call_tool("memory_write", {
                "title": f"mcp probe {time.time_ns()} {i}", "memory_type": "semantic",
                "claim": f"The MCP probe {time.time_ns()} wrote memory {i}."})
            writes.append(time.perf_counter() - t)
            assert (r.structured_content or {}).get("ok"), r
        t = time.perf_counter()
        await client.call_tool("memory_search", {"query": "mcp probe wrote one memory"})
        after_write = time.perf_counter() - t
        peak, _ = server_status()
    lat.sort(); writes.sort()
    print(json.dumps({
        "server_peak_rss_mb": round(peak, 1),
        "search_p50_ms": round(lat[len(lat) // 2] * 1000, 2),
        "server_cpu_ms_per_search": round((cpu1 - cpu0) * 1000 / len(lat), 2),
        "write_p50_ms": round(writes[len(writes) // 2] * 1000, 1),
        "search_after_write_ms": round(after_write * 1000, 1),
    }))

anyio.run(main)
"""


def step_mcp(root: Path, n: int, count: int = 50) -> dict[str, Any]:
    row = child([PY, "-c", MCP, root.as_posix(), str(count)], env=env(root))
    return {**strip(row), **json.loads(row["out"].strip().splitlines()[-1])}


def step_doctor(root: Path, n: int) -> dict[str, Any]:
    return strip(cli(root, "doctor"))


def step_sleep(root: Path, n: int) -> dict[str, Any]:
    row = cli(root, "sleep", "run", MEMHTML_LLM="off")
    data = json.loads(row["out"]).get("data", {})
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "main"], check=False)
    return {**strip(row), "phases": len(data.get("phases", []) or [])}


def step_publish(root: Path, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=CACHE) as out:
        row = cli(root, "publish", "--out", out)
        files = sum(len(f) for _, _, f in os.walk(out))
    return {**strip(row), "files_written": files}


def run(n: int, steps: list[str]) -> dict[str, Any]:
    root = store(n)
    built = float((root / ".bench-built").read_text())
    result: dict[str, Any] = {"memories": n, "store_build_s": built}
    if not (root / ".memhtml" / "index.db").exists() and "first_embed" not in steps:
        steps = ["first_embed", *steps]
    for name in steps:
        fn = globals()[f"step_{name}"]
        print(f"{n}: {name} ...", file=sys.stderr, flush=True)
        result[name] = fn(root, n)
        print(f"{n}: {name} {json.dumps(result[name])}", file=sys.stderr, flush=True)
    return result


def main() -> None:
    from bench.common import machine

    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000, 1000000])
    parser.add_argument("--steps", nargs="+", default=STEPS, choices=STEPS)
    parser.add_argument("--warm-queries", type=int, default=100)
    parser.add_argument("--no-scoped", action="store_true", help="skip the scoped warm searches")
    args = parser.parse_args()
    WARM_QUERIES.update(count=args.warm_queries, scoped=0 if args.no_scoped else 1)
    target = RESULTS / "scale.json"
    for n in args.sizes:
        row = run(n, list(args.steps))
        # Re-read just before writing: runs of other sizes may have landed meanwhile.
        merged: dict[str, Any] = json.loads(target.read_text()) if target.exists() else {}
        merged["benchmark"] = "scale"
        entry = merged.setdefault("sizes", {}).setdefault(str(n), {})
        entry.update(row)
        entry["machine"] = machine()
        RESULTS.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(merged, indent=2) + "\n")
        print(json.dumps(entry, indent=2))


if __name__ == "__main__":
    main()
