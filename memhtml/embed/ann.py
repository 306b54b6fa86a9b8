"""Approximate nearest neighbours over the vector matrix: an HNSW graph (usearch).

The exact scan (`matrix @ query`) is linear in the rows; past a threshold the
vector arm asks a graph instead for a few hundred candidate rows, and ranks
those by their exact cosine from the matrix (memhtml.index.arms). The graph is
a cache of a cache: built from the memory-mapped matrix (memhtml.embed.matrix),
never in git (it lives in `.memhtml/vectors/`, which is ignored), and rebuilt
from it whenever it is missing, damaged or of another space.

Layout, beside the matrix's files:

``<epoch>.ann.json``
    The manifest ``{"format", "library", "epoch", "generation", "model_id",
    "dim", "rows", "file", "dtype", "connectivity", "expansion_add"}``,
    replaced atomically (temp file, ``os.replace``) only after the file it
    names is complete and fsynced: a reader never sees a half-built graph.
``<epoch>.<generation>.<token>.ann``
    The usearch index over matrix rows ``[0, rows)``, keyed by row number.
    Readers map it (``view=True``): a cold process opens a million-row graph
    in well under a millisecond.
``ann.lock``
    ``fcntl.flock`` target: one builder at a time. A reader that finds the
    lock taken does not wait; it scans exactly this time.

Why row numbers are a safe key: the matrix is append-only within one
(epoch, generation), so rows ``[0, rows)`` hold the same vectors for as long
as the manifest's epoch and generation are the matrix header's. A matrix reset
(a new generation) or a new space (a model switch, a rollback: a new epoch)
deletes the graph with the matrix's own files (`VectorMatrix.reset` removes
``.ann`` and every other epoch's ``.json``), and a manifest naming another
epoch or generation is ignored. The rows past the graph's (the *tail*) are
scanned exactly by the caller, so a write is visible to the next search
whether or not the graph has caught up; `extend` folds the tail in by
insertion (a write does not rebuild the graph), `build` starts over.

The graph stores int8 codes of the vectors (a quarter of float32's bytes and
about three times faster to build and query here; docs/benchmarks.md): it
only nominates candidates, whose exact cosines the caller takes from the
matrix, so the codes' rounding can cost recall but never changes a score.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    from memhtml.embed.matrix import LoadedMatrix

FORMAT: Final = 1
LIBRARY: Final = "usearch"
DTYPE: Final = "i8"
CONNECTIVITY: Final = 16  # HNSW's M
EXPANSION_ADD: Final = 128  # efConstruction
LOCK_NAME: Final = "ann.lock"
SUFFIX: Final = ".ann"
# Rows added per call while building, so a terminal sees progress and a kill loses little.
BUILD_BATCH: Final = 65536


def _index_class() -> Any:
    """usearch's `Index`, imported after onnxruntime when that is installed.

    The other way round, importing onnxruntime (1.32) in a process that loaded
    usearch (2.26) crashes it (SIGSEGV; either order of use works once both are
    loaded). A search starts the local model on one thread while it plans the
    vector scan on another, so the order is fixed here, where usearch is loaded.
    """
    import sys

    if "usearch.index" not in sys.modules and "onnxruntime" not in sys.modules:
        import importlib.util

        if importlib.util.find_spec("onnxruntime") is not None:
            import onnxruntime  # noqa: F401  (loaded first: see above)
    from usearch.index import Index

    return Index


def available() -> bool:
    """True when the graph library is installed (asked without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(LIBRARY) is not None
    except (ImportError, ValueError):  # hidden (sys.modules entry None) or broken
        return False


@dataclass(frozen=True)
class AnnManifest:
    """What ``<epoch>.ann.json`` records."""

    epoch: str
    generation: int
    model_id: str
    dim: int
    rows: int
    file: str
    library: str = LIBRARY
    dtype: str = DTYPE
    connectivity: int = CONNECTIVITY
    expansion_add: int = EXPANSION_ADD
    format: int = FORMAT

    def matches(self, matrix: LoadedMatrix) -> bool:
        """True when the graph's rows are the first `rows` rows of this matrix."""
        h = matrix.header
        return (
            self.format == FORMAT
            and self.library == LIBRARY
            and (self.epoch, self.generation, self.model_id, self.dim)
            == (h.epoch, h.generation, h.model_id, h.dim)
            and 0 < self.rows <= h.rows
        )


@dataclass(frozen=True)
class AnnGraph:
    """A mapped graph over matrix rows ``[0, rows)``."""

    manifest: AnnManifest
    index: Any  # usearch.index.Index, mapped read-only

    @property
    def rows(self) -> int:
        """Matrix rows the graph covers (those past it are the caller's tail)."""
        return self.manifest.rows

    def search(self, query: npt.NDArray[Any], count: int) -> npt.NDArray[np.int64]:
        """The (about) `count` rows nearest `query`, nearest first, as matrix row numbers."""
        count = max(1, min(int(count), self.rows))
        # The search's breadth (HNSW's ef) is at least `count`: a wider over-fetch
        # searches more of the graph, so recall grows with it.
        self.index.expansion_search = max(count, 64)
        found = self.index.search(np.asarray(query, dtype=np.float32), count, threads=1)
        return np.asarray(found.keys, dtype=np.int64)


def _manifest_path(directory: Path, epoch: str) -> Path:
    return directory / f"{epoch}.ann.json"


def read_manifest(directory: Path, epoch: str) -> AnnManifest | None:
    """The epoch's manifest, or None when absent or unreadable."""
    try:
        data = json.loads(_manifest_path(directory, epoch).read_text("utf-8"))
        return AnnManifest(**data)
    except (OSError, ValueError, TypeError):
        return None


def load(directory: Path, matrix: LoadedMatrix) -> AnnGraph | None:
    """Map the graph that covers a prefix of `matrix`; None when there is none usable."""
    manifest = read_manifest(directory, matrix.header.epoch)
    if manifest is None or not manifest.matches(matrix) or not available():
        return None
    path = directory / manifest.file
    try:
        index = _index_class().restore(str(path), view=True)
    except Exception:  # a damaged or truncated file: the caller rebuilds it
        return None
    if index is None or len(index) != manifest.rows or index.ndim != manifest.dim:
        return None
    return AnnGraph(manifest, index)


@contextlib.contextmanager
def builder_lock(directory: Path, *, wait: bool) -> Iterator[bool]:
    """Hold the builders' lock; yields False (holding nothing) when `wait` is off and another
    process builds."""
    import fcntl

    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_NAME, "a+b") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _new_index(dim: int) -> Any:
    return _index_class()(
        ndim=dim,
        metric="cos",
        dtype=DTYPE,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
    )


def update(
    directory: Path,
    matrix: LoadedMatrix,
    *,
    wait: bool = True,
    durable: bool = True,
    progress: Callable[[int], None] | None = None,
    step: Callable[[str], None] | None = None,
) -> AnnGraph | None:
    """Bring the graph up to all of `matrix`'s rows and return it mapped.

    Extends the current graph by inserting the rows past it (the graph's
    rows are the matrix's prefix, so nothing else changes); builds a new one
    when there is none usable. The new file is written beside the old one and
    published by replacing the manifest, so a kill at any point leaves the
    previous graph (or none) and a temp file the next builder deletes.
    Returns None without building when `wait` is off and another process
    builds, or when the library is not installed. `progress` hears rows
    added; `step` names each stage (the kill tests' seam).
    """
    if not available() or matrix.rows == 0:
        return None
    with builder_lock(directory, wait=wait) as held:
        if not held:
            return None
        _sweep(directory, matrix.header.epoch, keep=None)
        current = load(directory, matrix)
        if current is not None and current.rows >= matrix.rows:
            return current
        index: Any = None
        if current is not None:
            index = _index_class().restore(str(directory / current.manifest.file))  # writable
            start = current.rows
        if index is None:
            index, start = _new_index(matrix.header.dim), 0
        stop = matrix.rows
        for lo in range(start, stop, BUILD_BATCH):
            hi = min(stop, lo + BUILD_BATCH)
            index.add(
                np.arange(lo, hi, dtype=np.uint64),
                np.asarray(matrix.vectors[lo:hi], dtype=np.float32),
                threads=os.cpu_count() or 1,
            )
            if progress is not None:
                progress(hi - lo)
            if step is not None:
                step("ann:add")
        h = matrix.header
        name = f"{h.epoch}.{h.generation}.{secrets.token_hex(4)}{SUFFIX}"
        tmp = directory / f".{name}.{os.getpid()}.tmp"
        index.save(str(tmp))
        if durable:
            _fsync(tmp)
        if step is not None:
            step("ann:saved")
        os.replace(tmp, directory / name)
        if step is not None:
            step("ann:renamed")
        manifest = AnnManifest(h.epoch, h.generation, h.model_id, h.dim, stop, name)
        _publish(directory, manifest)
        if step is not None:
            step("ann:published")
        _sweep(directory, h.epoch, keep=name)
    return load(directory, matrix)


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _publish(directory: Path, manifest: AnnManifest) -> None:
    target = _manifest_path(directory, manifest.epoch)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(manifest), sort_keys=True), encoding="utf-8")
    os.replace(tmp, target)


def _sweep(directory: Path, epoch: str, keep: str | None) -> None:
    """Delete graph files a kill or a newer graph left (the caller holds the builders' lock).

    A reader still mapping an unlinked file keeps its pages until it lets go."""
    named = keep
    if named is None:
        manifest = read_manifest(directory, epoch)
        named = manifest.file if manifest is not None else None
    for path in directory.iterdir():
        name = path.name
        leftover = name.endswith(".tmp") and (SUFFIX in name or ".ann.json" in name)
        if leftover or (name.endswith(SUFFIX) and name != named):
            path.unlink(missing_ok=True)


def drop(directory: Path) -> None:
    """Delete every graph and manifest (`index rebuild` of the vector space, tests)."""
    with builder_lock(directory, wait=True):
        for path in directory.iterdir():
            if path.name.endswith((SUFFIX, ".ann.json")) or (
                path.name.endswith(".tmp") and SUFFIX in path.name
            ):
                path.unlink(missing_ok=True)
