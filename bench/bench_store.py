"""Write throughput: sequential writes and one apply of N ops, into 1k and 10k stores.

Reference (the original memhtml on a machine like this, embeddings off):
apply of 1,000 ops into an empty store 2.3 s, 9,000 more 18.2 s, a single cold
`write` 0.55 s. Targets: apply of 1,000 ops into a 10k store <= 2 s, a single
cold write <= 0.3 s, per-op cost flat from 1k to 10k.

    python -m bench.bench_store [--sizes 1000 10000] [--ops 1000] [--writes 50]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import memhtml
from bench.common import summary, timed, write_result
from bench.synth import build_store, synth_ops


def cold_cli_write(root: Path, i: int) -> float:
    env = {**os.environ, "MEMHTML_ROOT": str(root), "MEMHTML_EMBED": "off"}
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--cold", type=int, default=10)
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            root = build_store(Path(tmp) / "m", size, seed=1)
            corpus = memhtml.open(root, embedder="off")
            corpus.index.rebuild(embed=False)
            # One op first: the op models' import (pydantic, ~0.2 s) is a start-up
            # cost, reported with the cold CLI write below, not a per-op one.
            corpus.apply(synth_ops(1, seed=9, offset=30_000_000))
            ops = synth_ops(args.ops, seed=2, offset=10_000_000)
            apply_ms, outcome = timed(lambda ops=ops, c=corpus: c.apply(ops))
            assert outcome.summary()["written"] == args.ops, outcome.summary()
            writes = synth_ops(args.writes, seed=3, offset=20_000_000)
            seq = [
                timed(lambda w=w, c=corpus: c.write(**{k: v for k, v in w.items() if k != "op"}))[
                    0
                ][0]
                for w in writes
            ]
            corpus.close()
            cold = [cold_cli_write(root, i) for i in range(args.cold)]
            rows.append(
                {
                    "store_size": size,
                    "apply_ops": args.ops,
                    "apply_total_ms": round(apply_ms[0], 1),
                    "apply_ms_per_op": round(apply_ms[0] / args.ops, 3),
                    "sequential_write": summary(seq),
                    "cold_cli_write": summary(cold),
                }
            )
            print(
                f"store {size}: apply {args.ops} ops {apply_ms[0]:.0f} ms"
                f" ({apply_ms[0] / args.ops:.2f} ms/op); write p50 {summary(seq)['p50_ms']} ms;"
                f" cold CLI write p50 {summary(cold)['p50_ms']} ms",
                file=sys.stderr,
            )
    write_result(
        "store",
        {
            "embedder": "off",
            "rows": rows,
            "reference": {
                "original_apply_1000_into_empty_s": 2.3,
                "original_apply_9000_more_s": 18.2,
                "original_cold_write_s": 0.55,
                "target_apply_1000_into_10k_s": 2.0,
                "target_cold_write_s": 0.3,
            },
        },
    )


if __name__ == "__main__":
    main()
