"""memhtml-hashbag: an example embedder plugin, a hashed bag of words in 256 dimensions.

The distribution declares one entry point and nothing else ties it to memhtml:

    [project.entry-points."memhtml.embedders"]
    hashbag = "memhtml_hashbag:HashBagEmbedder"

memhtml calls the entry point's object with no arguments (a class or a
factory function) and uses what it returns as an `Embedder`: `model_id`,
`dim`, `batch_size`, `embed_documents`, `embed_query`. Rows are float32 and
L2-normalized. Not a model to use: only texts that share words come close.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["HashBagEmbedder"]

_WORD = re.compile(r"\w+")


class HashBagEmbedder:
    """Each word adds +1 or -1 to the dimension its hash picks; the row is then normalized."""

    model_id = "example/hashbag-256"
    dim = 256
    batch_size = 64

    def _row(self, text: str) -> npt.NDArray[np.float32]:
        row = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            row[int.from_bytes(digest[:4], "little") % self.dim] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(row))
        if norm == 0.0:  # no word at all: still a unit vector, as the protocol asks
            row[0] = 1.0
            return row
        return row / np.float32(norm)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text, in order, shape (len(texts), 256)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._row(t) for t in texts])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One row, shape (256,): queries and documents share one space."""
        return self._row(text)
