"""A small real corpus (fake embedder) with tags, entities, links and recorded reads."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WORDS = [
    "apple",
    "banana",
    "cherry",
    "river",
    "mountain",
    "coffee",
    "tea",
    "python",
    "rust",
    "memory",
    "index",
    "vector",
    "search",
    "query",
    "fusion",
    "rank",
    "recency",
    "salience",
    "garden",
    "piano",
    "violin",
    "soccer",
    "tennis",
    "harbor",
    "lantern",
]
NOW = "2024-06-01T00:00:00Z"


def _ops(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    ops = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(8))
        ops.append(
            {
                "op": "write",
                "title": f"note {i}",
                "type": "semantic" if i % 3 else "episodic",
                "claim": text.capitalize() + ".",
                "body": [" ".join(rng.choice(WORDS) for _ in range(12)) + "."],
                "event_at": f"2023-{1 + i % 12:02d}-{1 + i % 28:02d}",
                "path": f"areas/toy/n{i:03d}.html",
                "tag": ["toy", f"group-{i % 4}"],
                "entity": [f"person:P{i % 5}"],
            }
        )
    return ops


@pytest.fixture(scope="module")
def toy_corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """120 memories, two links, reads on a few paths (so salience has rows)."""
    import memhtml
    from memhtml.store.layout import init_repo

    root: Path = tmp_path_factory.mktemp("analysis") / "memory"
    init_repo(root)
    corpus = memhtml.open(root, embedder="fake", now=NOW)
    outcome = corpus.apply(_ops(120, seed=3))
    assert outcome.failure is None
    corpus.link("areas/toy/n001.html", "supports", "areas/toy/n002.html")
    corpus.link("areas/toy/n003.html", "caused_by", "areas/toy/n004.html")
    for i in (5, 6, 7, 7, 8, 40, 41, 90):
        corpus.read(f"areas/toy/n{i:03d}.html")
    yield corpus
    corpus.close()


@pytest.fixture(scope="module")
def toy_queries() -> dict[str, str]:
    """40 queries of three words from the same vocabulary."""
    rng = random.Random(11)
    return {f"q{i:02d}": " ".join(rng.choice(WORDS) for _ in range(3)) for i in range(40)}
