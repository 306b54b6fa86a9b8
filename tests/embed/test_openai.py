"""The OpenAI-compatible embeddings backend over real HTTP, against the stand-in on 127.0.0.1."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.embed_standin import StandIn
from memhtml.contracts.errors import EmbedContractError, InvalidFlagError, ModelUnavailableError
from memhtml.embed import registry
from memhtml.embed.base import Embedder, space_id
from memhtml.embed.fake import FakeEmbedder
from memhtml.embed.known_models import bare_name, known_model
from memhtml.embed.openai import OpenAIEmbedder, estimate_tokens, plan_batches

KEY = "sk-local-secret-123"


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as s:
        yield s


def embedder(server: StandIn, **kw: object) -> OpenAIEmbedder:
    kw.setdefault("dim", server.dim)
    kw.setdefault("sleep", lambda _s: None)
    return OpenAIEmbedder(server.model, base_url=server.base_url, **kw)  # type: ignore[arg-type]


def test_rows_are_the_servers_normalized_in_input_order(server):
    texts = ["drain the VIP before a deploy", "   ", "rotate the signing keys", "pool size"]
    e = embedder(server, api_key=KEY)
    got = e.embed_documents(texts)
    want = FakeEmbedder().embed_documents(texts)
    assert got.shape == (4, 384) and got.dtype == np.float32
    assert np.allclose(got, want, atol=1e-6)
    assert not got[1].any()  # a blank text is a zero row and never sent
    assert server.documents == 3 and "   " not in server.seen
    [body] = server.bodies
    assert body == {"model": server.model, "encoding_format": "float", "dimensions": 384}
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"
    assert isinstance(e, Embedder)
    assert space_id(e) == "openai:stand-in-embed@384"


def test_rows_answered_out_of_order_go_back_by_index(server):
    server.fault = "shuffle"
    texts = ["alpha beta", "gamma delta", "epsilon"]
    got = embedder(server).embed_documents(texts)
    assert np.allclose(got, FakeEmbedder().embed_documents(texts), atol=1e-6)


def test_batches_by_count_and_by_estimated_tokens(server):
    texts = [f"text number {i}" for i in range(10)]
    embedder(server, batch_size=3).embed_documents(texts)
    assert server.requests == 4  # 3 + 3 + 3 + 1
    server.reset_counts()
    long = ["word " * 60] * 4  # 300 bytes each: 100 estimated tokens
    embedder(server, batch_tokens=250).embed_documents(long)
    assert server.requests == 2
    server.reset_counts()
    embedder(server, batch_tokens=10).embed_documents(long[:2])  # each over the budget alone
    assert server.requests == 2


@given(
    st.lists(st.text(max_size=40), max_size=40),
    st.integers(min_value=1, max_value=8),
    st.integers(min_value=1, max_value=60),
)
def test_plan_batches_covers_every_text_once_within_the_limits(texts, count, tokens):
    batches = plan_batches(texts, max_count=count, max_tokens=tokens)
    flat = [i for b in batches for i in b]
    assert flat == [i for i, t in enumerate(texts) if t.strip()]
    for b in batches:
        assert 1 <= len(b) <= count
        cost = sum(estimate_tokens(texts[i]) for i in b)
        assert cost <= tokens or len(b) == 1


def test_the_token_estimate_overcounts_english_and_counts_cjk():
    assert estimate_tokens("four") == 2  # 4 bytes / 3
    assert estimate_tokens("日本語") == 3  # 9 bytes: one token a character


def test_known_model_prefixes_go_on_each_side_and_name_the_space(server):
    server.model, server.dim = "nomic-embed-text:latest", 768
    e = OpenAIEmbedder(server.model, base_url=server.base_url)
    assert e.dim == 768 and server.requests == 0  # the native width is known: no probe
    e.embed_documents(["the VIP drains first"])
    e.embed_query("which drains first")
    assert "search_document: the VIP drains first" in server.seen
    assert "search_query: which drains first" in server.seen
    assert "dimensions" not in server.bodies[0]  # the native width is never asked for
    digest = hashlib.sha256(b"search_document: ").hexdigest()[:8]
    assert e.model_id == f"openai:nomic-embed-text:latest#{digest}"
    bare = OpenAIEmbedder(server.model, base_url=server.base_url, document_prefix="")
    assert bare.model_id == "openai:nomic-embed-text:latest"


def test_a_width_other_than_the_native_one_is_asked_for(server):
    server.model = "text-embedding-3-small"
    e = OpenAIEmbedder(server.model, base_url=server.base_url, dim=256)
    assert e.embed_documents(["short"]).shape == (1, 256)
    assert server.bodies[0]["dimensions"] == 256


def test_an_unknown_model_without_a_dim_is_probed_once(server):
    e = OpenAIEmbedder(server.model, base_url=server.base_url)
    assert e.dim == 384 and e.dim == 384
    assert server.requests == 1
    assert "dimensions" not in server.bodies[0]


@pytest.mark.parametrize(
    ("model", "family", "query", "document"),
    [
        ("intfloat/e5-large-v2", "e5-large", "query: ", "passage: "),
        ("BAAI/bge-small-en-v1.5", "bge-small-en", "Represent", ""),
        ("mxbai-embed-large:335m", "mxbai-embed-large", "Represent", ""),
        ("Qwen/Qwen3-Embedding-0.6B", "qwen3-embedding", "Instruct: ", ""),
        ("multilingual-e5-large-instruct", "multilingual-e5-large-instruct", "Instruct: ", ""),
    ],
)
def test_known_model_rows(model, family, query, document):
    row = known_model(model)
    assert row is not None and family in row.pattern
    assert row.query_prefix.startswith(query) and row.document_prefix == document
    assert known_model("my-own-embedder") is None
    assert bare_name("BAAI/bge-m3:latest") == "bge-m3"


def test_a_rate_limit_is_retried_after_the_servers_wait(server):
    server.fault, server.fault_times = "429", 2
    waits: list[float] = []
    e = embedder(server, sleep=waits.append)
    assert e.embed_documents(["once more"]).shape == (1, 384)
    assert server.requests == 3 and waits == [0.0, 0.0]  # Retry-After: 0


def test_5xx_backs_off_exponentially_then_gives_up_retryable(server):
    server.fault = "500"
    waits: list[float] = []
    e = embedder(server, retries=3, sleep=waits.append)
    with pytest.raises(ModelUnavailableError) as info:
        e.embed_documents(["never"])
    assert info.value.code == "ERR_MODEL_UNAVAILABLE"
    assert info.value.details["retryable"] is True and info.value.details["attempts"] == 4
    assert server.requests == 4 and len(waits) == 3
    for attempt, wait in enumerate(waits):  # 0.5 s doubling, times a jitter of 0.5-1.5
        assert 0.25 * 2**attempt <= wait <= 0.75 * 2**attempt


def test_a_query_is_retried_at_most_once(server):
    server.fault = "500"
    with pytest.raises(ModelUnavailableError):
        embedder(server, retries=4).embed_query("where is the runbook")
    assert server.requests == 2


def test_401_is_not_retried_and_never_echoes_the_key(server):
    server.api_key = "the-right-key"
    e = embedder(server, api_key=KEY)
    with pytest.raises(ModelUnavailableError) as info:
        e.embed_documents(["secret stuff"])
    err = info.value
    assert server.requests == 1
    assert err.details["retryable"] is False and err.details["http_status"] == 401
    assert "MEMHTML_EMBED_API_KEY" in err.message
    assert KEY not in repr((err.message, err.suggestions, err.details))


def test_an_unknown_model_is_a_404_that_says_so(server):
    with pytest.raises(ModelUnavailableError) as info:
        OpenAIEmbedder("no-such-model", base_url=server.base_url, dim=8).embed_query("x")
    assert info.value.details["http_status"] == 404 and "no-such-model" in info.value.message


@pytest.mark.parametrize(
    ("fault", "reason", "words"),
    [
        ("dim", "dim", "385 dims"),
        ("nan", "nan", "NaN"),
        ("rows", "rows", "1 row(s) for 2 text(s)"),
        ("html", "not_json", "HTML page"),
    ],
)
def test_unusable_answers_are_contract_errors(server, fault, reason, words):
    server.fault = fault
    with pytest.raises(EmbedContractError) as info:
        embedder(server).embed_documents(["one text", "another text"])
    err = info.value
    assert err.code == "ERR_EMBED_CONTRACT" and err.details["reason"] == reason
    assert err.details["retryable"] is False and words in err.message
    assert server.requests == 1  # a retry cannot fix the endpoint's model


def test_a_hanging_endpoint_times_out(server):
    server.fault, server.hang_s = "hang", 2.0
    with pytest.raises(ModelUnavailableError) as info:
        embedder(server, timeout_s=0.2, retries=0).embed_documents(["slow"])
    assert "did not answer within 0.2 s" in info.value.message
    assert info.value.details["retryable"] is True


def test_an_unreachable_endpoint_is_retryable():
    e = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", dim=8, retries=0)
    with pytest.raises(ModelUnavailableError) as info:
        e.embed_documents(["x"])
    assert info.value.details["retryable"] is True and "unreachable" in info.value.message


def test_the_environment_configures_it_and_refuses_nonsense(server):
    env = {**server.environment(), "MEMHTML_EMBED_BATCH": "7", "MEMHTML_EMBED_RETRIES": "0"}
    e = OpenAIEmbedder.from_environment(env)
    assert (e.model, e.dim, e.batch_size, e.retries) == (server.model, 384, 7, 0)
    with pytest.raises(ModelUnavailableError) as missing:
        OpenAIEmbedder.from_environment({})
    assert "MEMHTML_EMBED_MODEL" in missing.value.message
    for name, value in [
        ("MEMHTML_EMBED_DIM", "wide"),
        ("MEMHTML_EMBED_DIM", "1"),
        ("MEMHTML_EMBED_BATCH", "0"),
        ("MEMHTML_EMBED_TIMEOUT", "-3"),
        ("MEMHTML_EMBED_RETRIES", "11"),
        ("MEMHTML_EMBED_BASE_URL", "127.0.0.1:11434/v1"),
    ]:
        with pytest.raises(InvalidFlagError) as info:
            OpenAIEmbedder.from_environment({**env, name: value})
        assert name in info.value.message


def test_the_registry_builds_it_from_the_environment(server, monkeypatch):
    for name, value in server.environment().items():
        monkeypatch.setenv(name, value)
    registry.clear_cache()
    try:
        e = registry.get_embedder("openai")
        assert e is not None and e.model_id == "openai:stand-in-embed"
        assert "openai" in registry.available()
    finally:
        registry.clear_cache()
