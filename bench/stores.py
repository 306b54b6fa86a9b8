"""Cached synthetic stores for the benchmarks (built once per size and seed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bench.synth import build_store

CACHE = Path(os.environ.get("MEMHTML_BENCH_CACHE", "/tmp/memhtml-bench"))


def cached_store(n: int, seed: int = 1) -> Path:
    """A committed store of `n` synthetic memories (no index yet), built once and reused."""
    root = CACHE / f"store-{n}-{seed}"
    marker = root / ".bench-complete"
    if not marker.exists():
        if root.exists():
            shutil.rmtree(root)
        build_store(root, n, seed)
        marker.write_text("ok\n")
        (root / ".git" / "info" / "exclude").write_text(".bench-complete\n")
    return root


def fresh_copy(n: int, dest: Path, seed: int = 1) -> Path:
    """A private copy of the cached store without its index (for benchmarks that write).

    Other benchmarks index the cached store in place (bench_search embeds it), so
    the copy leaves `.memhtml/` behind: whoever takes a copy starts from no index.
    """
    src = cached_store(n, seed)
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".memhtml"))
    return dest
