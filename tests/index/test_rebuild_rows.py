"""The rebuild's worker side: blobs read in the worker, rows sent back ready to bind.

A rebuild's worker reads its chunk's blobs with its own `git cat-file` and
sends back each file's rows (`writer.file_rows`); the parent only inserts
them. Those rows must be the ones the update path writes from the same
projection, and the worker must read only the blobs it projects.
"""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memhtml.index import indexer as indexer_module
from memhtml.index import parallel, writer
from memhtml.index.planes import connect
from memhtml.index.project import project_bytes
from memhtml.store.git import Git
from tests.index.test_indexer import git


def _rich(corpus: Any, repo: Path) -> list[str]:
    """Memories with most kinds of child row: tags, entities, facets, citations,
    edges, several chunks; committed."""
    a = corpus.write(
        title="Rich",
        type="semantic",
        claim="A rich fact.",
        body="Sentence one. " * 300,
        tag=["x", "y"],
        entity=["svc:api", "person:ann"],
    )["path"]
    b = corpus.write(title="Other", type="episodic", claim="Other fact.", tag=["x"])["path"]
    corpus.link(a, "supports", b)
    text = (repo / a).read_text()
    rich = text.replace(
        "</article>",
        "<dl><dt>size</dt><dd>12</dd></dl><p>See <cite>Example book</cite>.</p></article>",
        1,
    )
    (repo / a).write_text(rich)
    git(repo, "commit", "-qam", "rich")
    return sorted([a, b])


def _rows_of(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    tables = ("files", *writer.CHILD_TABLES, "edges", "chunks")
    return {t: conn.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid").fetchall() for t in tables}


def test_file_rows_insert_what_bulk_insert_inserts(corpus: Any, repo: Path, tmp_path: Path) -> None:
    paths = _rich(corpus, repo)
    parsed = [(p, None, project_bytes(p, (repo / p).read_bytes(), None)) for p in paths]
    projs = [r.proj for _, _, r in parsed if r.proj is not None]
    assert len(projs) == 2
    a = connect(tmp_path / "a.db", tmp_path / "as.db")
    b = connect(tmp_path / "b.db", tmp_path / "bs.db")
    writer.bulk_insert(a, projs, "NOW")
    rows = [writer.file_rows(p, sha, r, "NOW") for p, sha, r in parsed]
    writer.insert_rows(b, rows)
    expected = _rows_of(a)
    assert _rows_of(b) == expected
    # Every kind of child row is there, so each statement was compared.
    kinds = ("file_tags", "file_entities", "file_facets", "file_citations", "edges", "chunks")
    assert all(expected[t] for t in kinds)
    assert len(expected["chunks"]) > 1


def test_file_rows_of_an_unparseable_file_is_its_reason() -> None:
    parsed = project_bytes("areas/x.html", b"<html><article>no mark</article></html>", None)
    rows = writer.file_rows("areas/x.html", "abc", parsed, "NOW")
    assert rows.file is None
    assert rows.reason == parsed.reason and rows.reason
    assert (rows.path, rows.sha) == ("areas/x.html", "abc")


def test_a_tree_chunk_reads_only_the_blobs_it_projects(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _rich(corpus, repo)
    g = Git(repo)
    tree = {e.path: e.sha for e in g.ls_tree(g.head() or "HEAD")}
    asked: list[list[str]] = []
    real = Git.cat_blobs

    def spy(self: Git, shas: Any) -> dict[str, bytes]:
        wanted = list(shas)
        asked.append(wanted)
        return real(self, wanted)

    monkeypatch.setattr(Git, "cat_blobs", spy)
    missing = "0" * 40
    items = [
        ("README.html", tree.get("README.html", missing)),
        *[(p, tree[p]) for p in paths],
        ("areas/zz-missing.html", missing),  # a blob git cannot find: left out
    ]
    rows = indexer_module.tree_rows_chunk(g, "NOW", items)
    assert [r.path for r in rows] == paths
    assert asked == [[tree[p] for p in paths] + [missing]]
    assert all(r.file is not None for r in rows)


def _raises(items: list[int]) -> list[int]:
    raise RuntimeError(f"chunk {items}")


def _gc_state(items: list[int]) -> list[bool]:
    return [gc.isenabled() for _ in items]


def test_a_worker_task_runs_with_the_collector_paused_and_restores_it() -> None:
    assert gc.isenabled()
    assert parallel._gc_paused(_gc_state, [1, 2]) == [False, False]
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="chunk"):
        parallel._gc_paused(_raises, [1])
    assert gc.isenabled()
