"""Discrimination gate benchmark (a script, not a test).

Measures, on this machine:

* the fake-mode gate in process (`run_gate("fake")`), several runs, with the
  per-stage split (generate, write + commit, index, search);
* the fake-mode gate end to end as CI runs it, in a fresh process
  (`memhtml eval discriminate --mode fake`), interpreter start and imports included;
* the local-mode gate once (MiniLM; skip with --skip-local);
* fixture generation alone.

The target is a fake-mode gate under 3 s wall. The gate's verdict (MRR,
inversions) is recorded beside the timings so a speed-up that changes the
ranking shows up here too.

Usage: python bench/bench_gate.py [--runs 5] [--skip-local]
Prints a table and writes bench/results/gate.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memhtml.eval.fixture import generate_fixture
from memhtml.eval.gate import run_gate

RESULTS = Path(__file__).parent / "results" / "gate.json"
TARGET_S = 3.0


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
    }


def bench_in_process(mode: str, runs: int) -> dict[str, Any]:
    walls: list[float] = []
    stages: dict[str, list[float]] = {}
    last = None
    for _ in range(runs):
        started = time.perf_counter()
        last = run_gate(mode)
        walls.append(time.perf_counter() - started)
        for stage, seconds in last.timings.items():
            stages.setdefault(stage, []).append(seconds)
    assert last is not None
    return {
        "runs": runs,
        "wall_s": _summary(walls),
        "stages_s": {k: _summary(v) for k, v in stages.items()},
        "files": last.files,
        "probes": last.probes,
        "mrr": round(last.mrr or 0.0, 4),
        "inversions": last.inversions,
        "failing_probes": len(last.failing),
        "worst_margin": last.worst_margin,
        "passed": last.passed,
    }


def bench_cli(runs: int) -> dict[str, Any]:
    exe = Path(sys.executable).with_name("memhtml")
    command = [str(exe), "eval", "discriminate", "--mode", "fake", "--dense"]
    walls: list[float] = []
    code = None
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, check=False)
        walls.append(time.perf_counter() - started)
        code = proc.returncode
    return {"runs": runs, "command": " ".join(command[1:]), "wall_s": _summary(walls),
            "exit_code": code}  # fmt: skip


def bench_generate(runs: int) -> dict[str, float]:
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        generate_fixture(7, 300)
        walls.append(time.perf_counter() - started)
    return _summary(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_at_start": list(os.getloadavg()),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "target_fake_wall_s": TARGET_S,
        "generate_s": bench_generate(args.runs),
    }
    run_gate("fake", probes=1)  # warm imports and caches once, like a second CI step would
    fake = bench_in_process("fake", args.runs)
    results["fake_in_process"] = fake
    results["fake_cli"] = bench_cli(args.runs)
    if not args.skip_local:
        results["local_in_process"] = bench_in_process("local", 1)
    results["loadavg_at_end"] = list(os.getloadavg())
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    report(results)


def report(results: dict[str, Any]) -> None:
    """Print the table."""
    print(f"{'measure':34s} {'min':>7s} {'median':>7s} {'max':>7s}")
    gen = results["generate_s"]
    print(f"{'generate fixture (300 files)':34s} {gen['min']:7.3f} {gen['median']:7.3f}"
          f" {gen['max']:7.3f}")  # fmt: skip
    labels = {
        "fake_in_process": "fake gate, in process",
        "fake_cli": "fake gate, CLI fresh process",
        "local_in_process": "local gate, in process",
    }
    for key, label in labels.items():
        if key in results:
            wall = results[key]["wall_s"]
            print(f"{label:34s} {wall['min']:7.3f} {wall['median']:7.3f} {wall['max']:7.3f}")
    fake = results["fake_in_process"]
    for stage, s in fake["stages_s"].items():
        print(f"  fake stage {stage:23s} {s['min']:7.3f} {s['median']:7.3f} {s['max']:7.3f}")
    for key in ("fake_in_process", "local_in_process"):
        if key in results:
            row = results[key]
            print(f"{key.split('_')[0]}: MRR {row['mrr']}  inversions {row['inversions']}"
                  f"  failing probes {row['failing_probes']}  passed {row['passed']}")  # fmt: skip
    median = fake["wall_s"]["median"]
    verdict = "under" if median < TARGET_S else "OVER"
    print(f"fake-mode gate median {median}s: {verdict} the {TARGET_S}s target; wrote {RESULTS}")


if __name__ == "__main__":
    main()
