"""The vector scan's product on one thread against split over threads (embed.blas.split_matvec).

Random float32 matrices of 384 columns (the local model's width) at 10k and
100k rows, the sizes the search bench scans. The two are run in turn, so
both see the same load, and every split answer is checked to be
bit-identical to the one product. OpenBLAS runs on one thread, as in the CLI
(bench.common sets it). Prints figures and writes bench/results/split_scan.json.

    python -m bench.split_scan [--rows 10000 100000] [--repeat 200]
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from bench.common import summary, timed, write_result


def measure(rows: int, repeat: int) -> dict[str, Any]:
    import numpy as np

    from memhtml.embed.blas import split_matvec, thread_budget

    rng = np.random.default_rng(rows)
    matrix = rng.standard_normal((rows, 384)).astype(np.float32)
    vector = rng.standard_normal(384).astype(np.float32)
    one: list[float] = []
    split: list[float] = []
    for _ in range(repeat):  # in turn, so drifting load hits both alike
        times, expected = timed(lambda: matrix @ vector)
        one += times
        times, got = timed(lambda: split_matvec(matrix, vector))
        split += times
        if not np.array_equal(got, expected):
            raise SystemExit(f"split scan differs from one product at {rows} rows")
    row = {
        "rows": rows,
        "parts": thread_budget(),
        "one_thread": summary(one),
        "split": summary(split),
        "load_avg": os.getloadavg()[0],
    }
    print(
        f"{rows} x 384: one thread p50 {row['one_thread']['p50_ms']} ms, "
        f"split over {row['parts']} p50 {row['split']['p50_ms']} ms (load {row['load_avg']:.2f})"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    write_result("split_scan", {"rows": [measure(n, args.repeat) for n in args.rows]})


if __name__ == "__main__":
    main()
