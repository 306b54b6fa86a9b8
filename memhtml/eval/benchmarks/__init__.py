"""Benchmark loaders and the benchmarks' own retrieval metrics (pure, no I/O but reading files).

Each loader returns ``(list[Corpus], LoadReport)``:

- `load_locomo` (LoCoMo, ``locomo/locomo10.json``)
- `load_factconsolidation` (MemoryAgentBench FactConsolidation,
  ``memoryagentbench/Conflict_Resolution.json`` + the heuristic gold file)
- `load_beam` (BEAM 100K, ``beam/100K``)
- `load_longmemeval` (LongMemEval S/M/oracle)

Metrics live in `memhtml.eval.benchmarks.metrics`. `default_data_root` finds
the shared benchmark data (never copied into this repository).
"""

from __future__ import annotations

import os
from pathlib import Path

from memhtml.eval.benchmarks.beam import load_beam
from memhtml.eval.benchmarks.factconsolidation import load_factconsolidation
from memhtml.eval.benchmarks.locomo import load_locomo
from memhtml.eval.benchmarks.longmemeval import load_longmemeval
from memhtml.eval.benchmarks.records import (
    Corpus,
    Doc,
    LoadReport,
    MalformedId,
    Question,
    SkippedQuestion,
)

__all__ = [
    "DATA_ENV",
    "SAMPLES_DIR",
    "Corpus",
    "Doc",
    "LoadReport",
    "MalformedId",
    "Question",
    "SkippedQuestion",
    "default_data_root",
    "load_beam",
    "load_factconsolidation",
    "load_locomo",
    "load_longmemeval",
]

DATA_ENV = "MEMHTML_BENCH_DATA"
# Small samples in each benchmark's own format, written for memhtml (never the benchmark's
# data): the loaders' tests, the harnesses' smoke runs, `eval compare-embedders` offline.
SAMPLES_DIR = Path(__file__).resolve().parent / "samples"


def default_data_root() -> Path | None:
    """Where the shared benchmark data lives, or None.

    ``$MEMHTML_BENCH_DATA`` when set (and a directory), else ``../shared/data``
    beside the repository checkout when it exists.
    """
    env = os.environ.get(DATA_ENV)
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    repo = Path(__file__).resolve().parents[3]
    candidate = repo.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None
