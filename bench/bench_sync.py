"""`memhtml sync`: 1,000 new remote memories into a 10k clone.

Setup (not timed): a bare remote holding the cached synthetic store of N
memories; clone B (`init --clone`), indexed with the fake embedder; clone A
writes M new memories in one `apply` batch and syncs them to the remote. Then,
timed in a child process, B runs `sync` (exactly what `memhtml sync` calls):
fetch, fast-forward, fold check, index catch-up with embedding of the new
memories. The index's share is the time inside `Corpus.sync` (the catch-up).
Target: under 5 s for M = 1,000 into N = 10,000.

    python -m bench.bench_sync [--size 10000] [--new 1000] [--embedder fake|off]
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
from bench.stores import cached_store

# Wraps memhtml.store.incoming.check to time it (the check of what a remote brings).
TIME_CHECK = """
import time
from memhtml.store import incoming
checked = []
_check = incoming.check
def _timed_check(*a, **k):
    t = time.perf_counter()
    try:
        return _check(*a, **k)
    finally:
        checked.append((time.perf_counter() - t) * 1000)
incoming.check = _timed_check
"""

CLONE = (
    TIME_CHECK
    + """
import sys, memhtml
from memhtml.ops.sync import clone
clone(sys.argv[1], __import__("pathlib").Path(sys.argv[2]))
c = memhtml.open(sys.argv[2], embedder=sys.argv[3])
c.index.rebuild(embed=sys.argv[3] != "off", progress=False)
print(sum(checked))
"""
)

WRITE = """
import sys, memhtml
from bench.synth import synth_ops
from memhtml.ops.sync import sync
c = memhtml.open(sys.argv[1], embedder=sys.argv[2])
c.apply(synth_ops(int(sys.argv[3]), seed=9, offset=10_000_000))
sync(c)
"""

SYNC = (
    TIME_CHECK
    + """
import json, sys, time, memhtml
from memhtml.ops.corpus import Corpus
from memhtml.ops.sync import sync
spent = []
original = Corpus.sync
def timed(self, *a, **k):
    t = time.perf_counter()
    try:
        return original(self, *a, **k)
    finally:
        spent.append((time.perf_counter() - t) * 1000)
Corpus.sync = timed
c = memhtml.open(sys.argv[1], embedder=sys.argv[2])
t = time.perf_counter()
cpu = time.process_time()
out = sync(c)
wall = (time.perf_counter() - t) * 1000
cpu = (time.process_time() - cpu) * 1000
print(json.dumps({"wall_ms": wall, "cpu_ms": cpu, "index_ms": sum(spent), "mode": out["mode"],
                  "received": out["received"], "files": out["files"],
                  "check_ms": sum(checked)}))
"""
)


def _child(script: str, *args: str) -> str:
    env = {**os.environ, "MEMHTML_LLM": "off", "MEMHTML_NOW": "2026-03-02T09:00:00Z"}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return out.stdout


def measure(size: int, new: int, embedder: str) -> dict[str, Any]:
    """One sync of `new` remote memories into a clone of `size`."""
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / "remote.git"
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(cached_store(size)), str(bare)],
            check=True,
            capture_output=True,
        )
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        _child(CLONE, str(bare), str(a), "off")
        clone_check_ms = float(_child(CLONE, str(bare), str(b), embedder).split()[-1])
        _child(WRITE, str(a), "off", str(new))
        got = json.loads(_child(SYNC, str(b), embedder))
    return {
        "memories": size,
        "new_remote_memories": new,
        "embedder": embedder,
        "wall_ms": round(got["wall_ms"], 1),
        "index_ms": round(got["index_ms"], 1),
        "index_share": round(got["index_ms"] / got["wall_ms"], 3),
        # the check of the incoming commits (memhtml.store.incoming), inside wall_ms
        "check_ms": round(got["check_ms"], 1),
        # the same check of the whole history by `init --clone` of the `size` store
        "clone_check_ms": round(clone_check_ms, 1),
        # this process only: parse workers and git run in children
        "cpu_ms": round(got["cpu_ms"], 1),
        "mode": got["mode"],
        "received_commits": got["received"],
        "files": got["files"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--new", type=int, default=1000)
    parser.add_argument("--embedder", default="fake", choices=("fake", "off"))
    args = parser.parse_args()
    row = measure(args.size, args.new, args.embedder)
    print(
        f"sync of {row['new_remote_memories']} new memories into a {row['memories']} clone:"
        f" {row['wall_ms'] / 1000:.2f} s, index {row['index_ms'] / 1000:.2f} s"
        f" ({row['index_share']:.0%}), incoming check {row['check_ms']:.0f} ms"
        f" (a clone's {row['clone_check_ms']:.0f} ms), {row['mode']}",
        file=sys.stderr,
    )
    write_result("sync", {"target_ms": 5000, "rows": [row]})


if __name__ == "__main__":
    main()
