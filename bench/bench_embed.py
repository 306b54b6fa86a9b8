"""Embedding and vector-matrix benchmarks (a script, not a test).

Measures, on this machine:

* document throughput (chunks/s) of the fake and the local embedder over
  1,000 memory-length texts (200-1,200 characters, generated from a seed),
  best of ``--repeat`` runs, with the same figure per CPU-second (process CPU
  time, every thread counted: the figure that survives a busy machine), the
  mean token count and the share of padding in the forward passes;
* local throughput on short single sentences (best of three runs), for
  comparison with the sentence-transformers figures people quote;
* single-query latency (p50, p95);
* local model load time (first load in the process, which includes importing
  onnxruntime and tokenizers, and a second load with the imports warm);
* vector matrix load time at 10k and 100k rows x 384, in process and in a
  fresh process, the first full ``matrix @ query`` scan, and for contrast
  the same rows read out of a SQLite BLOB column.

Usage: python bench/bench_embed.py [--texts 1000] [--repeat 1] [--threads N]
                                   [--skip-local] [--out PATH]
Prints a table and writes bench/results/embed.json (or --out). Other work on the machine
skews the figures; the load average at the start is recorded with them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memhtml.embed.fake import FakeEmbedder
from memhtml.embed.matrix import VectorMatrix

RESULTS = Path(__file__).parent / "results" / "embed.json"
SEED = 20240611

SUBJECTS = [
    "the deploy pipeline",
    "the staging VIP",
    "the billing worker",
    "the nightly backup",
    "the search index",
    "the auth service",
    "the canary fleet",
    "the feature flag",
    "the on-call rotation",
    "the Postgres replica",
    "the CDN cache",
    "the retry queue",
]
VERBS = [
    "must be drained before",
    "was rolled back after",
    "fails silently when",
    "needs a manual restart after",
    "is throttled during",
    "should be checked before",
    "was migrated ahead of",
    "pages the on-call engineer whenever",
]
OBJECTS = [
    "a schema migration",
    "the quarterly release",
    "a certificate rotation",
    "the traffic shift to eu-west-1",
    "a config push",
    "the load test",
    "a kernel upgrade",
    "the Friday freeze",
    "a dependency bump",
    "the DNS cutover",
]
TAILS = [
    "Confirmed in the incident review.",
    "Alice wrote the runbook for it.",
    "This bit us twice in March.",
    "Check the dashboard first.",
    "The fix is documented in the wiki.",
    "Do not skip this step.",
]


def memory_texts(n: int, seed: int = SEED) -> list[str]:
    """``n`` plausible memory bodies, 200-1,200 characters, identical for a given seed."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        target = rng.randint(200, 1200)
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) <= target:
            sentence = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}."
            parts.append(sentence[0].upper() + sentence[1:])
            if rng.random() < 0.3:
                parts.append(rng.choice(TAILS))
        text = " ".join(parts)[:target]
        texts.append(text[:-1] + "." if text[-1].isspace() else text)
    return texts


def short_sentences(n: int, seed: int = SEED) -> list[str]:
    rng = random.Random(seed + 1)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}." for _ in range(n)]


def throughput(embedder, texts: list[str]) -> float:
    start = time.perf_counter()
    embedder.embed_documents(texts)
    return len(texts) / (time.perf_counter() - start)


def throughput_wall_cpu(embedder, texts: list[str], repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` documents per wall second and per CPU second (all threads)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        embedder.embed_documents(texts)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return len(texts) / min(walls), len(texts) / min(cpus)


def token_stats(local, texts: list[str]) -> dict[str, float]:
    """Mean tokens per text and the padding share of the local embedder's batch plan."""
    from tokenizers import Tokenizer

    from memhtml.embed.local import MAX_TOKENS

    tokenizer = Tokenizer.from_file(str(local.tokenizer_path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    lengths = sorted(len(e.ids) for e in tokenizer.encode_batch(texts))
    padded = sum(max(lengths[b]) * len(lengths[b]) for b in local._plan(lengths))
    return {
        "tokens_mean": statistics.mean(lengths),
        "tokens_max": max(lengths),
        "padding_share": 1 - sum(lengths) / padded,
    }


def query_latency(embedder, queries: list[str]) -> dict[str, float]:
    embedder.embed_query(queries[0])  # warm
    samples = []
    for q in queries:
        start = time.perf_counter()
        embedder.embed_query(q)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "p50_ms": statistics.median(samples),
        "p95_ms": samples[int(0.95 * (len(samples) - 1))],
    }


def bench_local(
    texts: list[str], queries: list[str], *, repeat: int = 1, threads: int | None = None
) -> dict[str, float]:
    from memhtml.embed.local import LocalEmbedder

    start = time.perf_counter()
    first = LocalEmbedder(threads=threads)
    first.load()
    first_load = time.perf_counter() - start
    start = time.perf_counter()
    local = LocalEmbedder(threads=threads)
    local.load()
    warm_load = time.perf_counter() - start
    local.embed_documents(texts[:8])  # warm the session
    sentences = short_sentences(640)
    docs_wall, docs_cpu = throughput_wall_cpu(local, texts, repeat)
    sentences_wall, sentences_cpu = throughput_wall_cpu(local, sentences, 3)
    return {
        "load_first_s": first_load,
        "load_warm_imports_s": warm_load,
        "threads": local.threads,
        "batch_size": local.batch_size,
        "token_budget": local.token_budget,
        "docs_per_s": docs_wall,
        "docs_per_cpu_s": docs_cpu,
        **token_stats(local, texts),
        "sentences_per_s": sentences_wall,
        "sentences_per_cpu_s": sentences_cpu,
        **{f"query_{k}": v for k, v in query_latency(local, queries).items()},
    }


def fresh_process_load_ms(directory: str, dim: int) -> float:
    code = (
        "import time, sys; from memhtml.embed.matrix import VectorMatrix;"
        f"m = VectorMatrix({directory!r}); t = time.perf_counter();"
        f"x = m.load('bench', 'bench-model', {dim}); d = time.perf_counter() - t;"
        "assert x is not None; print(d * 1000)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def bench_matrix(rows: int, dim: int = 384) -> dict[str, float]:
    rng = np.random.default_rng(rows)
    vectors = rng.standard_normal((rows, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(rows)]
    with tempfile.TemporaryDirectory() as tmp:
        matrix = VectorMatrix(tmp, durable=False)
        start = time.perf_counter()
        for lo in range(0, rows, 10_000):
            matrix.append(
                "bench",
                "bench-model",
                dim,
                keys[lo : lo + 10_000],
                vectors[lo : lo + 10_000],
                max_seq=lo + 10_000,
            )
        append_s = time.perf_counter() - start
        loads = []
        for _ in range(20):
            start = time.perf_counter()
            loaded = matrix.load("bench", "bench-model", dim)
            loads.append((time.perf_counter() - start) * 1000)
        assert loaded is not None
        assert loaded.rows == rows
        query = vectors[rows // 2]
        start = time.perf_counter()
        fresh = matrix.load("bench", "bench-model", dim)
        assert fresh is not None
        scores = fresh.vectors @ query
        top = np.argpartition(-scores, 10)[:10]
        hits = fresh.keys_at(top[np.argsort(-scores[top])])
        load_scan_ms = (time.perf_counter() - start) * 1000
        assert hits[0] == keys[rows // 2]
        fresh_ms = statistics.median(fresh_process_load_ms(tmp, dim) for _ in range(3))

        db = sqlite3.connect(Path(tmp) / "bench.db")
        db.execute("create table embeddings (seq integer primary key, chunk_id text, vector blob)")
        db.executemany(
            "insert into embeddings (chunk_id, vector) values (?, ?)",
            ((k, v.tobytes()) for k, v in zip(keys, vectors, strict=True)),
        )
        db.commit()
        start = time.perf_counter()
        blobs = db.execute("select chunk_id, vector from embeddings order by seq").fetchall()
        stacked = np.frombuffer(b"".join(b for _, b in blobs), dtype="<f4").reshape(rows, dim)
        sqlite_ms = (time.perf_counter() - start) * 1000
        assert stacked.shape == (rows, dim)
        db.close()
    return {
        "rows": rows,
        "dim": dim,
        "append_s": append_s,
        "load_p50_ms": statistics.median(loads),
        "load_fresh_process_ms": fresh_ms,
        "load_and_top10_scan_ms": load_scan_ms,
        "sqlite_blob_read_ms": sqlite_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1, help="document runs; the best counts")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = parser.parse_args()

    texts = memory_texts(args.texts)
    queries = [t[:60] for t in memory_texts(100, seed=SEED + 7)]
    lengths = [len(t) for t in texts]
    results: dict[str, object] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_at_start": os.getloadavg(),
        },
        "corpus": {
            "texts": len(texts),
            "chars_min": min(lengths),
            "chars_mean": statistics.mean(lengths),
            "chars_max": max(lengths),
        },
    }
    fake = FakeEmbedder()
    results["fake"] = {
        "docs_per_s": throughput(fake, texts),
        **{f"query_{k}": v for k, v in query_latency(fake, queries).items()},
    }
    if not args.skip_local:
        results["local"] = bench_local(texts, queries, repeat=args.repeat, threads=args.threads)
    results["matrix"] = [bench_matrix(10_000), bench_matrix(100_000)]

    print(f"corpus: {len(texts)} texts, {min(lengths)}-{max(lengths)} chars")
    local_r = results.get("local")
    if isinstance(local_r, dict):
        print(
            f"local: {local_r['docs_per_s']:.1f} docs/s, {local_r['docs_per_cpu_s']:.1f} docs"
            f" per CPU-second, {local_r['threads']} threads; {local_r['tokens_mean']:.0f} tokens"
            f" per doc, {100 * local_r['padding_share']:.1f}% padding;"
            f" load at start {results['machine']['loadavg_at_start'][0]:.2f}"  # type: ignore[index]
        )
    print(
        f"{'embedder':<10}{'docs/s':>10}{'sent/s':>10}{'q p50 ms':>10}{'q p95 ms':>10}{'load s':>9}"
    )
    for name in ("fake", "local"):
        r = results.get(name)
        if isinstance(r, dict):
            print(
                f"{name:<10}{r['docs_per_s']:>10.1f}{r.get('sentences_per_s', float('nan')):>10.1f}"
                f"{r['query_p50_ms']:>10.2f}{r['query_p95_ms']:>10.2f}"
                f"{r.get('load_first_s', float('nan')):>9.3f}"
            )
    print(
        f"\n{'matrix rows':<12}{'load ms':>9}{'fresh ms':>10}{'load+scan ms':>14}"
        f"{'sqlite ms':>11}{'append s':>10}"
    )
    for m in results["matrix"]:  # type: ignore[union-attr]
        print(
            f"{m['rows']:<12}{m['load_p50_ms']:>9.3f}{m['load_fresh_process_ms']:>10.3f}"
            f"{m['load_and_top10_scan_ms']:>14.2f}{m['sqlite_blob_read_ms']:>11.1f}"
            f"{m['append_s']:>10.3f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
