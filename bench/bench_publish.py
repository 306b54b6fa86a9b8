"""`memhtml publish` on the fixture corpus: render, first publish, no-op rerun, --out.

For each size, a fresh fixture corpus (`memhtml eval fixture --seed 7 --size N`)
is written and indexed, then timed in process with the fake embedder:

- render: `site_artifacts` alone (rows in, bytes out; median of `--rounds`);
- first: the first `publish` (render, hash, write and commit every file);
- rerun: `publish` again with nothing changed (median of `--rounds`; commits nothing);
- out: `publish --out` into an empty directory (the site plus a copy of every memory).

    python -m bench.bench_publish [--sizes 120,10000] [--rounds 3]

Prints a table and writes bench/results/publish.json (or `--name`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def measure(size: int, rounds: int, work: Path) -> dict[str, Any]:
    """The four timings and the site's size for one fixture of `size` files."""
    import memhtml
    from memhtml.eval.fixture import generate_fixture, write_fixture
    from memhtml.ops.publish import site_artifacts

    root = work / f"fixture-{size}"
    write_fixture(generate_fixture(7, size, "2026-01-01T00:00:00Z"), root)
    with memhtml.open(root, embedder="fake") as corpus:
        corpus.catch_up()
        renders = []
        for _ in range(rounds):
            started = time.perf_counter()
            artifacts = site_artifacts(corpus.conn)
            renders.append(_ms(started))
        started = time.perf_counter()
        first = corpus.publish()
        first_ms = _ms(started)
        reruns = []
        for _ in range(rounds):
            started = time.perf_counter()
            again = corpus.publish()
            reruns.append(_ms(started))
            assert again["commit_sha"] is None and again["written"] == 0
        started = time.perf_counter()
        out = corpus.publish(out=work / f"out-{size}")
        out_ms = _ms(started)
    return {
        "size": size,
        "memories": first["memories"],
        "generated_files": len(artifacts),
        "generated_mib": round(sum(map(len, artifacts.values())) / 2**20, 2),
        "views": sum(1 for p in artifacts if p.startswith("memhtml-view/")),
        "render_ms": statistics.median(renders),
        "first_publish_ms": first_ms,
        "noop_rerun_ms": statistics.median(reruns),
        "out_ms": out_ms,
        "out_copied": out["copied"],
    }


def main() -> None:
    """Run the sizes asked for, print a table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="120,10000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--name", default="publish")
    args = parser.parse_args()
    os.environ.setdefault("MEMHTML_EMBED", "fake")
    rows = []
    with tempfile.TemporaryDirectory(prefix="memhtml-bench-publish-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            rows.append(measure(size, args.rounds, Path(tmp)))
            r = rows[-1]
            print(
                f"fixture {r['size']:>6}: {r['generated_files']} files ({r['views']} views,"
                f" {r['generated_mib']} MiB); render {r['render_ms']} ms, first publish"
                f" {r['first_publish_ms']} ms, no-op rerun {r['noop_rerun_ms']} ms, --out"
                f" {r['out_ms']} ms ({r['out_copied']} copies)"
            )
    load = os.getloadavg()[0]
    result = {"load_average_1m": round(load, 2), "cpus": os.cpu_count(), "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"load average {load:.1f}; wrote {RESULTS / (args.name + '.json')}")


if __name__ == "__main__":
    main()
