"""A deterministic, dependency-light embedder for tests and the CI gate.

Signed feature hashing (Weinberger et al., "Feature Hashing for Large Scale
Multitask Learning", ICML 2009) of two feature families:

* each lowercased word token (``\\w+``), weight 1.0;
* each character trigram of each word wrapped in ``<`` and ``>``, weight 0.5
  (the fastText subword scheme of Bojanowski et al., 2017), so ``drain`` and
  ``draining`` share most of their features.

A feature's bucket and sign come from BLAKE2b of its UTF-8 bytes, never from
Python's ``hash``, so the vectors are identical across runs, platforms and
``PYTHONHASHSEED`` values; the counts accumulate in float64 and are
L2-normalized to float32 at the end.

It is a bag of words: texts that share words are closer than unrelated texts,
but word order and negation barely register. "drain the VIP" and "do not
drain the VIP" land very close, just as they do for many real sentence
models. Tests that need negation to matter must use the local model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from memhtml.embed.base import embed_in_batches

if TYPE_CHECKING:
    from memhtml.embed.base import FloatArray

MODEL_ID = "memhtml-fake-v1"
DEFAULT_DIM = 384
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5

_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1 << 16)
def _bucket_and_sign(feature: str, dim: int) -> tuple[int, int]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    # The low bit picks the sign; the rest picks the bucket, so the two are independent.
    return (value >> 1) % dim, 1 if value & 1 else -1


def _word_features(word: str) -> list[tuple[str, float]]:
    padded = f"<{word}>"
    return [("w:" + word, WORD_WEIGHT)] + [
        ("c:" + padded[i : i + 3], TRIGRAM_WEIGHT) for i in range(len(padded) - 2)
    ]


def features(text: str) -> list[tuple[str, float]]:
    """The weighted hashed features of ``text`` (exposed for tests and explanation)."""
    out: list[tuple[str, float]] = []
    for word in _WORD.findall(text.lower()):
        out.extend(_word_features(word))
    return out


@lru_cache(maxsize=1 << 16)
def _word_terms(word: str, dim: int) -> tuple[tuple[int, float], ...]:
    """One word's (bucket, signed weight) terms, in `features` order: words repeat a lot,
    so a text costs a cache lookup per word instead of hashing per feature."""
    terms = []
    for feature, weight in _word_features(word):
        bucket, sign = _bucket_and_sign(feature, dim)
        terms.append((bucket, sign * weight))
    return tuple(terms)


class FakeEmbedder:
    """Hashed bag-of-words-and-trigrams vectors; symmetric (queries embed like documents)."""

    def __init__(self, dim: int = DEFAULT_DIM, *, batch_size: int = 256) -> None:
        if dim < 2:
            raise ValueError("dim must be at least 2")
        self.model_id = MODEL_ID
        self.dim = dim
        self.batch_size = batch_size

    def _encode(self, texts: list[str]) -> FloatArray:
        import numpy as np

        rows = np.zeros((len(texts), self.dim), dtype=np.float64)
        for r, text in enumerate(texts):
            # Python floats are float64 and the terms add in `features` order, so the
            # row equals a float64 numpy accumulation bit for bit, ~7x faster.
            row = [0.0] * self.dim
            for word in _WORD.findall(text.lower()):
                for bucket, value in _word_terms(word, self.dim):
                    row[bucket] += value
            rows[r] = row
        return rows.astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Hashed feature rows, L2-normalized, in input order."""
        return embed_in_batches(
            texts, dim=self.dim, batch_size=self.batch_size, encode=self._encode
        )

    def embed_query(self, text: str) -> FloatArray:
        """The same encoding as a document (the fake is symmetric)."""
        return self.embed_documents([text])[0]
