"""Warm search and cold write, interleaved, for two source trees of memhtml (an A/B).

Each tree gets its own copy of the cached synthetic store, indexed and embedded
(fake embedder) by that tree's own code, since two builds may differ in
schema. Then, round after round, each tree in turn (alternating which goes
first, so a change in the machine's load falls on both):

* warm search: one process opens the store, searches 5 queries to warm up,
  then times `--searches` queries (p50, p95 in ms);
* cold write: `--writes` CLI processes `memhtml write` per tree, one of each
  in turn (MEMHTML_EMBED=fake, so the vector-space check and the embedding
  of the new chunk are on the path), timed from the outside.

Beside each wall time, the CPU time (the search process's, the write process's
with its children such as git): on a shared machine it moves far less with the
load than the wall time does.

    python -m bench.hotpath_ab --base /tmp/base-checkout [--n 10000] [--rounds 5]

`--base` is a checkout of the other commit (`git worktree add /tmp/base <commit>`);
the other side is this checkout. Prints both sides' medians and writes
bench/results/hotpath-ab.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import write_result
from bench.stores import CACHE, fresh_copy

HERE = Path(__file__).resolve().parents[1]
WARM = """
import json, random, sys, time
import memhtml
from bench.synth import SERVICES, THINGS, VERBS
rng = random.Random(5)
qs = [f"{rng.choice(SERVICES)} {rng.choice(THINGS)} {rng.choice(VERBS)}" for _ in range(__N__)]
with memhtml.open(sys.argv[1], embedder="fake") as c:
    for q in qs[:5]:
        c.search(q)
    times, cpu, degraded = [], [], 0
    for q in qs:
        t, p = time.perf_counter(), time.process_time()
        r = c.search(q)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - p) * 1000)
        degraded += int(r.degraded)
print(json.dumps({"times": times, "cpu": cpu, "degraded": degraded}))
"""


def env_for(tree: Path, root: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "MEMHTML_EMBED": "fake"}
    if root is not None:
        env["MEMHTML_ROOT"] = str(root)
    return env


def prepare(tree: Path, label: str, n: int) -> Path:
    root = CACHE / f"ab-{label}-{n}"
    if root.exists():
        shutil.rmtree(root)
    fresh_copy(n, root)
    code = (
        "import sys, memhtml\n"
        "with memhtml.open(sys.argv[1], embedder='fake') as c:\n"
        "    c.index.rebuild(embed=True, force=True)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(root)], env=env_for(tree), check=True, cwd=tree)
    return root


def warm(tree: Path, root: Path, searches: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", WARM.replace("__N__", str(searches)), str(root)],
        env=env_for(tree),
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    times = sorted(data["times"])
    return {
        "p50_ms": statistics.median(times),
        "p95_ms": times[int(0.95 * (len(times) - 1))],
        "cpu_p50_ms": statistics.median(data["cpu"]),
        "degraded": data["degraded"],
    }


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def cold_writes(tree: Path, root: Path, writes: int, start: int) -> list[tuple[float, float]]:
    """(wall ms, CPU ms of the process and its children such as git) per write."""
    times = []
    for i in range(start, start + writes):
        argv = [sys.executable, "-m", "memhtml.cli", "write", "--type", "semantic"]
        argv += ["--title", f"A/B write {i}", "--claim", f"The A/B write number {i} landed."]
        t, cpu = time.perf_counter(), _children_cpu_ms()
        done = subprocess.run(
            [*argv, "--dense"],
            env=env_for(tree, root),
            capture_output=True,
            text=True,
            cwd=tree,
            check=False,
        )
        times.append(((time.perf_counter() - t) * 1000, _children_cpu_ms() - cpu))
        if done.returncode != 0:
            raise SystemExit(f"cold write failed in {tree}: {done.stdout} {done.stderr}")
    return times


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.hotpath_ab", description=__doc__)
    p.add_argument("--base", type=Path, required=True, help="checkout of the other commit")
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--searches", type=int, default=200)
    p.add_argument("--writes", type=int, default=10)
    args = p.parse_args(argv)
    trees = {"base": args.base.resolve(), "head": HERE}
    for tree in trees.values():
        # A fresh checkout has no bytecode, and PYTHONDONTWRITEBYTECODE keeps it so: every
        # cold process would compile memhtml from source (~90 ms of CPU a write here).
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(tree / "memhtml"), str(tree / "bench")],
            check=True,
            env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        )
    roots = {label: prepare(tree, label, args.n) for label, tree in trees.items()}
    got: dict[str, dict[str, list[float]]] = {
        label: {"warm_p50": [], "warm_p95": [], "warm_cpu": [], "cold_write": [], "cold_cpu": []}
        for label in trees
    }
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for label in order:
            w = warm(trees[label], roots[label], args.searches)
            assert w["degraded"] == 0, f"{label}: degraded searches"
            got[label]["warm_p50"].append(w["p50_ms"])
            got[label]["warm_p95"].append(w["p95_ms"])
            got[label]["warm_cpu"].append(w["cpu_p50_ms"])
        for i in range(args.writes):  # one write each in turn, the first alternating
            for label in order if i % 2 == 0 else list(reversed(order)):
                for wall, cpu in cold_writes(trees[label], roots[label], 1, r * args.writes + i):
                    got[label]["cold_write"].append(wall)
                    got[label]["cold_cpu"].append(cpu)
    summary = {
        label: {
            "warm_search_p50_ms": round(statistics.median(v["warm_p50"]), 3),
            "warm_search_p95_ms": round(statistics.median(v["warm_p95"]), 3),
            "warm_search_p50_by_round": [round(x, 3) for x in v["warm_p50"]],
            "warm_search_cpu_p50_ms": round(statistics.median(v["warm_cpu"]), 3),
            "cold_write_p50_ms": round(statistics.median(v["cold_write"]), 1),
            "cold_write_cpu_p50_ms": round(statistics.median(v["cold_cpu"]), 1),
            "cold_write_p95_ms": round(
                sorted(v["cold_write"])[int(0.95 * (len(v["cold_write"]) - 1))], 1
            ),
            "cold_writes": len(v["cold_write"]),
        }
        for label, v in got.items()
    }
    data = {
        "memories": args.n,
        "embedder": "fake",
        "rounds": args.rounds,
        "searches_per_round": args.searches,
        "writes_per_round": args.writes,
        "base": str(trees["base"]),
        "results": summary,
    }
    write_result("hotpath-ab", data)
    return data


if __name__ == "__main__":
    main()
