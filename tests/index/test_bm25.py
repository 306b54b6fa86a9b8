"""The fts arm's in-memory BM25 equals FTS5's bm25() to the bit, and the arm's answers with it
equal the arm's answers without it, for every scope; a write by anyone drops the cache."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memhtml
from memhtml.index.arms import fts_arm
from memhtml.index.bm25 import Postings, _varint, best_first
from memhtml.index.retrieval import fts_query, fts_words, resolve_weights
from memhtml.index.scope import Scope
from memhtml.store.layout import init_repo

# A small vocabulary so that queries match many memories with many ties, plus words the
# tokenizer folds or stems (diacritics, plurals, -ing), and an underscore word FTS5 splits.
VOCAB = [
    "pool",
    "replica",
    "drain",
    "drains",
    "draining",
    "cache",
    "caches",
    "naïve",
    "café",
    "resume",
    "résumé",
    "gateway",
    "limiter",
    "limit",
    "limits",
    "token",
    "tokens",
    "rollout",
    "backup",
    "vacuum",
    "shard",
    "shards",
    "kafka",
    "lag",
    "retry",
    "retries",
    "snapshot",
]
FIXTURE = HealthCheck.function_scoped_fixture
SCOPES = (
    Scope(),
    Scope.build(types=["procedural"]),
    Scope.build(include_archived=True),
    Scope.build(tags=["ops"]),
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Eighty memories of random words (some repeated), a few tagged, four archived."""
    root = tmp_path_factory.mktemp("bm25") / "memory"
    init_repo(root)
    rng = random.Random(11)
    c = memhtml.open(root, embedder="fake")
    ops = []
    for i in range(80):
        words = [rng.choice(VOCAB) for _ in range(rng.randint(3, 30))]
        op: dict[str, Any] = {
            "op": "write",
            "title": f"note {i} {rng.choice(VOCAB)}",
            "type": "semantic" if i % 3 else "procedural",
            "claim": " ".join(words).capitalize() + ".",
        }
        if i % 5 == 0:
            op["tags"] = ["ops"]
        ops.append(op)
    c.apply(ops)
    for (path,) in c.conn.execute("SELECT path FROM files ORDER BY path LIMIT 4").fetchall():
        c.archive(path)
    yield c
    c.close()


def _fts5(conn: Any, words: list[str]) -> dict[int, float]:
    match = fts_query(" ".join(words))
    return dict(
        conn.execute(
            "SELECT rowid, bm25(files_fts) FROM files_fts WHERE files_fts MATCH ?", (match,)
        ).fetchall()
    )


def _served(postings: Postings, conn: Any, words: list[str]) -> dict[int, float] | None:
    ranked = postings.ranked(conn, words)
    if ranked is None:
        return None
    rows, score = ranked
    return dict(zip(rows.tolist(), score.tolist(), strict=True))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from([*VOCAB, "absent", "the"]), min_size=1, max_size=7))
def test_scores_equal_fts5_bm25_bit_for_bit(corpus: Any, query: list[str]) -> None:
    words = fts_words(" ".join(query))
    postings = Postings()
    assert postings.ranked(corpus.conn, words) is None  # the first query after a change: FTS5
    served = _served(postings, corpus.conn, words)
    assert served is not None
    assert served == _fts5(corpus.conn, words)  # == on floats: the same bits


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=5),
    st.sampled_from(SCOPES),
    st.sampled_from((1, 3, 10, 40)),
)
def test_arm_answers_equal_with_and_without_postings(
    corpus: Any, query: list[str], scope: Scope, limit: int
) -> None:
    weights = resolve_weights(None)
    text = " ".join(query)
    postings = Postings()
    plain = fts_arm(corpus.conn, text, scope, weights, limit)
    assert fts_arm(corpus.conn, text, scope, weights, limit, postings=postings) == plain
    # The second call is served from memory: the same paths in the same order.
    assert postings.ranked(corpus.conn, fts_words(text)) is not None
    assert fts_arm(corpus.conn, text, scope, weights, limit, postings=postings) == plain


def test_a_word_fts5_reads_as_two_tokens_is_left_to_fts5(corpus: Any) -> None:
    postings = Postings()
    postings.ranked(corpus.conn, ["pool_replica"])
    assert postings.terms_of(corpus.conn, "pool_replica") == ("pool", "replica")
    assert postings.ranked(corpus.conn, ["pool_replica"]) is None
    assert postings.terms_of(corpus.conn, "Naïve") == ("naiv",)  # folded and stemmed by FTS5


def test_a_write_drops_the_cache_and_the_next_answers_include_it(tmp_path: Any) -> None:
    root = tmp_path / "memory"
    init_repo(root)
    with memhtml.open(root, embedder="fake") as c:
        c.apply(
            [
                {"op": "write", "title": f"t{i}", "type": "semantic", "claim": f"Pool {i} drains."}
                for i in range(5)
            ]
        )
        postings = Postings()
        words = ["pool", "drains"]
        postings.ranked(c.conn, words)
        before = _served(postings, c.conn, words)
        assert before is not None and len(before) == 5
        # Another process writes: a second connection, as a CLI beside a server would.
        with memhtml.open(root, embedder="fake") as other:
            other.apply(
                [{"op": "write", "title": "late", "type": "semantic", "claim": "The pool drains."}]
            )
        assert postings.ranked(c.conn, words) is None  # changed: FTS5 ranks, nothing loads
        after = _served(postings, c.conn, words)
        assert after is not None and len(after) == 6
        assert after == _fts5(c.conn, words)


def test_repeat_searches_are_served_from_memory_with_the_same_answers(corpus: Any) -> None:
    queries = ["pool drains", "naïve café résumé", "kafka lag retries", "limiter tokens"]
    first = [[h.path for h in corpus.search(q, limit=20).hits] for q in queries]
    again = [[h.path for h in corpus.search(q, limit=20).hits] for q in queries]
    assert again == first
    assert corpus.fts_postings._terms  # the repeat searches loaded postings


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_varint_round_trip(value: int) -> None:
    # SQLite's varint: 7 bits a byte, high bit set on all but the last; a ninth byte is whole.
    if value < 2**56:
        groups = []
        v = value
        while True:
            groups.append(v & 0x7F)
            v >>= 7
            if not v:
                break
        data = bytes([g | 0x80 for g in reversed(groups[1:])] + [groups[0]])
    else:
        high, low = value >> 8, value & 0xFF
        data = bytes((high >> (7 * (7 - i)) & 0x7F) | 0x80 for i in range(8)) + bytes([low])
    assert _varint(data + b"\x05", 0) == (value, len(data))


@given(
    st.lists(st.sampled_from([-3.0, -2.5, -2.0, -1.0, -0.5, 0.0]), min_size=0, max_size=60),
    st.integers(min_value=1, max_value=8),
)
def test_best_first_bands_join_into_the_full_stable_order(scores: list[float], first: int) -> None:
    rows = np.arange(100, 100 + len(scores), dtype=np.int64)
    score = np.array(scores, dtype=np.float64)
    bands = list(best_first(rows, score, first))
    joined = [r for band, _ in bands for r in band]
    expected = sorted(range(100, 100 + len(scores)), key=lambda r: (scores[r - 100], r))
    assert joined == expected
    # A band ends with every row tied with its last.
    for (_, values), (_, following) in itertools.pairwise(bands):
        assert values[-1] < following[0]


def test_the_arm_reads_one_state_of_the_index_while_another_process_writes(tmp_path: Any) -> None:
    from memhtml.index.db import read_snapshot

    root = tmp_path / "memory"
    init_repo(root)
    with memhtml.open(root, embedder="fake") as c:
        c.apply([{"op": "write", "title": "a", "type": "semantic", "claim": "The pool drains."}])
        count = "SELECT count(*) FROM files"
        with read_snapshot(c.conn):
            before = c.conn.execute(count).fetchone()[0]
            with memhtml.open(root, embedder="fake") as other:  # a writer beside the reader
                other.apply(
                    [{"op": "write", "title": "b", "type": "semantic", "claim": "It drains."}]
                )
            # Inside the snapshot the other commit is not seen; nested snapshots are no-ops.
            with read_snapshot(c.conn):
                assert c.conn.execute(count).fetchone()[0] == before
        assert c.conn.execute(count).fetchone()[0] == before + 1
        assert not c.conn.in_transaction
