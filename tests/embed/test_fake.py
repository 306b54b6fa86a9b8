"""The fake embedder: stable values, unit rows, batch == single, word overlap means closeness."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memhtml.embed import space_id
from memhtml.embed.base import Embedder
from memhtml.embed.fake import MODEL_ID, FakeEmbedder, _bucket_and_sign

SENTENCE = "Drain the VIP before reverting the deploy."


def test_feature_hashing_is_pinned():
    # blake2b, not hash(): these must never change across platforms or Python versions.
    assert _bucket_and_sign("w:drain", 384) == (62, 1)
    assert _bucket_and_sign("c:<dr", 384) == (345, -1)


def test_fixed_vector_values():
    vector = FakeEmbedder().embed_query(SENTENCE)
    nonzero = np.nonzero(vector)[0]
    assert len(nonzero) == 37
    assert nonzero[:5].tolist() == [15, 20, 32, 33, 38]
    assert [round(float(vector[i]), 6) for i in nonzero[:5]] == [
        -0.112509,
        0.112509,
        0.112509,
        0.225018,
        -0.112509,
    ]


def test_same_values_under_another_hash_seed():
    code = (
        "from memhtml.embed.fake import FakeEmbedder;"
        f"print(FakeEmbedder().embed_query({SENTENCE!r}).tobytes().hex())"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout.strip())
    assert outputs == {FakeEmbedder().embed_query(SENTENCE).tobytes().hex()}


def test_identity_and_protocol():
    fake = FakeEmbedder()
    assert isinstance(fake, Embedder)
    assert (fake.model_id, fake.dim) == (MODEL_ID, 384)
    assert space_id(fake) == "memhtml-fake-v1@384"
    assert space_id(FakeEmbedder(dim=64)) == "memhtml-fake-v1@64"


def test_rows_are_unit_float32():
    rows = FakeEmbedder().embed_documents(["alpha beta", "gamma", SENTENCE])
    assert rows.dtype == np.float32
    assert rows.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)


def test_empty_batch_and_blank_text():
    fake = FakeEmbedder()
    assert fake.embed_documents([]).shape == (0, 384)
    blank = fake.embed_documents(["", "   \n"])
    assert not blank.any()  # blank text is the zero vector by the seam's rule
    assert fake.embed_query("").shape == (384,)


def test_batch_equals_single():
    fake = FakeEmbedder(batch_size=2)
    texts = [SENTENCE, "", "the cafeteria serves soup", "rollback runbook", "x"]
    batch = fake.embed_documents(texts)
    for text, row in zip(texts, batch, strict=True):
        np.testing.assert_array_equal(row, fake.embed_query(text))


def test_shared_words_are_closer_than_unrelated_text():
    fake = FakeEmbedder()
    a, b, c = fake.embed_documents(
        [
            "drain the VIP before reverting",
            "revert the deploy after draining the VIP",
            "the cafeteria serves soup on Tuesdays",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.2


def test_negation_barely_moves_it():
    # Documented limitation: a bag of words cannot see "not".
    fake = FakeEmbedder()
    a, b = fake.embed_documents(["drain the VIP", "do not drain the VIP"])
    assert float(a @ b) > 0.75


@pytest.mark.parametrize("dim", [0, 1])
def test_rejects_degenerate_dim(dim):
    with pytest.raises(ValueError):
        FakeEmbedder(dim=dim)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=200), min_size=1, max_size=5), st.sampled_from([7, 64, 384]))
def test_encoding_equals_the_per_feature_float64_sum(texts, dim):
    # The cached per-word terms are a speed-up only: every row equals the defining sum
    # (each feature's signed weight added into a float64 row in `features` order).
    from memhtml.embed.fake import features

    expected = np.zeros((len(texts), dim), dtype=np.float64)
    for r, text in enumerate(texts):
        for feature, weight in features(text):
            bucket, sign = _bucket_and_sign(feature, dim)
            expected[r, bucket] += sign * weight
    got = FakeEmbedder(dim)._encode(list(texts))
    assert np.array_equal(got, expected.astype(np.float32))
