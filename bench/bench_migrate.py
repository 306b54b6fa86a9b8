"""Embedding through an OpenAI-compatible endpoint, and a model migration, at 10k memories.

The endpoint is the stand-in (bench/embed_standin.py) in a process of its own,
serving the fake embedder's rows over HTTP on 127.0.0.1, so what is measured
is memhtml's side (batching, HTTP, JSON, validation, normalization, SQLite,
the matrix), not a model. The stand-in reports the seconds it spent
answering (its embedding and JSON encoding), the client its own CPU seconds.

* throughput: the store's chunk texts embedded by the fake embedder in
  process (the model's own cost, the same work the stand-in does), then
  through the endpoint at several batch sizes: documents per second, the
  client's CPU microseconds per document (our overhead) and the server's;
* migration: a copy of the 10k fake-embedded store migrated to the endpoint
  (`memhtml.ops.migrate`, the gate included), by phase: build (embedding and
  storing every chunk), gate, switch (catch-up under the lock, the one
  transaction, the new matrix); and `--status` on the open migration.

    python -m bench.bench_migrate [--n 10000] [--batches 16 64 256] [--repeat 3]

Prints the figures and writes bench/results/migrate.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import memhtml
from bench.bench_search import indexed
from bench.common import write_result


class Server:
    """The stand-in in a subprocess."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.embed_standin", "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.base_url}/stats", timeout=10) as resp:
            return dict(json.loads(resp.read()))

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def chunk_texts(root: Path) -> list[str]:
    with memhtml.open(root, embedder="fake") as c:
        return [r[0] for r in c.conn.execute("SELECT min(text) FROM chunks GROUP BY chunk_id")]


def throughput(server: Server, texts: list[str], batches: list[int], repeat: int) -> dict[str, Any]:
    from memhtml.embed.fake import FakeEmbedder
    from memhtml.embed.openai import OpenAIEmbedder

    out: dict[str, Any] = {"documents": len(texts)}
    best = None
    for _ in range(repeat):
        fake = FakeEmbedder(batch_size=4096)
        fake_cpu = time.process_time()
        started = time.perf_counter()
        fake.embed_documents(texts)
        wall = time.perf_counter() - started
        cpu = time.process_time() - fake_cpu
        if best is None or wall < best[0]:
            best = (wall, cpu)
    assert best is not None
    out["fake_in_process"] = {
        "docs_per_s": round(len(texts) / best[0], 1),
        "cpu_us_per_doc": round(1e6 * best[1] / len(texts), 1),
    }
    for batch in batches:
        runs = []
        for _ in range(repeat):
            e = OpenAIEmbedder(
                "stand-in-embed", base_url=server.base_url, dim=384, batch_size=batch
            )
            before = server.stats()
            cpu0 = time.process_time()
            started = time.perf_counter()
            e.embed_documents(texts)
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu0
            after = server.stats()
            runs.append(
                {
                    "docs_per_s": round(len(texts) / wall, 1),
                    "wall_s": round(wall, 3),
                    "client_cpu_us_per_doc": round(1e6 * cpu / len(texts), 1),
                    "server_busy_us_per_doc": round(
                        1e6 * (after["busy_s"] - before["busy_s"]) / len(texts), 1
                    ),
                    "requests": after["requests"] - before["requests"],
                }
            )
        out[f"endpoint_batch_{batch}"] = max(runs, key=lambda r: r["docs_per_s"])
    return out


def migration(server: Server, src: Path, runs: int) -> dict[str, Any]:
    from memhtml.embed import registry
    from memhtml.eval.embedders import gate_verdict
    from memhtml.ops.migrate import migrate

    os.environ.update(
        {
            "MEMHTML_EMBED_BASE_URL": server.base_url,
            "MEMHTML_EMBED_MODEL": "stand-in-embed",
            "MEMHTML_EMBED_DIM": "384",
        }
    )
    results = []
    for _ in range(runs):
        registry.clear_cache()
        with tempfile.TemporaryDirectory(prefix="memhtml-bench-migrate-") as tmp:
            root = Path(tmp) / "store"
            shutil.copytree(src, root, symlinks=True)
            before = server.stats()
            with memhtml.open(root, embedder="fake") as c:
                started = time.perf_counter()
                status = migrate(c, status=True, to="openai")
                status_s = time.perf_counter() - started
                out = migrate(c, to="openai", gate=gate_verdict, progress=False)
            after = server.stats()
            results.append(
                {
                    "seconds": out["seconds"],
                    "phases": out["phases"],
                    "embedded": out["embedded"],
                    "build_docs_per_s": round(out["embedded"] / out["phases"]["build_s"], 1),
                    "embed_seconds": out["embed_seconds"],
                    "status_estimate_s": round(status_s, 3),
                    "estimate": status["estimate"],
                    "server_documents": after["documents"] - before["documents"],
                    "server_busy_s": round(after["busy_s"] - before["busy_s"], 3),
                    "gate_passed": out["gate"]["passed"],
                }
            )
    seconds = [r["seconds"] for r in results]
    return {"runs": results, "median_seconds": round(statistics.median(seconds), 3)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.bench_migrate", description=__doc__)
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--batches", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--migrations", type=int, default=2)
    args = p.parse_args(argv)
    src = indexed(args.n, "fake")
    texts = chunk_texts(src)
    server = Server()
    try:
        data = {
            "memories": args.n,
            "throughput": throughput(server, texts, args.batches, args.repeat),
            "migration": migration(server, src, args.migrations),
        }
    finally:
        server.close()
    write_result("migrate", data)
    return data


if __name__ == "__main__":
    main()
