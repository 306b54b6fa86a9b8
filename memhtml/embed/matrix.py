"""The vector matrix sidecar: every stored vector as one memory-mapped float32 matrix.

SQLite's ``embeddings`` table is the source of truth for vectors, but reading
100k BLOB rows one by one is too slow for a cold CLI process that wants to
scan them all. This sidecar keeps the same vectors as flat files that map
into memory in well under a millisecond, so exact brute-force search is a
single ``matrix @ query``. It is a cache: deleting the directory loses
nothing, the caller rebuilds it from SQLite.

Layout of the directory (``.memhtml/vectors/`` by convention):

``<epoch>.json``
    The header, ``{"format", "epoch", "generation", "model_id", "dim",
    "rows", "max_seq"}``. It is replaced atomically (temp file, ``os.replace``)
    only after the data it counts has been written and fsynced, so its
    ``rows`` is authoritative: bytes past ``rows`` rows (a torn append) are
    ignored by readers and cut off by the next append.
``<epoch>.<generation>.f32``
    ``rows x dim`` little-endian float32, row-major.
``<epoch>.<generation>.keys``
    ``rows x 64`` bytes: each row's key as 64 lowercase ASCII hex characters
    (a sha256 hex digest; the index passes the row's content_hash or
    chunk_id). Hex rather than raw digest bytes, so a key joins to SQL text
    columns without conversion and the file reads with ``head``.
``.lock``
    ``fcntl.flock`` target serializing writers across processes.

An *epoch* names one vector space generation chosen by the caller (for
example, a new epoch whenever the model changes). The *generation* counts
resets of one epoch and is part of the data file names, so a reset never
truncates a file a reader has mapped: a reader always maps the files its own
header names. Readers take no lock.

Rows whose chunk was deleted stay (appends only): they are harmless because
the caller joins hit keys against live rows in SQL, and
:meth:`LoadedMatrix.stale_compaction_needed` says when a rebuild pays.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from memhtml.contracts.errors import EmbedModelMismatchError, StorageError

if TYPE_CHECKING:
    import numpy.typing as npt

FORMAT = 1
KEY_WIDTH = 64
KEY_DTYPE = np.dtype(f"S{KEY_WIDTH}")
VECTOR_DTYPE = np.dtype("<f4")
STALE_FRACTION = 0.25
LOCK_NAME = ".lock"

_EPOCH = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_HEX = re.compile(rb"^[0-9a-f]{64}$")
_DATA_SUFFIXES = (".f32", ".keys", ".json", ".tmp", ".ann")  # .ann: the graph (embed/ann.py)


@dataclass(frozen=True)
class MatrixHeader:
    """What ``<epoch>.json`` records; ``rows`` and ``max_seq`` cover the data written so far."""

    epoch: str
    generation: int
    model_id: str
    dim: int
    rows: int
    max_seq: int
    format: int = FORMAT


@dataclass(frozen=True)
class LoadedMatrix:
    """A read-only view of one epoch: ``vectors`` (rows, dim) float32 and ``keys`` (rows,) S64."""

    header: MatrixHeader
    vectors: npt.NDArray[np.float32]
    keys: npt.NDArray[np.bytes_]

    @property
    def rows(self) -> int:
        """Rows in the matrix, stale ones included."""
        return self.header.rows

    @property
    def max_seq(self) -> int:
        """The highest ``embeddings.seq`` the matrix holds (appends past it catch up)."""
        return self.header.max_seq

    def key(self, row: int) -> str:
        """The key of one row as a hex string."""
        return bytes(self.keys[row]).decode("ascii")

    def keys_at(self, rows: Sequence[int] | npt.NDArray[np.intp]) -> list[str]:
        """The keys of the given rows (for instance the top-k of a scan) as hex strings."""
        return [bytes(k).decode("ascii") for k in self.keys[np.asarray(rows, dtype=np.intp)]]

    def stale_compaction_needed(self, live_rows: int, threshold: float = STALE_FRACTION) -> bool:
        """True when more than ``threshold`` of the rows are not among ``live_rows`` live ones."""
        if self.rows == 0:
            return False
        return (self.rows - min(live_rows, self.rows)) > threshold * self.rows


def _check_epoch(epoch: str) -> None:
    if not _EPOCH.match(epoch):
        raise ValueError(f"epoch must match {_EPOCH.pattern}: {epoch!r}")


def _encode_keys(keys: Sequence[str]) -> npt.NDArray[np.bytes_]:
    encoded = [k.lower().encode("ascii", "replace") for k in keys]
    for raw in encoded:
        if not _HEX.match(raw):
            raise ValueError(f"a matrix key must be 64 hex characters: {raw!r}")
    return np.array(encoded, dtype=KEY_DTYPE).reshape(len(encoded))


def _map(path: Path, nbytes: int) -> mmap.mmap:
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size < nbytes:
            raise StorageError(f"{path} holds fewer bytes than its header counts")
        return mmap.mmap(handle.fileno(), nbytes, access=mmap.ACCESS_READ)


class VectorMatrix:
    """Append-only, memory-mapped vector files for the epochs in one directory."""

    def __init__(self, directory: str | os.PathLike[str], *, durable: bool = True) -> None:
        """``durable`` fsyncs data before publishing a header (off only for scratch benches)."""
        self.directory = Path(directory)
        self.durable = durable

    # paths ---------------------------------------------------------------

    def header_path(self, epoch: str) -> Path:
        """``<epoch>.json``."""
        return self.directory / f"{epoch}.json"

    def vectors_path(self, header: MatrixHeader) -> Path:
        """The float32 file the header counts rows of."""
        return self.directory / f"{header.epoch}.{header.generation}.f32"

    def keys_path(self, header: MatrixHeader) -> Path:
        """The keys file the header counts rows of."""
        return self.directory / f"{header.epoch}.{header.generation}.keys"

    # reading -------------------------------------------------------------

    def header(self, epoch: str) -> MatrixHeader | None:
        """The epoch's header, or None when it is absent or unreadable."""
        _check_epoch(epoch)
        try:
            data = json.loads(self.header_path(epoch).read_text("utf-8"))
            header = MatrixHeader(**data)
        except (OSError, ValueError, TypeError):
            return None
        if header.format != FORMAT or header.epoch != epoch or header.rows < 0 or header.dim < 1:
            return None
        return header

    def load(self, epoch: str, model_id: str, dim: int) -> LoadedMatrix | None:
        """Map the epoch's rows; None when absent, of another model or dim, or damaged."""
        for _ in range(3):  # a concurrent reset may unlink the files the header named
            header = self.header(epoch)
            if header is None or header.model_id != model_id or header.dim != dim:
                return None
            if header.rows == 0:
                return LoadedMatrix(
                    header,
                    np.empty((0, dim), dtype=VECTOR_DTYPE),
                    np.empty((0,), dtype=KEY_DTYPE),
                )
            try:
                vec_map = _map(self.vectors_path(header), header.rows * dim * VECTOR_DTYPE.itemsize)
                key_map = _map(self.keys_path(header), header.rows * KEY_WIDTH)
            except FileNotFoundError:
                continue
            except (OSError, StorageError):
                return None
            vectors = np.frombuffer(vec_map, dtype=VECTOR_DTYPE).reshape(header.rows, dim)
            keys = np.frombuffer(key_map, dtype=KEY_DTYPE)
            return LoadedMatrix(header, vectors, keys)
        return None

    # writing -------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl

        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / LOCK_NAME, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _publish(self, header: MatrixHeader) -> None:
        target = self.header_path(header.epoch)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(header), sort_keys=True), encoding="utf-8")
        os.replace(tmp, target)

    def _create(self, epoch: str, generation: int, model_id: str, dim: int) -> MatrixHeader:
        header = MatrixHeader(epoch, generation, model_id, dim, rows=0, max_seq=0)
        for path in (self.vectors_path(header), self.keys_path(header)):
            path.write_bytes(b"")
        self._publish(header)
        return header

    def _fsync(self, handle: BinaryIO) -> None:
        if self.durable:
            os.fsync(handle.fileno())

    def _extend(self, path: Path, valid: int, data: np.ndarray) -> None:
        """Cut ``path`` to its ``valid`` counted bytes, then append ``data`` durably."""
        hint = "reset the vector matrix and append from SQLite again"
        try:
            with open(path, "r+b") as handle:
                if os.fstat(handle.fileno()).st_size < valid:
                    raise StorageError(
                        f"vector matrix file {path} is shorter than its header counts",
                        suggestions=[hint],
                    )
                handle.truncate(valid)  # drop a torn tail the header never counted
                handle.seek(valid)
                handle.write(data.tobytes())
                handle.flush()
                self._fsync(handle)
        except FileNotFoundError as exc:
            raise StorageError(f"vector matrix file {path} is missing", suggestions=[hint]) from exc

    def append(
        self,
        epoch: str,
        model_id: str,
        dim: int,
        keys: Sequence[str],
        vectors: npt.ArrayLike,
        *,
        max_seq: int,
        expect_max_seq: int | None = None,
    ) -> bool:
        """Append rows (creating the epoch if needed) and publish the new header.

        ``max_seq`` is the highest ``embeddings.seq`` among the rows; the
        header keeps the larger of it and the old value. With
        ``expect_max_seq``, nothing is written unless the header still has
        that ``max_seq`` (so two processes catching up from the same point do
        not both append the same rows); the return value says whether the
        rows were appended. Raises ``EmbedModelMismatchError`` when the epoch
        holds another model or dim, ``StorageError`` when its files are damaged.
        """
        _check_epoch(epoch)
        matrix = np.ascontiguousarray(vectors, dtype=VECTOR_DTYPE)
        if matrix.ndim != 2 or matrix.shape[1] != dim:
            raise ValueError(f"vectors must have shape (n, {dim}), not {matrix.shape}")
        if matrix.shape[0] != len(keys):
            raise ValueError(f"{len(keys)} keys for {matrix.shape[0]} vectors")
        encoded = _encode_keys(keys)
        with self._locked():
            header = self.header(epoch)
            if header is None:
                header = self._create(epoch, 0, model_id, dim)
            elif header.model_id != model_id or header.dim != dim:
                raise EmbedModelMismatchError(
                    f"vector matrix epoch {epoch!r} holds {header.model_id}@{header.dim}, "
                    f"not {model_id}@{dim}",
                    suggestions=["reset the matrix (or use a new epoch) before changing model"],
                    details={"epoch": epoch, "recorded": f"{header.model_id}@{header.dim}"},
                )
            if expect_max_seq is not None and header.max_seq != expect_max_seq:
                return False
            row_bytes = dim * VECTOR_DTYPE.itemsize
            for path, width, data in (
                (self.vectors_path(header), row_bytes, matrix),
                (self.keys_path(header), KEY_WIDTH, encoded),
            ):
                self._extend(path, header.rows * width, data)
            self._publish(
                MatrixHeader(
                    epoch,
                    header.generation,
                    model_id,
                    dim,
                    rows=header.rows + matrix.shape[0],
                    max_seq=max(header.max_seq, max_seq),
                )
            )
            return True

    def reset(self, epoch: str, model_id: str, dim: int) -> None:
        """Start ``epoch`` empty under ``model_id``/``dim`` and delete every other epoch's files."""
        _check_epoch(epoch)
        with self._locked():
            old = self.header(epoch)
            header = self._create(epoch, old.generation + 1 if old else 0, model_id, dim)
            keep = {
                self.header_path(epoch).name,
                self.vectors_path(header).name,
                self.keys_path(header).name,
            }
            for path in self.directory.iterdir():
                if path.name not in keep and path.name.endswith(_DATA_SUFFIXES):
                    path.unlink(missing_ok=True)
