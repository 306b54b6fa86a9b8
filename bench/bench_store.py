"""Write throughput: one apply of N ops, sequential writes, cold CLI writes, into 1k and 10k stores.

Reference (the original memhtml on a machine like this, embeddings off):
apply of 1,000 ops into an empty store 2.3 s, 9,000 more 18.2 s, a single
cold `write` 0.55 s. Targets (issue 19): apply of 1,000 ops into a 10k store
<= 1.0 s, a single cold `write` <= 0.25 s at 1k and at 10k, per-op cost flat
from 1k to 10k.

Each apply runs on a fresh copy of the cached synthetic store (bench/stores.py),
indexed, after one warm-up op (the op code's first use is a start-up cost,
reported with the cold CLI write). Wall time is the figure; the process's and
its child processes' CPU seconds (git, render workers) are printed beside it, since they move less
with the machine's load.

    python -m bench.bench_store [--sizes 1000 10000] [--ops 1000] [--writes 50]
        [--cold 10] [--repeat 3] [--cold-only | --apply-only]

`--cold-only` times the cold CLI writes alone (and counts their git
processes), into bench/results/store-cold.json. `--apply-only` times the
applies alone (no sequential or cold writes), into
bench/results/store-apply.json; `python -m bench.apply_phases` shows where an
apply's time goes.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import memhtml
from bench.common import summary, timed, write_result
from bench.stores import fresh_copy
from bench.synth import synth_ops


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold_cli_write(root: Path, i: int, trace: Path | None = None) -> float:
    env = {**os.environ, "MEMHTML_ROOT": str(root), "MEMHTML_EMBED": "off"}
    if trace is not None:
        env["GIT_TRACE"] = str(trace)
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "memhtml.cli",
            "write",
            "--title",
            f"Cold write {i}",
            "--type",
            "semantic",
            "--claim",
            f"Cold write number {i} lands.",
            "--dense",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    return (time.perf_counter() - started) * 1000


def git_processes(root: Path, tmp: Path) -> int:
    """How many git processes one cold CLI `write` runs (from GIT_TRACE)."""
    trace = tmp / "git-trace"
    cold_cli_write(root, 999_999, trace)
    lines = trace.read_text(encoding="utf-8", errors="replace").splitlines()
    return sum(1 for line in lines if "trace: built-in: git" in line)


def one_apply(size: int, n_ops: int, tmp: Path) -> dict[str, Any]:
    """Apply `n_ops` writes to a fresh indexed copy of the `size` store: wall and CPU."""
    root = fresh_copy(size, tmp / "m")
    corpus = memhtml.open(root, embedder="off")
    corpus.index.rebuild(embed=False)
    corpus.indexer.settle()  # the rebuild's WAL checkpoint (on a thread) is set-up, not apply
    # One op first: the op code's first use is a start-up cost, not a per-op one.
    corpus.apply(synth_ops(1, seed=9, offset=30_000_000))
    ops = synth_ops(n_ops, seed=2, offset=10_000_000)
    cpu0, kids0 = time.process_time(), _children_cpu()
    wall, outcome = timed(lambda: corpus.apply(ops))
    cpu, kids = time.process_time() - cpu0, _children_cpu() - kids0
    assert outcome.summary()["written"] == n_ops, outcome.summary()
    return {
        "root": root,
        "corpus": corpus,
        "wall_ms": wall[0],
        "cpu_s": cpu,
        "children_cpu_s": kids,
    }


def cold_only(sizes: list[int], n: int) -> None:
    """The cold CLI `write` row alone (issue 19): p50 of `n` writes into an indexed copy."""
    rows = []
    for size in sizes:
        loads = [os.getloadavg()[0]]
        with tempfile.TemporaryDirectory() as tmp:
            root = fresh_copy(size, Path(tmp) / "m")
            corpus = memhtml.open(root, embedder="off")
            corpus.index.rebuild(embed=False)
            corpus.close()
            cold_cli_write(root, -1)  # the first write after a copy reads a cold page cache
            cold: list[float] = []
            cpu: list[float] = []  # the CLI process's and its git processes' CPU
            for i in range(n):
                kids = _children_cpu()
                cold.append(cold_cli_write(root, i))
                cpu.append((_children_cpu() - kids) * 1000)
            git_count = git_processes(root, Path(tmp))
        loads.append(os.getloadavg()[0])
        row = {
            "store_size": size,
            "cold_cli_write": summary(cold),
            "cold_cli_write_min_ms": round(min(cold), 3),
            "cold_cli_write_cpu": summary(cpu),
            "cold_cli_write_git_processes": git_count,
            "load_avg_1m": [round(x, 2) for x in loads],
        }
        rows.append(row)
        print(
            f"store {size}: cold CLI write p50 {summary(cold)['p50_ms']} ms"
            f" (min {row['cold_cli_write_min_ms']} ms; CPU with git p50"
            f" {summary(cpu)['p50_ms']} ms; {git_count} git processes);"
            f" load {row['load_avg_1m']}",
            file=sys.stderr,
        )
    write_result(
        "store-cold",
        {"embedder": "off", "rows": rows, "reference": {"target_cold_write_s": 0.25}},
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--cold", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3, help="applies per size (median)")
    parser.add_argument(
        "--cold-only",
        action="store_true",
        help="only the cold CLI writes and their git processes (no apply, no warm writes)",
    )
    parser.add_argument(
        "--apply-only",
        action="store_true",
        help="only the applies (no sequential or cold writes), into store-apply.json",
    )
    args = parser.parse_args()
    if args.apply_only:
        args.writes = args.cold = 0
    if args.cold_only:
        cold_only(args.sizes, args.cold)
        return
    rows = []
    for size in args.sizes:
        loads = [os.getloadavg()[0]]
        applies: list[dict[str, Any]] = []
        seq: list[float] = []
        cold: list[float] = []
        git_count = 0
        for rep in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                run = one_apply(size, args.ops, Path(tmp))
                corpus = run.pop("corpus")
                root = run.pop("root")
                applies.append(run)
                if rep == 0 and args.writes:
                    writes = synth_ops(args.writes, seed=3, offset=20_000_000)
                    seq = [
                        timed(
                            lambda w=w, c=corpus: c.write(
                                **{k: v for k, v in w.items() if k != "op"}
                            )
                        )[0][0]
                        for w in writes
                    ]
                corpus.close()
                if rep == 0 and args.cold:
                    cold = [cold_cli_write(root, i) for i in range(args.cold)]
                    git_count = git_processes(root, Path(tmp))
            loads.append(os.getloadavg()[0])
        wall = statistics.median(a["wall_ms"] for a in applies)
        row = {
            "store_size": size,
            "apply_ops": args.ops,
            "apply_total_ms": round(wall, 1),
            "apply_ms_per_op": round(wall / args.ops, 3),
            "apply_runs_ms": [round(a["wall_ms"], 1) for a in applies],
            "apply_cpu_s": round(statistics.median(a["cpu_s"] for a in applies), 3),
            "apply_children_cpu_s": round(
                statistics.median(a["children_cpu_s"] for a in applies), 3
            ),
            "sequential_write": summary(seq),
            "cold_cli_write": summary(cold),
            "cold_cli_write_git_processes": git_count,
            "load_avg_1m": [round(x, 2) for x in loads],
        }
        rows.append(row)
        print(
            f"store {size}: apply {args.ops} ops median {wall:.0f} ms"
            f" ({wall / args.ops:.2f} ms/op; runs {row['apply_runs_ms']};"
            f" cpu {row['apply_cpu_s']} s + children {row['apply_children_cpu_s']} s);"
            f" write p50 {summary(seq)['p50_ms']} ms;"
            f" cold CLI write p50 {summary(cold)['p50_ms']} ms ({git_count} git processes);"
            f" load {row['load_avg_1m']}",
            file=sys.stderr,
        )
    write_result(
        "store-apply" if args.apply_only else "store",
        {
            "embedder": "off",
            "rows": rows,
            "reference": {
                "original_apply_1000_into_empty_s": 2.3,
                "original_apply_9000_more_s": 18.2,
                "original_cold_write_s": 0.55,
                "target_apply_1000_into_10k_s": 1.0,
                "target_cold_write_s": 0.25,
            },
        },
    )


if __name__ == "__main__":
    main()
