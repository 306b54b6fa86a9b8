"""Campaigns on Ray against serial: the local cluster's start-up and an 8-cell campaign's wall time.

    python -m bench.bench_campaign [--data locomo10.json] [--conversations 3] [--workers 2]
        [--startups 3] [--tag TAG]

1. Start-up: a local Ray cluster of ``--workers`` CPUs is started and stopped
   ``--startups`` times: ``ray.init`` seconds, the first trivial task (a
   worker process is spawned), the first task that imports the harness code
   on every worker, and ``ray.shutdown``.
2. Campaign: LoCoMo (the first ``--conversations`` conversations, fake
   embedder, format plain) x 8 settings = 8 cells of the same size, run
   serially and then with ``--ray`` (a fresh local cluster of ``--workers``)
   into fresh folders, ``--rounds`` times in turn (the machine's load drifts
   within minutes). Each run also sums the CPU seconds its cells used
   (their processes and git), which the load does not inflate the way it
   inflates wall time. The Ray wall time includes starting and stopping
   the cluster. The two folders' cell files must hold the same rows (the
   measured latency column aside): the run fails otherwise.

The machine is shared: each figure carries the 1-minute load average at its
start and end, and the JSON (``bench/results/campaign[-TAG].json``) the CPU
count. The target (issue 35) is Ray wall <= 0.6 x serial on 2 workers.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import common as h

SETTINGS: tuple[dict[str, Any], ...] = (
    {"name": "production"},
    {"name": "plain-rrf", "weights": "fts=1,vector=1,recency=0,salience=0"},
    {"name": "fts-only", "weights": "fts=1,vector=0,recency=0,salience=0"},
    {"name": "vector-only", "weights": "fts=0,vector=1,recency=0,salience=0"},
    {"name": "no-recency", "weights": "recency=0"},
    {"name": "k60", "k": 60},
    {"name": "no-mmr", "mmr_lambda": 1.0},
    {"name": "fts2", "weights": "fts=2"},
)


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _touch_harness(_: int) -> int:
    """A task that imports the harness code (what a cell's first task pays on a new worker);
    it holds its worker a moment, so that every worker gets one."""
    import bench.harness.locomo  # noqa: F401

    time.sleep(0.5)
    return os.getpid()


def startup(workers: int, times: int) -> list[dict[str, Any]]:
    """Seconds to start a local cluster, run a first task, warm every worker, stop it."""
    from memhtml.analysis.fanout import RayCluster

    out = []
    for _ in range(times):
        row: dict[str, Any] = {"load_start": _load()}
        t0 = time.perf_counter()
        ex = RayCluster(workers=workers, pythonpath=[h.REPO_ROOT])
        row["init_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        ex.map(abs, [1])
        row["first_task_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        pids = ex.map(_touch_harness, list(range(workers)))
        row["warm_workers_s"] = round(time.perf_counter() - t0, 3)
        row["worker_processes"] = len(set(pids))
        t0 = time.perf_counter()
        ex.close()
        row["shutdown_s"] = round(time.perf_counter() - t0, 3)
        row["load_end"] = _load()
        out.append(row)
        print(f"start-up: {row}")
    return out


def write_spec(folder: Path, data: Path, conversations: int) -> Path:
    spec = {
        "name": "bench-locomo-8",
        "baseline": "production",
        "embedder": "fake",
        "datasets": [
            {
                "name": f"locomo-{conversations}conv",
                "harness": "locomo",
                "data": str(data),
                "args": ["--limit-conversations", str(conversations)],
            }
        ],
        "settings": list(SETTINGS),
    }
    path = folder / "spec.json"
    path.write_text(json.dumps(spec, indent=1))
    return path


def timed_campaign(spec: Path, out: Path, ray: str | None, workers: int) -> dict[str, Any]:
    """One whole campaign run (executor start and stop included)."""
    from bench.harness import campaign
    from memhtml.analysis import campaign as cp
    from memhtml.analysis.fanout import executor_for

    row: dict[str, Any] = {"executor": "ray" if ray else "serial", "load_start": _load()}
    t0 = time.perf_counter()
    with executor_for(ray, workers=workers, pythonpath=[h.REPO_ROOT]) as ex:
        row["executor_start_s"] = round(time.perf_counter() - t0, 3)
        report, _ = campaign.run(spec, out, ex, quiet=True)
        t1 = time.perf_counter()
    row["executor_stop_s"] = round(time.perf_counter() - t1, 3)
    row["wall_s"] = round(time.perf_counter() - t0, 3)
    row["campaign_s"] = round(report.seconds, 3)
    row["cells"] = len(report.computed)
    row["failed"] = report.failed
    row["load_end"] = _load()
    metas = [cp.CampaignFolder(out).cell_meta(cid) or {} for cid in report.computed]
    row["cell_s"] = [m.get("seconds") for m in metas]
    row["cell_cpu_s"] = round(sum(m.get("info", {}).get("cpu_s", 0.0) for m in metas), 2)
    print(f"campaign: {row}")
    if report.failed:
        raise SystemExit(f"cells failed: {report.failed}")
    return row


def same_rows(a: Path, b: Path) -> int:
    import polars as pl

    files_a = sorted((a / "cells").glob("*.parquet"))
    names_b = {p.name for p in (b / "cells").glob("*.parquet")}
    if {p.name for p in files_a} != names_b:
        raise SystemExit("the serial and Ray runs planned different cells")
    for f in files_a:
        x = pl.read_parquet(f).drop("latency_ms")
        y = pl.read_parquet(b / "cells" / f.name).drop("latency_ms")
        if not x.equals(y):
            raise SystemExit(f"cell {f.stem}: the Ray rows differ from the serial rows")
    return len(files_a)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.bench_campaign", description=__doc__)
    p.add_argument("--data", type=Path, default=None, help="locomo10.json")
    p.add_argument("--conversations", type=int, default=3, help="LoCoMo conversations per cell")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--startups", type=int, default=3)
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="serial, Ray, serial, Ray... (each round into fresh folders): the load drifts",
    )
    p.add_argument("--tag", default=None)
    p.add_argument("--out-dir", type=Path, default=h.RESULTS_DIR)
    args = p.parse_args(argv)
    data = h.data_path(args.data, "locomo", "locomo10.json")
    result: dict[str, Any] = {
        "benchmark": "campaign",
        "memhtml": h.git_commit(),
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "dataset": {"path": str(data), "sha256": h.sha256_of(data)},
        "cell": f"LoCoMo, first {args.conversations} conversations, format plain, fake embedder",
        "settings": [s["name"] for s in SETTINGS],
    }
    result["startup"] = startup(args.workers, args.startups)
    rounds = []
    with tempfile.TemporaryDirectory(prefix="memhtml-bench-campaign-") as tmp:
        spec = write_spec(Path(tmp), data, args.conversations)
        for r in range(args.rounds):
            serial = timed_campaign(spec, Path(tmp) / f"serial{r}", None, args.workers)
            ray = timed_campaign(spec, Path(tmp) / f"ray{r}", "local", args.workers)
            same = same_rows(Path(tmp) / f"serial{r}", Path(tmp) / f"ray{r}")
            rounds.append(
                {
                    "serial": serial,
                    "ray": ray,
                    "identical_cells": same,
                    "ratio_wall": round(ray["wall_s"] / serial["wall_s"], 3),
                    "ratio_campaign_only": round(ray["campaign_s"] / serial["campaign_s"], 3),
                }
            )
            print(f"round {r}: ray / serial wall {rounds[-1]['ratio_wall']}")
    result["rounds"] = rounds
    result["serial"], result["ray"] = rounds[0]["serial"], rounds[0]["ray"]
    result["identical_cells"] = rounds[0]["identical_cells"]
    result["ratio_wall"] = rounds[0]["ratio_wall"]
    result["ratio_campaign_only"] = rounds[0]["ratio_campaign_only"]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    name = f"campaign-{args.tag}.json" if args.tag else "campaign.json"
    (args.out_dir / name).write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"ray / serial wall: {result['ratio_wall']} (campaign only:"
        f" {result['ratio_campaign_only']}); wrote {args.out_dir / name}"
    )
    return result


if __name__ == "__main__":
    main()
