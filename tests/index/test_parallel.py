"""The one parallel parser: worker processes give exactly what parsing inline gives."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.paths import is_archived_path, live_path_of, para_of, workspace_of
from memhtml.html import parse_memory
from memhtml.index import indexer as indexer_module
from memhtml.index import parallel
from memhtml.index.project import path_facts, project_bytes
from tests.index.test_indexer import fresh_rebuild_snapshot, git, snapshot

ALWAYS: dict[str, int] = {"PARALLEL_MIN": 0}  # workers even for a handful of files
NEVER: dict[str, int] = {"PARALLEL_MIN": 10**9}


def _with_rowids(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """The snapshot plus each file's rowid (the FTS table's key), in rowid order."""
    out = snapshot(conn)
    out["rowids"] = conn.execute("SELECT rowid, path FROM files ORDER BY rowid").fetchall()
    return out


def _hand_corpus(corpus: Any, repo: Path) -> None:
    """Memories of every kind a rebuild must arbitrate, spread over several parse chunks."""
    first = corpus.write(title="Seed", type="semantic", claim="The seed fact.", tag=["t"])
    text = (repo / first["path"]).read_text()
    for i in range(24):
        (repo / "areas" / f"hand-{i:02d}.html").write_text(
            text.replace("The seed fact.", f"Hand fact number {i}.")
        )
    # Two active copies of one article in different chunks: the smaller path wins.
    (repo / "areas" / "aa-copy.html").write_text(text)
    (repo / "resources" / "zz-copy.html").parent.mkdir(parents=True, exist_ok=True)
    (repo / "resources" / "zz-copy.html").write_text(text)
    (repo / "areas" / "broken.html").write_text("<html><article>no mark</article></html>")
    other = corpus.write(title="Other", type="episodic", claim="Another fact.")["path"]
    corpus.archive(other)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hand files")
    # An uncommitted edit the rebuild overlays.
    hand = repo / "areas" / "hand-03.html"
    hand.write_text(hand.read_text().replace("number 3.", "number three."))


def test_parallel_rebuild_equals_serial_row_for_row(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hand_corpus(corpus, repo)
    monkeypatch.setattr(indexer_module, "CHUNK", 4)  # many chunks: dedup crosses chunk lines
    monkeypatch.setattr(indexer_module, "PARALLEL_MIN", NEVER["PARALLEL_MIN"])
    serial_report = corpus.indexer.rebuild()
    serial = _with_rowids(corpus.conn)
    monkeypatch.setattr(indexer_module, "PARALLEL_MIN", ALWAYS["PARALLEL_MIN"])
    parallel_report = corpus.indexer.rebuild()
    assert _with_rowids(corpus.conn) == serial
    assert parallel_report.touched == serial_report.touched
    assert parallel_report.skipped == serial_report.skipped
    skipped = dict((r["path"], r["reason"]) for r in serial_report.skipped)
    assert skipped["resources/zz-copy.html"] == "duplicate content of areas/aa-copy.html"
    assert "areas/broken.html" in skipped
    hand = corpus.conn.execute("SELECT gist FROM files WHERE path = 'areas/hand-03.html'")
    assert "number three" in hand.fetchone()[0]


def test_update_of_a_large_change_set_equals_a_rebuild(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The update parses in workers when many files changed (a sync); rows equal a rebuild."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 0)
    monkeypatch.setattr(parallel, "CHUNK", 3)
    corpus.index.rebuild()
    _hand_corpus(corpus, repo)
    report = corpus.index.update()
    assert report["projected"] >= 26
    assert corpus.conn.execute(
        "SELECT reason FROM skipped_files WHERE path = 'resources/zz-copy.html'"
    ).fetchone() == ("duplicate content of areas/aa-copy.html",)
    incremental = snapshot(corpus.conn)
    corpus.close()
    assert incremental == fresh_rebuild_snapshot(repo)


def test_parse_many_and_project_many_keep_order_and_equal_inline(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hand_corpus(corpus, repo)
    paths = sorted(p.relative_to(repo).as_posix() for p in (repo / "areas").glob("*.html"))
    contents = [(repo / p).read_bytes() for p in paths]
    monkeypatch.setattr(parallel, "CHUNK", 2)
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 0)
    with parallel.ParsePool(len(paths), min_items=0) as pool:
        assert pool.parallel == (parallel.usable_cpus() >= 2)
    docs = parallel.parse_many(contents)
    assert [d.content_hash for d in docs] == [parse_memory(c).content_hash for c in contents]
    assert [d.ok for d in docs] == [p != "areas/broken.html" for p in paths]
    items = [(p, None, c) for p, c in zip(paths, contents, strict=True)]
    projected = parallel.project_many(items)
    assert [p for p, _, _ in projected] == paths
    assert [r for _, _, r in projected] == [project_bytes(p, c, None) for p, _, c in items]


@pytest.mark.parametrize(
    "path",
    [
        "areas/x.html",
        "resources/a/b/c.html",
        "projects/ws/fact.html",
        "projects/only.html",
        "archive/2025/projects/ws/fact.html",
        "archive/2024/areas/x.html",
        "archive/2023/projects/only.html",
    ],
)
def test_path_facts_equal_the_contracts_rules(path: str) -> None:
    facts = path_facts(path)
    assert facts.archived == is_archived_path(path)
    assert facts.para == para_of(path)
    assert facts.origin == live_path_of(path)
    assert facts.workspace == workspace_of(path)


def test_path_facts_refuse_a_path_the_contracts_refuse() -> None:
    from memhtml.contracts.errors import InvalidPathError

    with pytest.raises(InvalidPathError):
        path_facts("archive/x.html")


def _pid_chunk(items: list[int]) -> list[tuple[int, int]]:
    import os

    return [(i, os.getpid()) for i in items]


def test_map_chunks_uses_workers_from_the_threshold_on(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    if parallel.usable_cpus() < 2:
        pytest.skip("one core: everything runs inline")
    monkeypatch.setattr(parallel, "PARALLEL_MIN", 5)
    inline = parallel.map_chunks(_pid_chunk, list(range(4)), chunk=2)
    assert {pid for _, pid in inline} == {os.getpid()}
    pooled = parallel.map_chunks(_pid_chunk, list(range(9)), chunk=2)
    assert [i for i, _ in pooled] == list(range(9))
    assert os.getpid() not in {pid for _, pid in pooled}


_UNWIND = """
import sys, threading, time
from memhtml.index import parallel

def stuck(chunk):  # never ends
    while True:
        time.sleep(1)

def big(chunk):  # results of 32 MiB: a kill lands in the middle of writing one
    return [b"x" * (32 << 20) for _ in chunk]

parallel.usable_cpus = lambda: 2
task = stuck if sys.argv[1] == "stuck" else big
try:
    with parallel.ParsePool(10, min_items=1) as pool:
        assert pool.parallel
        jobs = [pool.submit(task, [i]) for i in range(6)]
        workers = list(pool._pool._processes.values())
        time.sleep(0.5)
        raise KeyboardInterrupt
except KeyboardInterrupt:
    pass
for worker in workers:
    worker.join(timeout=30)

def running(pid):  # is_alive() may say True of a worker the executor's thread reaped itself
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

print(len(workers), sum(running(w.pid) for w in workers), flush=True)
"""


@pytest.mark.parametrize("task", ["stuck", "big"])
def test_an_unwinding_caller_kills_its_workers_and_the_process_ends(
    tmp_path: Path, task: str
) -> None:
    # A worker that never finishes, or one killed while it writes a result (its partial
    # message would hold the executor's thread, and the interpreter's exit joins it):
    # a caller unwinding (an error, SIGTERM) must not wait for either.
    import subprocess
    import sys

    script = tmp_path / "unwind.py"
    script.write_text(_UNWIND)
    try:
        out = subprocess.run(
            [sys.executable, str(script), task],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the process waited for an abandoned pool")
    assert out.returncode == 0, out.stderr
    started, alive = map(int, out.stdout.split())
    assert started >= 1 and alive == 0
