"""A long-lived corpus follows its own writes in its caches instead of reloading them (issue 35).

After a write through this process's write doors, the default scope's members
are patched from the written paths' rows (memhtml.index.members), and the next
freshness check looks only at the watcher's paths plus the written ones
(Corpus.own_commit_landed), where a write from anyone else still costs the full
reload and `git status`. Either way the answers are a fresh corpus's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.index.bm25 import Postings
from memhtml.index.scope import Scope
from tests.index.test_indexer import snapshot

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")

WORDS = ["pool", "replica", "drain", "cache", "shard", "backup", "kafka", "lag", "retry", "queue"]
QUERIES = ["pool drain", "replica lag", "kafka retry backup", "cache shard", "queue"]
WORD_LISTS = [q.split() for q in QUERIES]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def cli(root: Path, *args: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *args, "--repo", str(root), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMHTML_EMBED": "fake"},
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture
def live(repo: Path) -> Iterator[Any]:
    """A long-lived corpus over 40 memories, past its second search (watching, members held)."""
    c = memhtml.open(repo, embedder="fake")
    ops = [
        {
            "op": "write",
            "title": f"note {i}",
            "type": "semantic",
            "claim": f"The {WORDS[i % 10]} {WORDS[i * 3 % 10]} and {WORDS[i * 7 % 10]} note {i}.",
        }
        for i in range(40)
    ]
    c.apply(ops)
    # One archived already: later archives land in folders that exist (a new folder is
    # something the watcher cannot vouch for, and sends the next check to `git status`).
    c.archive(c.conn.execute("SELECT path FROM files ORDER BY path DESC LIMIT 1").fetchone()[0])
    c.task_add("a first task")  # its folder too
    for q in QUERIES:  # the watcher starts on the second; the members load on the second
        c.search(q)
    assert c.scope_members.get(c.conn, Scope()) is not None
    yield c
    c.close()


def _members_as_sql(c: Any) -> tuple[dict[int, str], dict[str, set[str]]]:
    where, params = Scope().sql("f")
    rows = c.conn.execute(f"SELECT f.id, f.path, f.content_hash FROM files f WHERE {where}", params)
    by_row: dict[int, str] = {}
    by_hash: dict[str, set[str]] = {}
    for rowid, path, chash in rows:
        by_row[rowid] = path
        by_hash.setdefault(chash, set()).add(path)
    return by_row, by_hash


def _answers(c: Any) -> list[list[str]]:
    return [[h.path for h in c.search(q, limit=8).hits] for q in QUERIES]


def _fresh_answers(root: Path) -> list[list[str]]:
    with memhtml.open(root, embedder="fake") as fresh:
        return _answers(fresh)


def test_own_writes_patch_the_members_and_check_only_their_paths(live: Any, repo: Path) -> None:
    c = live
    paths = [
        p
        for (p,) in c.conn.execute(
            "SELECT path FROM files WHERE archived = 0 ORDER BY path LIMIT 4"
        )
    ]
    writes = [
        lambda: c.write(title="pool replica", claim="The pool replica drains the kafka queue."),
        lambda: c.correct(paths[0], claim="The corrected pool note drains its cache."),
        lambda: c.archive(paths[1]),
        lambda: c.link(paths[2], "relates_to", paths[3]),
        lambda: c.task_add("drain the pool replica"),  # a task: never in the default scope
        lambda: c.apply(
            [
                {"op": "write", "title": f"batch {i}", "type": "semantic", "claim": f"Shard {i}."}
                for i in range(3)
            ]
        ),
    ]
    for write in writes:
        loads, patches = c.scope_members.loads, c.scope_members.patches
        sized, resized = c.fts_postings.loads, c.fts_postings.patches
        for words in WORD_LISTS:  # these terms' postings are cached
            assert c.fts_postings.ranked(c.conn, words) is not None
        term_loads = c.fts_postings.term_loads
        before = c.freshness_checks
        write()
        assert c.scope_members.patches == patches + 1  # patched from the write's paths
        assert c.fts_postings.patches == resized + 1  # the BM25 row sizes too
        members = c.scope_members.get(c.conn, Scope())
        assert members is not None and members.current(c.conn)  # current without a reload
        by_row, by_hash = _members_as_sql(c)
        assert members.path_of_row == by_row
        assert {h: set(p) for h, p in members.paths_of_hash.items()} == by_hash
        fresh = Postings()
        assert fresh.ranked(c.conn, ["pool"]) is None  # a fresh cache's first query: FTS5's
        for words in WORD_LISTS:
            mine, theirs = c.fts_postings.ranked(c.conn, words), fresh.ranked(c.conn, words)
            assert mine is not None and theirs is not None
            assert mine[0].tolist() == theirs[0].tolist()
            assert mine[1].tolist() == theirs[1].tolist()  # to the bit
        fresh.close()
        assert c.fts_postings.term_loads == term_loads  # patched, not read again
        got = _answers(c)
        assert c.scope_members.loads == loads  # never read from the whole files table
        assert c.fts_postings.loads == sized  # nor the sizes from the whole docsize table
        taken = {k: c.freshness_checks[k] - before[k] for k in before}
        assert taken["full"] == 0 and taken["scoped"] >= 1, (writes.index(write), taken)
        assert got == _fresh_answers(repo)


def test_a_hand_edit_before_an_own_write_is_still_followed(live: Any, repo: Path) -> None:
    c = live
    path = c.conn.execute(
        "SELECT path FROM files WHERE archived = 0 ORDER BY path LIMIT 1"
    ).fetchone()[0]
    target = repo / path
    target.write_text(target.read_text().replace("note", "zanzibar"), encoding="utf-8")
    c.write(title="pool replica", claim="The pool replica drains the kafka queue.")
    assert path in [h.path for h in c.search("zanzibar").hits]
    mine = snapshot(c.conn)
    with memhtml.open(repo, embedder="fake") as other:  # the full `git status` path
        assert other.catch_up()
        assert snapshot(other.conn) == mine  # nothing the scoped checks missed
    assert _answers(c) == _fresh_answers(repo)


@pytest.mark.parametrize("how", ["cli", "hand_commit"])
def test_another_processs_write_is_seen_in_full(live: Any, repo: Path, how: str) -> None:
    c = live
    c.write(title="pool replica", claim="The pool replica drains the kafka queue.")
    c.search("pool")  # the write's scoped check ran; the members are patched
    patches, before = c.scope_members.patches, c.freshness_checks
    resized = c.fts_postings.patches
    if how == "cli":
        cli(repo, "write", "--type", "semantic", "--title", "zeppelin", "--claim", "Zeppelin ok.")
    else:
        path = c.conn.execute(
            "SELECT path FROM files WHERE archived = 0 ORDER BY path LIMIT 1"
        ).fetchone()[0]
        target = repo / path
        target.write_text(target.read_text().replace("note", "zeppelin"), encoding="utf-8")
        git(repo, "commit", "-qam", "hand edit")
    got = [h.path for h in c.search("zeppelin").hits]
    assert got and "zeppelin" in (repo / got[0]).read_text()
    taken = {k: c.freshness_checks[k] - before[k] for k in before}
    assert taken["scoped"] + taken["full"] >= 1
    assert c.scope_members.patches == patches  # not this process's write: no patch
    assert c.fts_postings.patches == resized
    assert _answers(c) == _fresh_answers(repo)
    by_row, _ = _members_as_sql(c)
    members = c.scope_members.get(c.conn, Scope())
    assert members is None or members.path_of_row == by_row
