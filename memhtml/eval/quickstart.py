"""The quickstart: a real corpus, the default local embedder, real searches, in one step.

It generates the fixture corpus (a pure function of a seed, ~300 memories
about an engineering organisation's services, incidents, runbooks and
people), commits it into a new memory root, indexes it with the configured
embedder (the offline MiniLM model by default) and runs a few example
queries, so a newcomer sees ranked semantic search with no credentials.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, Final

EXAMPLE_QUERIES: Final[tuple[str, ...]] = (
    "when should signing keys be rotated",
    "errors after a config push that shrank the connection pool",
    "who wants alerts sent to another channel",
)


def run_quickstart(
    root: str | None = None,
    *,
    embedder: str | None = None,
    seed: int = 7,
    queries: tuple[str, ...] = EXAMPLE_QUERIES,
    limit: int = 3,
) -> dict[str, Any]:
    """Create (or reuse) a demo corpus, index it, search it; returns the report."""
    import memhtml
    from memhtml.eval.fixture import generate_fixture, write_fixture

    started = time.perf_counter()
    target = Path(root).expanduser() if root else Path(tempfile.mkdtemp(prefix="memhtml-demo-"))
    created = False
    if not (target / ".git").exists():
        write_fixture(generate_fixture(seed=seed), target)
        created = True
    corpus = memhtml.open(target, embedder=embedder)
    try:
        index_started = time.perf_counter()
        report = corpus.index.rebuild(embed=True if corpus.embedder else None)
        index_s = time.perf_counter() - index_started
        answers = []
        for query in queries:
            result = corpus.search(query, limit=limit)
            answers.append(
                {
                    "query": query,
                    "degraded": result.degraded,
                    "hits": [
                        {"path": h.path, "gist": h.gist, "score": round(h.score, 5)}
                        for h in result.hits
                    ],
                }
            )
        status = corpus.index.status()
    finally:
        corpus.close()
    return {
        "root": str(target),
        "created": created,
        "memories": status["active_files"] + status["archived_files"],
        "embedder": status["vector_space"]["model"],
        "vectors": report.get("vectors", {}),
        "index_seconds": round(index_s, 2),
        "total_seconds": round(time.perf_counter() - started, 2),
        "searches": answers,
        "next": [
            f"export MEMHTML_ROOT={target}",
            'memhtml search "connection pool" --explain',
            "memhtml status",
        ],
    }


def render_quickstart(data: dict[str, Any]) -> str:
    """The report as text for a person at a terminal."""
    lines = [
        f"memhtml quickstart: {data['memories']} memories in {data['root']}",
        f"indexed with {data['embedder'] or 'no embedder (lexical only)'}"
        f" in {data['index_seconds']} s",
        "",
    ]
    for answer in data["searches"]:
        flag = "  (degraded: lexical only)" if answer["degraded"] else ""
        lines.append(f'search "{answer["query"]}"{flag}')
        for i, hit in enumerate(answer["hits"], start=1):
            lines.append(f"  {i}. {hit['gist'][:96]}")
            lines.append(f"     {hit['path']}  score {hit['score']}")
        lines.append("")
    lines.append("next: " + " ; ".join(data["next"]))
    return "\n".join(lines)
