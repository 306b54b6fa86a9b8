"""The quickstart: a real corpus, the default local embedder, real searches, in one step.

It generates the fixture corpus (a pure function of a seed, ~300 memories
about an engineering organisation's services, incidents, runbooks and
people), commits it into a new memory root, indexes it with the configured
embedder (the offline MiniLM model by default) and runs a few example
queries, so a newcomer sees ranked semantic search with no credentials.
It never runs against existing memories (a non-empty directory that is not
an untouched quickstart corpus is refused), and a temporary store is
deleted at the end unless the caller asks to keep it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.errors import InvalidFlagError

EXAMPLE_QUERIES: Final[tuple[str, ...]] = (
    "when should signing keys be rotated",
    "errors after a config push that shrank the connection pool",
    "who wants alerts sent to another channel",
)
# The subject of the fixture's only commit (memhtml.eval.fixture.write_fixture).
_FIXTURE_SUBJECT: Final = "memhtml(fixture): seed {seed}, "


def _untouched_demo(target: Path, seed: int) -> bool:
    """True when `target` holds exactly the fixture commit of `seed`: a quickstart's own corpus."""
    if not (target / ".git").exists():
        return False
    out = subprocess.run(
        ["git", "-C", str(target), "log", "-2", "--format=%P%x00%s", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    commits = out.stdout.splitlines()
    if out.returncode != 0 or len(commits) != 1:
        return False
    parents, _, subject = commits[0].partition("\x00")
    return not parents and subject.startswith(_FIXTURE_SUBJECT.format(seed=seed))


def _prepare(target: Path, seed: int) -> bool:
    """Write the demo corpus into `target` (True), or reuse an untouched one there (False).

    Anything else is refused: a quickstart never searches, indexes or writes
    into a directory that may hold someone's memories.
    """
    from memhtml.eval.fixture import generate_fixture, write_fixture

    if target.exists() and not target.is_dir():
        raise InvalidFlagError(
            f"--repo {target} is a file; quickstart needs a new or empty directory",
            suggestions=["memhtml quickstart --repo <new directory>"],
        )
    if target.is_dir() and any(target.iterdir()):
        if _untouched_demo(target, seed):
            return False
        raise InvalidFlagError(
            f"--repo {target} is not empty; quickstart builds its demo corpus in a new or empty"
            " directory and never runs against existing memories",
            suggestions=[
                "memhtml quickstart (a temporary directory, deleted afterwards)",
                "memhtml quickstart --repo <new directory>",
                f'memhtml search "..." --repo {target} (to search that store itself)',
            ],
        )
    write_fixture(generate_fixture(seed=seed), target)
    return True


def run_quickstart(
    root: str | None = None,
    *,
    embedder: str | None = None,
    seed: int = 7,
    keep: bool = False,
    queries: tuple[str, ...] = EXAMPLE_QUERIES,
    limit: int = 3,
) -> dict[str, Any]:
    """Create (or reuse an untouched) demo corpus, index it, search it; returns the report.

    With `root`, the corpus is built there (a new or empty directory) and kept.
    Without, it goes to a temporary directory that is deleted at the end
    unless `keep`.
    """
    import memhtml

    started = time.perf_counter()
    temporary = root is None
    target = (
        Path(tempfile.mkdtemp(prefix="memhtml-demo-"))
        if root is None
        else Path(root).expanduser().absolute()
    )
    kept = not temporary or keep
    try:
        created = _prepare(target, seed)
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
    finally:
        if not kept:
            shutil.rmtree(target, ignore_errors=True)
    next_steps = (
        [
            f"export MEMHTML_ROOT={target}",
            'memhtml search "connection pool" --explain',
            "memhtml status",
        ]
        if kept
        else [
            "memhtml quickstart --keep (keep the demo store to explore it)",
            "memhtml init --repo ~/memhtml (start your own store)",
        ]
    )
    return {
        "root": str(target),
        "created": created,
        "kept": kept,
        "memories": status["active_files"] + status["archived_files"],
        "embedder": status["vector_space"]["model"],
        "vectors": report.get("vectors", {}),
        "index_seconds": round(index_s, 2),
        "total_seconds": round(time.perf_counter() - started, 2),
        "searches": answers,
        "next": next_steps,
    }
