"""Code mode: `exec` start-up (an empty script) and the type-census recipe at 300, 1k, 10k.

Reference (the original memhtml on a machine like this): a census over 1,012
files 1.8 s (2.7 s for the whole command); 305 claims and 410 edges in one
execution, census 598 ms. Targets: start-up under 100 ms; a census of 1k
memories under 0.5 s, of 10k under 3 s.

The in-process figure is `run_exec` from the call to the report: worker start,
commit pin, script, teardown. The CLI figure is a cold `memhtml exec` process
(Python start-up and the CLI's imports included). Each size's store is the
cached synthetic one (bench/stores.py), read at its commit through git's
object store.

    python -m bench.bench_exec [--sizes 300 1000 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import summary, timed, write_result
from bench.stores import cached_store
from memhtml.codemode import ExecLimits, run_exec
from memhtml.store.git import Git

EMPTY = "void 0"
# Recipe 1 of docs/code-mode.md.
CENSUS = """import { corpus } from "/workspace/lib/corpus.mjs"

const byType = {}
for (const memory of corpus().values()) {
  if (memory.memoryType === "") continue
  byType[memory.memoryType] = (byType[memory.memoryType] ?? 0) + 1
}
console.log(JSON.stringify(byType))
"""


def _cold_cli(root: Path, script: str) -> float:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", "exec", "--repo", str(root), "--script", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MEMHTML_EMBED": "off"},
    )
    elapsed = (time.perf_counter() - started) * 1000
    assert json.loads(proc.stdout)["data"]["exit_code"] == 0, proc.stdout
    return elapsed


def _cpu_ms(fn: Callable[[], object]) -> tuple[float, float]:
    """CPU ms of one call: this process (the host side), and its children (worker, git)."""
    before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    fn()
    after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = [
        (a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime) * 1000
        for a, b in zip(after, before, strict=True)
    ]
    return round(spent[0], 1), round(spent[1], 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    limits = ExecLimits(timeout_ms=120_000)
    load_at_start = os.getloadavg()
    rows = []
    for size in args.sizes:
        root = cached_store(size)
        git = Git(root)
        run_exec(git, EMPTY)  # the first run pays this process's imports, not the sandbox's
        startup, _ = timed(lambda git=git: run_exec(git, EMPTY), repeat=args.repeat)
        census_ms, report = timed(
            lambda git=git: run_exec(git, CENSUS, limits=limits), repeat=max(3, args.repeat // 2)
        )
        assert report.exit_code == 0, report.stderr
        counted = sum(json.loads(report.stdout).values())
        host_cpu, worker_cpu = _cpu_ms(lambda git=git: run_exec(git, CENSUS, limits=limits))
        cli_empty = [_cold_cli(root, EMPTY) for _ in range(3)]
        cli_census = [_cold_cli(root, CENSUS) for _ in range(3)]
        row = {
            "store_size": size,
            "memories_counted": counted,
            "files_read": report.files_read,
            "startup_in_process": summary(startup),
            "census_in_process": summary(census_ms),
            "census_guest_ms": report.duration_ms,
            "census_cpu_ms": {"host": host_cpu, "worker_and_git": worker_cpu},
            "cli_empty": summary(cli_empty),
            "cli_census": summary(cli_census),
        }
        rows.append(row)
        print(
            f"{size}: start-up p50 {row['startup_in_process']['p50_ms']} ms,"
            f" census p50 {row['census_in_process']['p50_ms']} ms ({counted} memories),"
            f" cold CLI census p50 {row['cli_census']['p50_ms']} ms",
            file=sys.stderr,
        )
    write_result(
        "exec",
        {
            "engine": "quickjs-ng (PyPI), worker process",
            "load_avg_at_start": load_at_start,
            "rows": rows,
            "reference": {
                "original_census_1012_files_s": 1.8,
                "original_command_1012_files_s": 2.7,
                "original_census_305_files_ms": 598,
                "target_startup_ms": 100,
                "target_census_1k_s": 0.5,
                "target_census_10k_s": 3.0,
            },
        },
    )


if __name__ == "__main__":
    main()
