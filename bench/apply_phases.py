"""Where the wall time of one apply goes: a timeline of its phases (issue 19).

Applies 1,000 synthetic writes into a fresh indexed copy of the 10k bench
store (as bench_store does) with the write door's steps wrapped in timers, and
prints, per run, when each step started and ended (ms from the call) and on
which thread, with the process's and its children's CPU seconds. The
wrappers cost microseconds per call, and only ~20 calls are wrapped (none per op).

    python -m bench.apply_phases [--size 10000] [--ops 1000] [--repeat 3]

Writes bench/results/apply-phases.json: every run's steps, plus the median
of each step's duration over the runs.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import write_result

# (module, attribute path, label): the door's steps in the order they run.
STEPS = (
    ("memhtml.ops.batch", "validate_ops", "validate ops"),
    ("memhtml.ops.write_door", "recover", "recover"),
    ("memhtml.ops.corpus", "Corpus.sync", "catch up"),
    ("memhtml.index.parallel", "ParsePool.__init__", "render pool"),
    ("memhtml.ops.writes", "Planner.render_ahead", "fork workers, submit renders"),
    ("memhtml.ops.write_door", "_plan_all", "plan (waits on renders)"),
    ("memhtml.index.parallel", "ParsePool.close", "stop render workers"),
    ("memhtml.ops.write_door", "commit_changes", "commit door"),
    ("memhtml.store.recovery", "begin", "journal"),
    ("memhtml.store.git", "Git.store_blobs", "start blob pack"),
    ("memhtml.store.files", "apply_changes", "write files"),
    ("memhtml.index.commit", "PendingIndex._prepare", "index rows (thread)"),
    ("memhtml.store.git", "Git.commit_paths", "git commit"),
    ("memhtml.index.commit", "PendingIndex._wait", "wait for index thread"),
    ("memhtml.index.commit", "PendingIndex.finish", "index commit"),
    ("memhtml.store.recovery", "end", "journal end"),
    ("memhtml.store.upkeep", "keep_in_shape", "object store check"),
)


class Timeline:
    """Wraps the steps once; records (label, thread, start, end) relative to `t0`."""

    def __init__(self) -> None:
        self.t0 = 0.0
        self.events: list[tuple[str, str, float, float]] = []
        for module, attr, label in STEPS:
            self._wrap(module, attr, label)

    def _wrap(self, module_name: str, attr: str, label: str) -> None:
        import importlib

        owner: Any = importlib.import_module(module_name)
        *parents, name = attr.split(".")
        for part in parents:
            owner = getattr(owner, part)
        fn = getattr(owner, name)
        events = self.events

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                events.append(
                    (label, threading.current_thread().name, started, time.perf_counter())
                )

        setattr(owner, name, timed)

    def steps(self) -> list[dict[str, Any]]:
        return [
            {
                "step": label,
                "thread": thread,
                "start_ms": round((s - self.t0) * 1000, 1),
                "end_ms": round((e - self.t0) * 1000, 1),
                "ms": round((e - s) * 1000, 1),
            }
            for label, thread, s, e in sorted(self.events, key=lambda ev: ev[2])
        ]


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def one_run(timeline: Timeline, size: int, n_ops: int) -> dict[str, Any]:
    import memhtml
    from bench.stores import fresh_copy
    from bench.synth import synth_ops

    with tempfile.TemporaryDirectory() as tmp:
        root = fresh_copy(size, Path(tmp) / "m")
        corpus = memhtml.open(root, embedder="off")
        corpus.index.rebuild(embed=False)
        corpus.indexer.settle()  # the rebuild's WAL checkpoint (on a thread) is set-up
        corpus.apply(synth_ops(1, seed=9, offset=30_000_000))
        ops = synth_ops(n_ops, seed=2, offset=10_000_000)
        timeline.events.clear()
        load = os.getloadavg()[0]
        cpu0, kids0 = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        timeline.t0 = time.perf_counter()
        outcome = corpus.apply(ops)
        wall = time.perf_counter() - timeline.t0
        cpu, kids = _cpu(resource.RUSAGE_SELF) - cpu0, _cpu(resource.RUSAGE_CHILDREN) - kids0
        assert outcome.summary()["written"] == n_ops, outcome.summary()
        corpus.close()
    return {
        "wall_ms": round(wall * 1000, 1),
        "cpu_s": round(cpu, 3),
        "children_cpu_s": round(kids, 3),
        "load_avg_1m": round(load, 2),
        "steps": timeline.steps(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    timeline = Timeline()
    runs = []
    for _ in range(args.repeat):
        run = one_run(timeline, args.size, args.ops)
        runs.append(run)
        print(
            f"apply {args.ops} into {args.size}: {run['wall_ms']:.0f} ms"
            f" (cpu {run['cpu_s']} s + children {run['children_cpu_s']} s;"
            f" load {run['load_avg_1m']})",
            file=sys.stderr,
        )
        for step in run["steps"]:
            print(
                f"  {step['start_ms']:7.0f} {step['end_ms']:7.0f} {step['ms']:6.0f}"
                f"  {step['thread'][:13]:13} {step['step']}",
                file=sys.stderr,
            )
    labels = dict.fromkeys(s["step"] for r in runs for s in r["steps"])
    medians = {
        label: round(
            statistics.median(sum(s["ms"] for s in r["steps"] if s["step"] == label) for r in runs),
            1,
        )
        for label in labels
    }
    write_result(
        "apply-phases",
        {
            "store_size": args.size,
            "ops": args.ops,
            "wall_ms_median": round(statistics.median(r["wall_ms"] for r in runs), 1),
            "step_ms_median": medians,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
