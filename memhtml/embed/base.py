"""The embedder seam: one small Protocol every vector model implements.

An embedder turns texts into unit-length float32 rows in one vector space,
named by :func:`space_id`. The index records that name next to its vectors, so
vectors of two models are never compared (see ``EmbedModelMismatchError``).

Rules every implementation follows (the fake and Bedrock embedders get the
first three from :func:`embed_in_batches`; the local one batches by token
count and applies them itself):

* rows are L2-normalized, so cosine similarity is a plain dot product;
* a text with no non-whitespace character embeds to the zero vector without a
  model call: it has similarity 0 with everything under the rules of
  :mod:`memhtml.domain.vectors`, and providers that reject empty input never
  see it;
* ``embed_documents([])`` is an array of shape ``(0, dim)``;
* ``embed_query`` may encode differently from ``embed_documents`` when the
  model is trained asymmetrically (Cohere's ``search_query`` input type).

This module imports nothing heavy at import time; numpy is loaded by the
helper on first use, so ``import memhtml.embed`` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memhtml.contracts.errors import ModelUnavailableError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model behind the seam (fake, local ONNX, Bedrock, OpenAI-compatible)."""

    model_id: str
    batch_size: int

    @property
    def dim(self) -> int:
        """The width of every row (an endpoint's may be learned on first use)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Rows of shape ``(len(texts), dim)``, float32, L2-normalized, in input order."""
        ...

    def embed_query(self, text: str) -> FloatArray:
        """One query vector of shape ``(dim,)``, float32, L2-normalized."""
        ...


def space_id(embedder: Embedder) -> str:
    """The identity of the embedder's vector space as the index records it."""
    return f"{embedder.model_id}@{embedder.dim}"


def embed_in_batches(
    texts: Sequence[str],
    *,
    dim: int,
    batch_size: int,
    encode: Callable[[list[str]], npt.ArrayLike],
) -> FloatArray:
    """Run ``encode`` over ``texts`` in batches and assemble normalized rows in input order.

    ``encode`` receives at most ``batch_size`` non-blank texts and returns one
    raw row per text. Blank texts are never sent (their rows stay zero). A
    batch that comes back with the wrong shape is a model failure.
    """
    import numpy as np

    from memhtml.domain.vectors import l2_normalize

    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    out = np.zeros((len(texts), dim), dtype=np.float32)
    todo = [i for i, text in enumerate(texts) if text.strip()]
    for start in range(0, len(todo), batch_size):
        rows = todo[start : start + batch_size]
        raw = np.asarray(encode([texts[i] for i in rows]), dtype=np.float32)
        if raw.shape != (len(rows), dim):
            raise ModelUnavailableError(
                f"the embedding model returned shape {raw.shape} for a batch of "
                f"{len(rows)} texts; expected ({len(rows)}, {dim})",
                details={"expected_dim": dim, "shape": list(raw.shape)},
            )
        out[rows] = l2_normalize(raw)
    return out
