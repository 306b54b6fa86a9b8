"""Which approximate-nearest-neighbour library backs the vector arm: measured here.

Each candidate builds an index over the same vectors (an indexed bench store's
memory-mapped matrix, fake embedder, 384 dimensions) in a subprocess of its own,
so the peak memory is its own; then it answers the bench queries. Figures per
library: build time (wall and CPU), peak resident memory above the loaded
vectors, index file size, save / cold open (memory-mapped where the library can),
query latency on one thread, recall@10 and recall@160 (the vector arm's
over-fetch) against the exact scan (a hit counts when its exact cosine reaches
the k-th exact one, so ties cannot count against a library), import cost.

    python -m bench.bench_ann_libs [--sizes 10000 100000] [--libs usearch faiss-hnsw ...]

The install cost (wheel sizes, dependencies) and the licences are read from the
wheels, not measured here; docs/benchmarks.md holds the table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LIBS = ["usearch", "usearch-i8", "faiss-hnsw", "faiss-ivf", "hnswlib"]
IMPORTS = {
    "usearch": "from usearch.index import Index",
    "faiss": "import faiss",
    "hnswlib": "import hnswlib",
}
M, EF_ADD, K_ARM = 16, 128, 160


def _vectors(n: int) -> tuple[Any, Any]:
    """(matrix rows, query vectors): an indexed bench store's vectors and the bench queries."""
    import numpy as np

    import memhtml
    from bench.bench_search import indexed, queries

    root = indexed(n, "fake")
    with memhtml.open(root, embedder="fake") as c:
        matrix = c.vector_matrix()
        assert matrix is not None and c.embedder is not None
        qs = np.stack([c.embedder.embed_query(q) for q in queries(200)])
        return np.array(matrix.vectors[: matrix.rows]), qs


def _exact(vectors: Any, qs: Any, k: int) -> tuple[Any, Any]:
    import numpy as np

    sims = qs @ vectors.T  # the fake embedder's rows are unit length
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return top, np.take_along_axis(sims, top, axis=1)


def _recall(found: Any, qs: Any, vectors: Any, kth: Any, k: int) -> float:
    """Share of the top k found whose exact cosine reaches the exact k-th (ties count)."""
    import numpy as np

    hits = 0
    for qi, ids in enumerate(found):
        row = [int(r) for r in ids[:k] if r >= 0]
        sims = vectors[row] @ qs[qi]
        hits += int(np.sum(sims >= kth[qi] - 1e-6))
    return hits / (len(found) * k)


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _build(lib: str, vectors: Any, threads: int) -> tuple[Any, Any]:
    """(index, search function(queries, k) -> ids)."""
    import numpy as np

    n, d = vectors.shape
    if lib.startswith("usearch"):
        from usearch.index import Index

        index = Index(
            ndim=d,
            metric="cos",
            dtype="i8" if lib == "usearch-i8" else "f32",
            connectivity=M,
            expansion_add=EF_ADD,
            expansion_search=K_ARM,
        )
        index.add(np.arange(n, dtype=np.uint64), vectors, threads=threads)

        def search(q: Any, k: int) -> Any:
            return np.stack([index.search(v, k, threads=1).keys for v in q])

        return index, search
    if lib.startswith("faiss"):
        import faiss

        faiss.omp_set_num_threads(threads)
        if lib == "faiss-hnsw":
            index = faiss.IndexHNSWFlat(d, M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = EF_ADD
            index.add(vectors)
            index.hnsw.efSearch = K_ARM
        else:
            nlist = int(4 * np.sqrt(n))
            quantizer = faiss.IndexFlatIP(d)
            index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
            index.train(vectors[np.random.default_rng(0).permutation(n)[: min(n, 64 * nlist)]])
            index.add(vectors)
            index.nprobe = 16
        faiss.omp_set_num_threads(1)

        def search(q: Any, k: int) -> Any:
            return np.concatenate([index.search(v[None, :], k)[1] for v in q])

        return index, search
    import hnswlib

    index = hnswlib.Index(space="cosine", dim=d)
    index.init_index(max_elements=n, M=M, ef_construction=EF_ADD)
    index.set_num_threads(threads)
    index.add_items(vectors, np.arange(n))
    index.set_ef(K_ARM)
    index.set_num_threads(1)

    def search(q: Any, k: int) -> Any:
        return np.concatenate([index.knn_query(v[None, :], k)[0] for v in q])

    return index, search


def _save_and_open(lib: str, index: Any, folder: Path) -> dict[str, Any]:
    path = folder / f"{lib}.idx"
    started = time.perf_counter()
    if lib.startswith("usearch"):
        index.save(str(path))
    elif lib.startswith("faiss"):
        import faiss

        faiss.write_index(index, str(path))
    else:
        index.save_index(str(path))
    save_s = time.perf_counter() - started
    opener = {
        "usearch": f"Index.restore({str(path)!r}, view=True)",
        "faiss": f"faiss.read_index({str(path)!r}, faiss.IO_FLAG_MMAP)",
        "hnswlib": (f"hnswlib.Index(space='cosine', dim=384).load_index({str(path)!r})"),
    }[lib.split("-", maxsplit=1)[0]]
    code = (
        f"import time; {IMPORTS[lib.split('-', maxsplit=1)[0]]}; t = time.perf_counter(); {opener};"
        " print(time.perf_counter() - t)"
    )
    opens = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], check=True, capture_output=True, text=True
            ).stdout.split()[-1]
        )
        for _ in range(3)
    ]
    open_s = min(opens)
    return {
        "file_mb": round(path.stat().st_size / 2**20, 1),
        "save_s": round(save_s, 3),
        "cold_open_s": round(max(open_s, 0.0), 3),
    }


def _import_s(statement: str, repeat: int = 3) -> float:
    """Wall time of a fresh interpreter importing the library, minus a bare interpreter's."""
    best = []
    for code in (statement, "pass"):
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - started)
        best.append(min(times))
    return max(best[0] - best[1], 0.0)


def one(lib: str, n: int, threads: int) -> dict[str, Any]:
    """One library at one size (run in its own process)."""
    import numpy as np

    vectors, qs = _vectors(n)
    top10, sims10 = _exact(vectors, qs, 10)
    top160, sims160 = _exact(vectors, qs, K_ARM)
    before = _rss_mb()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    index, search = _build(lib, vectors, threads)
    build_wall, build_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    held = _rss_mb() - before
    search(qs[:10], K_ARM)  # warm
    lat = []
    found = []
    for q in qs:
        started = time.perf_counter()
        found.append(search(q[None, :], K_ARM)[0])
        lat.append((time.perf_counter() - started) * 1000)
    found_arr = np.stack(found)
    exact_lat = []
    for q in qs:
        started = time.perf_counter()
        s = vectors @ q
        np.argpartition(-s, K_ARM)[:K_ARM]
        exact_lat.append((time.perf_counter() - started) * 1000)
    with tempfile.TemporaryDirectory() as tmp:
        files = _save_and_open(lib, index, Path(tmp))
    lat.sort()
    exact_lat.sort()
    return {
        "lib": lib,
        "rows": n,
        "build_threads": threads,
        "build_wall_s": round(build_wall, 2),
        "build_cpu_s": round(build_cpu, 2),
        "index_memory_mb": round(held, 1),
        "peak_rss_mb": round(peak, 1),
        "query_p50_ms": round(lat[len(lat) // 2], 3),
        "query_p95_ms": round(lat[int(len(lat) * 0.95)], 3),
        "exact_scan_p50_ms": round(exact_lat[len(exact_lat) // 2], 3),
        "recall_at_10": round(_recall(found_arr[:, :10], qs, vectors, sims10[:, -1], 10), 4),
        "recall_at_160": round(_recall(found_arr, qs, vectors, sims160[:, -1], K_ARM), 4),
        "exact_top10_in_found160": round(
            float(
                np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top10, found_arr, strict=True)])
            ),
            4,
        ),
        "ignored": len(top160) == 0,
        **files,
        "load_avg": os.getloadavg(),
    }


def main() -> None:
    from bench.common import write_result

    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--libs", nargs="+", default=LIBS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.threads)))
        return
    rows = []
    for n in args.sizes:
        for lib in args.libs:
            out = subprocess.run(
                [
                    sys.executable,
                    *("-m", "bench.bench_ann_libs", "--one", lib, str(n)),
                    *("--threads", str(args.threads)),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            row = json.loads(out.strip().splitlines()[-1])
            print(json.dumps(row), file=sys.stderr)
            rows.append(row)
    imports = {name: round(_import_s(code) * 1000, 1) for name, code in IMPORTS.items()}
    write_result("ann_libs", {"rows": rows, "import_ms": imports})


if __name__ == "__main__":
    main()
