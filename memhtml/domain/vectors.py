"""Cosine similarity and distance, scalar and vectorized, with one set of rules.

Rules shared by every caller (the SQL function, the numpy scan, MMR): a
zero-magnitude vector has similarity 0 with everything (distance 1), and the
similarity is clamped to [-1, 1] so rounding never yields a distance below 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]


def as_vector(values: Sequence[float] | npt.ArrayLike) -> FloatArray:
    """A 1-D float32 array."""
    return np.asarray(values, dtype=np.float32).reshape(-1)


def vector_from_blob(blob: bytes) -> FloatArray:
    """A little-endian float32 blob (as stored in `embeddings.vector`) as an array."""
    return np.frombuffer(blob, dtype="<f4")


def vector_to_blob(vector: npt.ArrayLike) -> bytes:
    """An array as the little-endian float32 blob stored in SQLite."""
    return np.asarray(vector, dtype="<f4").tobytes()


def l2_normalize(matrix: npt.ArrayLike) -> FloatArray:
    """Row-wise L2 normalization; zero rows stay zero."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    safe = np.where(norms > 0, norms, 1.0)
    return (m / safe).astype(np.float32)


def row_norms(matrix: npt.ArrayLike) -> FloatArray:
    """The L2 norm of every row (precompute once for a matrix scanned many times)."""
    return np.linalg.norm(np.asarray(matrix, dtype=np.float32), axis=1).astype(np.float32)


def cosine_similarities(
    matrix: npt.ArrayLike,
    query: npt.ArrayLike,
    norms: npt.ArrayLike | None = None,
    *,
    dots: npt.ArrayLike | None = None,
) -> FloatArray:
    """Cosine similarity of every row of `matrix` with `query`, clamped to [-1, 1].

    `norms` are the rows' L2 norms when the caller has them (see row_norms);
    `dots` is ``matrix @ query`` when the caller computed it (a scan split
    over threads: memhtml.embed.blas.split_matvec).
    """
    m = np.asarray(matrix, dtype=np.float32)
    q = as_vector(query)
    if m.size == 0:
        return np.zeros((m.shape[0] if m.ndim == 2 else 0,), dtype=np.float32)
    qn = float(np.linalg.norm(q))
    if qn == 0.0:
        return np.zeros((m.shape[0],), dtype=np.float32)
    norms = np.linalg.norm(m, axis=1) if norms is None else np.asarray(norms, dtype=np.float32)
    dots = m @ q if dots is None else np.asarray(dots, dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        sims = np.where(norms > 0, dots / (norms * qn), 0.0)
    return np.clip(sims, -1.0, 1.0).astype(np.float32)


def cosine_similarity(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cosine similarity of two vectors under the shared rules."""
    va = as_vector(a)
    return float(cosine_similarities(va.reshape(1, -1), b)[0])


def cosine_distance(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """1 - cosine similarity, in [0, 2]; the SQL function `vector_distance_cos` calls this."""
    return 1.0 - cosine_similarity(a, b)


def cosine_distance_blobs(a: bytes | None, b: bytes | None) -> float | None:
    """The SQL adapter: two float32 blobs to a distance; NULL in, NULL out."""
    if a is None or b is None:
        return None
    va, vb = vector_from_blob(a), vector_from_blob(b)
    if va.shape != vb.shape:
        return None
    return cosine_distance(va, vb)
