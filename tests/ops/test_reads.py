"""Reads: listing with filters and cursor paging, graph neighbours, resolve, entity clocks."""

from __future__ import annotations

from typing import Any

import pytest

from memhtml.contracts.errors import InvalidFlagError, PathNotFoundError
from memhtml.ops.health import corpus_health, status
from memhtml.ops.reads import entity_activity, neighbors, resolve


def test_list_filters_and_cursor(corpus: Any) -> None:
    corpus.apply(
        [
            {
                "op": "write",
                "title": f"L{i}",
                "type": "semantic" if i % 2 else "procedural",
                "body": f"Listing item {i}.",
                "tag": ["even" if i % 2 == 0 else "odd"],
                "workspace": "alpha" if i < 3 else None,
                "entity": [f"team:{'Core' if i < 5 else 'edge'}"],
            }
            for i in range(9)
        ]
    )
    seen: list[str] = []
    cursor = None
    while True:
        page = corpus.list(limit=4, cursor=cursor)
        seen += [f["path"] for f in page["files"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == 9 and seen == sorted(seen)
    assert {f["memory_type"] for f in corpus.list(type="procedural")["files"]} == {"procedural"}
    assert len(corpus.list(workspace="alpha")["files"]) == 3
    assert len(corpus.list(tag="odd")["files"]) == 4
    assert len(corpus.list(entity="team:core")["files"]) == 5
    assert len(corpus.list(para="projects")["files"]) == 3
    with pytest.raises(InvalidFlagError):
        corpus.list(para="elsewhere")


def test_neighbors_two_hops_and_resolve(corpus: Any) -> None:
    a = corpus.write(title="A", type="semantic", claim="Alpha node.")["path"]
    b = corpus.write(title="B", type="semantic", claim="Beta node.")["path"]
    c = corpus.write(title="C", type="semantic", claim="Gamma node.")["path"]
    corpus.link(a, "leads_to", b)
    corpus.link(b, "leads_to", c)
    one = neighbors(corpus, a)
    assert [(n["path"], n["hop"]) for n in one["nodes"]] == [(b, 1)]
    two = neighbors(corpus, a, depth=2)
    assert [(n["path"], n["hop"]) for n in two["nodes"]] == [(b, 1), (c, 2)]
    assert neighbors(corpus, c)["nodes"][0]["direction"] == "in"
    fixed = corpus.correct(b, claim="Beta node, corrected.")
    chain = resolve(corpus, b)
    assert chain["resolved"] == fixed["path"] and chain["live"]
    assert [step["via"] for step in chain["chain"]] == ["archived", "superseded"]
    with pytest.raises(PathNotFoundError):
        resolve(corpus, "areas/inbox/never.html")


def test_entity_activity_clocks(corpus: Any) -> None:
    corpus.write(
        title="E1",
        type="episodic",
        claim="Checkout broke.",
        event_at="2024-01-05",
        entity=["service:Checkout"],
    )
    corpus.write(title="E2", type="semantic", claim="Checkout scales.", entity=["service:Checkout"])
    corpus.write(title="E3", type="semantic", claim="Search scales.", entity=["service:search"])
    out = entity_activity(corpus, type="SERVICE", limit=1)
    assert out["entity_count"] == 2 and len(out["entities"]) == 1
    row = next(e for e in entity_activity(corpus)["entities"] if e["entity_name"] == "Checkout")
    assert row["memories"] == 2 and row["last_event_at"] == "2024-01-05"
    assert row["last_written_at"] > row["last_event_at"]
    assert row["last_activity_at"] == row["last_written_at"]


def test_status_and_doctor_on_a_healthy_store(corpus: Any) -> None:
    a = corpus.write(title="S", type="semantic", claim="Status fact.")["path"]
    b = corpus.write(title="T", type="semantic", claim="Target fact.")["path"]
    corpus.link(a, "relates_to", b)
    s = status(corpus)
    assert s["counts_by_type"] == {"semantic": 2} and s["index_fresh"] and not s["dirty"]
    health = corpus_health(corpus)
    assert health["healthy"], health
    moved = corpus.archive(b)["archive_path"]
    after = corpus_health(corpus)
    # An archive leaves the graph whole: the link now names the archive copy.
    assert after["dangling"] == [] and after["healthy"], after
    assert [(x["rel"], x["path"]) for x in corpus.read(a, bump=False)["links"]] == [
        ("relates_to", moved)
    ]
