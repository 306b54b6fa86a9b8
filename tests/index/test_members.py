"""The default scope's members in memory answer both content arms exactly as SQL does, load only
on the second query over an unchanged index, and are dropped by any write, by anyone."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memhtml
from memhtml.index.arms import fts_arm, vector_arm
from memhtml.index.bm25 import Postings
from memhtml.index.members import ScopeMembers, state_key
from memhtml.index.retrieval import resolve_weights
from memhtml.index.scope import Scope
from memhtml.store.layout import init_repo

WORDS = ["pool", "replica", "drain", "cache", "shard", "backup", "kafka", "lag", "retry"]
FIXTURE = HealthCheck.function_scoped_fixture


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Sixty memories, a task, four archived."""
    root = tmp_path_factory.mktemp("members") / "memory"
    init_repo(root)
    rng = random.Random(5)
    c = memhtml.open(root, embedder="fake")
    ops: list[dict[str, Any]] = []
    for i in range(60):
        claim = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))).capitalize() + "."
        ops.append({"op": "write", "title": f"note {i}", "type": "semantic", "claim": claim})
    ops.append({"op": "write", "title": "a task", "type": "task", "claim": "Drain the pool."})
    c.apply(ops)
    for (path,) in c.conn.execute("SELECT path FROM files ORDER BY path LIMIT 4").fetchall():
        c.archive(path)
    yield c
    c.close()


def _loaded(conn: Any) -> Any:
    members = ScopeMembers()
    assert members.get(conn, Scope()) is None  # the first query over this state: SQL answers
    got = members.get(conn, Scope())
    assert got is not None
    return got


def test_members_are_the_default_scope(corpus: Any) -> None:
    got = _loaded(corpus.conn)
    where, params = Scope().sql("f")
    rows = corpus.conn.execute(
        f"SELECT f.id, f.path, f.content_hash FROM files f WHERE {where}", params
    )
    expected = {rowid: path for rowid, path, _ in rows}
    assert got.path_of_row == expected
    assert "a task" not in {
        corpus.conn.execute("SELECT title FROM files WHERE path = ?", (p,)).fetchone()[0]
        for p in expected.values()
    }
    assert sorted(p for paths in got.paths_of_hash.values() for p in paths) == sorted(
        expected.values()
    )
    assert ScopeMembers().get(corpus.conn, Scope.build(include_archived=True)) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[FIXTURE])
@given(
    picks=st.lists(
        st.tuples(st.integers(0, 70), st.sampled_from([0.9, 0.5, 0.5, 0.25, -0.2])),
        max_size=40,
    ),
    limit=st.integers(1, 30),
)
def test_vector_arm_with_members_equals_sql(
    corpus: Any, picks: list[tuple[int, float]], limit: int
) -> None:
    hashes = [r[0] for r in corpus.conn.execute("SELECT DISTINCT content_hash FROM files")]
    hashes += [f"sha256:{i:064x}" for i in range(71 - len(hashes))]  # hashes of nothing
    chosen = dict((hashes[i], sim) for i, sim in picks)
    vector = sorted(chosen.items(), key=lambda kv: (-kv[1], kv[0]))
    members = _loaded(corpus.conn)
    sql = vector_arm(corpus.conn, vector, Scope(), limit)
    assert vector_arm(corpus.conn, vector, Scope(), limit, members) == sql


@settings(max_examples=60, deadline=None, suppress_health_check=[FIXTURE])
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.sampled_from((1, 3, 10, 40)))
def test_fts_arm_with_members_equals_sql(corpus: Any, query: list[str], limit: int) -> None:
    weights, text = resolve_weights(None), " ".join(query)
    plain = fts_arm(corpus.conn, text, Scope(), weights, limit)
    postings, members = Postings(), _loaded(corpus.conn)
    fts_arm(corpus.conn, text, Scope(), weights, limit, postings=postings)  # loads the postings
    assert (
        fts_arm(corpus.conn, text, Scope(), weights, limit, postings=postings, members=members)
        == plain
    )


def test_a_write_by_another_connection_or_this_one_drops_them(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    init_repo(root)
    with memhtml.open(root, embedder="fake") as c:
        c.apply([{"op": "write", "title": "a", "type": "semantic", "claim": "The pool drains."}])
        cache = ScopeMembers()
        cache.get(c.conn, Scope())
        first = cache.get(c.conn, Scope())
        assert first is not None and first.current(c.conn)
        assert cache.get(c.conn, Scope()) is first  # served again while nothing changed
        with memhtml.open(root, embedder="fake") as other:  # another connection archives it
            other.archive(next(iter(first.path_of_row.values())))
        assert not first.current(c.conn)
        assert cache.get(c.conn, Scope()) is None  # changed: SQL answers this query
        second = cache.get(c.conn, Scope())
        assert second is not None and second.path_of_row == {}
        c.apply([{"op": "write", "title": "b", "type": "semantic", "claim": "It drains."}])
        assert not second.current(c.conn)  # this connection's own write
        assert cache.get(c.conn, Scope()) is None
        key = state_key(c.conn)
    with memhtml.open(root, embedder="fake") as again:  # a new connection restarts the counters
        assert cache.get(again.conn, Scope()) is None or state_key(again.conn) != key


def test_repeat_searches_never_return_what_another_process_archived(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    init_repo(root)
    with memhtml.open(root, embedder="fake") as c:
        c.apply(
            [
                {
                    "op": "write",
                    "title": f"n{i}",
                    "type": "semantic",
                    "claim": f"The pool {i} drains.",
                }
                for i in range(6)
            ]
        )
        for _ in range(3):  # the third search is served by the members and the postings
            hits = [h.path for h in c.search("pool drains").hits]
        assert c.scope_members._members is not None
        with memhtml.open(root, embedder="fake") as other:
            other.archive(hits[0])
        for _ in range(3):
            after = [h.path for h in c.search("pool drains").hits]
            assert hits[0] not in after
            assert sorted(after) == sorted(hits[1:])
