"""A store whose embedder is an OpenAI-compatible endpoint (the stand-in on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import memhtml
from bench.embed_standin import StandIn
from memhtml.embed import registry


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    with StandIn() as server:
        for name, value in server.environment().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("MEMHTML_EMBED_RETRIES", "0")
        registry.clear_cache()
        yield server
        registry.clear_cache()


def test_writes_embed_through_the_endpoint_and_search_uses_it(repo, standin):
    with memhtml.open(repo, embedder="openai") as c:
        c.write(type="semantic", title="VIP", claim="Drain the staging VIP before a deploy.")
        c.write(type="semantic", title="Keys", claim="Rotate the signing keys every quarter.")
        result = c.search("when do we drain the VIP", explain=True)
        status = c.index.status()["vector_space"]
    assert not result.degraded and "vector" in result.arms
    assert result.hits[0].title == "VIP"
    assert status["model"] == "openai:stand-in-embed" and status["coverage"] == 1.0
    assert standin.documents >= 3  # two chunks and the query


def test_an_endpoint_that_is_down_costs_vectors_not_memories(repo, standin, monkeypatch):
    monkeypatch.delenv("MEMHTML_EMBED_DIM")  # the width must be asked: the probe fails too
    registry.clear_cache()
    standin.fault = "500"
    with memhtml.open(repo, embedder="openai") as c:
        written = c.write(type="semantic", title="Pool", claim="The pool shrank after the push.")
        result = c.search("pool shrank")
        assert c.embedder is None and c.embedder_error is not None
    assert written["created"] and result.hits[0].path == written["path"]
    assert result.degraded and "ERR_MODEL_UNAVAILABLE" in (result.degraded_reason or "")
    standin.fault = None
    registry.clear_cache()
    with memhtml.open(repo, embedder="openai") as c:
        closed = c.index.embed()
        result = c.search("pool shrank")
    assert closed["embedded"] == 1 and closed["error"] is None
    assert not result.degraded


def test_a_contract_breach_narrows_search_instead_of_failing_it(repo, standin):
    with memhtml.open(repo, embedder="openai") as c:
        c.write(type="semantic", title="Cache", claim="The CDN cache is purged nightly.")
        standin.fault = "nan"
        result = c.search("cdn cache purge")
    assert result.hits and result.degraded
    assert "ERR_EMBED_CONTRACT" in (result.degraded_reason or "")
