"""The seam's shared rules: batching, blank texts, shape checks, the space id."""

from __future__ import annotations

import numpy as np
import pytest

from memhtml.contracts.errors import ModelUnavailableError
from memhtml.embed import space_id
from memhtml.embed.base import embed_in_batches


def test_batches_of_at_most_batch_size_in_input_order():
    seen: list[list[str]] = []

    def encode(batch: list[str]) -> np.ndarray:
        seen.append(batch)
        return np.array([[float(len(t)), 0.0] for t in batch])

    out = embed_in_batches(["a", "bb", "", "ccc", "dddd"], dim=2, batch_size=2, encode=encode)
    assert seen == [["a", "bb"], ["ccc", "dddd"]]
    np.testing.assert_array_equal(out, [[1, 0], [1, 0], [0, 0], [1, 0], [1, 0]])
    assert out.dtype == np.float32


def test_nothing_to_embed_makes_no_call():
    def encode(batch: list[str]) -> np.ndarray:
        raise AssertionError("called")

    assert embed_in_batches([], dim=3, batch_size=4, encode=encode).shape == (0, 3)
    assert not embed_in_batches([" ", "\n"], dim=3, batch_size=4, encode=encode).any()


def test_a_wrongly_shaped_batch_is_a_model_failure():
    with pytest.raises(ModelUnavailableError):
        embed_in_batches(["a", "b"], dim=3, batch_size=8, encode=lambda b: np.zeros((1, 3)))


def test_space_id_names_model_and_dim():
    class Stub:
        model_id, dim, batch_size = "m", 7, 1

    assert space_id(Stub()) == "m@7"  # type: ignore[arg-type]
