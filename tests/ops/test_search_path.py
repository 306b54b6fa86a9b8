"""The search path's speed-ups keep its answers: the vector arm ranked in Python equals the SQL
join it replaced, a query embedding that fails on the arm's thread degrades the search as before,
and a process that searches again watches the tree without missing a hand edit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memhtml
from memhtml.embed import register, unregister
from memhtml.embed.fake import FakeEmbedder
from memhtml.index.arms import vector_arm
from memhtml.index.scope import Scope
from memhtml.store.layout import init_repo


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Twenty memories, four of them archived (an archived copy shares its content hash)."""
    root = tmp_path_factory.mktemp("search-path") / "memory"
    init_repo(root)
    c = memhtml.open(root, embedder="fake")
    c.apply(
        [
            {
                "op": "write",
                "title": f"note {i}",
                "type": "semantic" if i % 3 else "procedural",
                "claim": f"The pool number {i} drains the replica {i % 4}.",
            }
            for i in range(20)
        ]
    )
    for path in [r[0] for r in c.conn.execute("SELECT path FROM files ORDER BY path LIMIT 4")]:
        c.archive(path)
    yield c
    c.close()


def _sql_vector_arm(conn: Any, vector: list[tuple[str, float]], scope: Scope, limit: int) -> Any:
    """The vector arm as the fused statement ranked it before (JSON join, SQL order): the oracle."""
    where, params = scope.sql("f")
    return [
        r[0]
        for r in conn.execute(
            "SELECT path FROM (SELECT f.path AS path,"
            " max(CAST(json_extract(j.value, '$[1]') AS REAL)) AS sim"
            " FROM json_each(:vec) j JOIN files f ON f.content_hash = json_extract(j.value, '$[0]')"
            f" WHERE {where} GROUP BY f.path) ORDER BY sim DESC, path LIMIT :lim",
            {**params, "vec": json.dumps(vector), "lim": limit},
        )
    ]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picks=st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from([0.9, 0.5, 0.5, 0.25, 0.1, -0.2])),
        min_size=0,
        max_size=30,
    ),
    limit=st.integers(1, 12),
    scope=st.sampled_from([Scope(), Scope(include_archived=True), Scope(types=("procedural",))]),
)
def test_vector_arm_equals_the_sql_join(
    small: Any, picks: list[tuple[int, float]], limit: int, scope: Scope
) -> None:
    """Ties in similarity, hashes of no memory, archived copies and tiny limits included."""
    hashes = [r[0] for r in small.conn.execute("SELECT DISTINCT content_hash FROM files")]
    hashes += [f"sha256:{i:064x}" for i in range(40 - len(hashes) + 1)]  # hashes of nothing
    chosen = dict((hashes[i], sim) for i, sim in picks)
    vector = sorted(chosen.items(), key=lambda kv: (-kv[1], kv[0]))  # as the vector arm ranks them
    got = vector_arm(small.conn, vector, scope, limit)
    assert got == _sql_vector_arm(small.conn, vector, scope, limit)
    if scope.include_archived and vector:
        assert len(got) == len(set(got))


class _QueryFails(FakeEmbedder):
    """Embeds documents; fails on every query (on the vector arm's thread)."""

    def embed_query(self, text: str) -> Any:
        raise RuntimeError("the model fell over")


def test_a_failing_query_embedding_degrades_beside_the_fts_arm(repo: Path) -> None:
    register("fails-on-query", _QueryFails)
    try:
        with memhtml.open(repo, embedder="fails-on-query") as c:
            c.write(title="vip", claim="Drain the staging VIP before a deploy.")
            result = c.search("drain the staging VIP")
    finally:
        unregister("fails-on-query")
    assert result.degraded
    assert result.degraded_reason == "ERR_MODEL_UNAVAILABLE: RuntimeError: the model fell over"
    assert result.arms == ["fts", "recency", "salience"]
    assert [h.title for h in result.hits] == ["vip"]


def test_a_second_search_watches_and_still_sees_a_hand_edit(corpus: Any, repo: Path) -> None:
    path = corpus.write(title="port", claim="The API listens on port 8080.")["path"]
    corpus.search("port")
    assert corpus._watcher is None  # a one-shot read never pays for a watcher
    corpus.search("port")
    assert corpus._watcher is not None
    corpus.search("port")  # verified: this one skipped git status
    target = repo / path
    target.write_text(target.read_text().replace("8080", "zebrafish 9090"))
    result = corpus.search("zebrafish")
    assert result.index_fresh
    assert [h.path for h in result.hits] == [path]
    assert "zebrafish" in result.hits[0].gist
