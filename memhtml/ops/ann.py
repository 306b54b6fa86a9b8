"""Which scan the vector arm runs, and the upkeep of its graph (memhtml.embed.ann).

Exact (every row of the matrix) below `MEMHTML_ANN_MIN_ROWS` rows, when the
caller asks (`search --exact`, the discrimination gate: the exact scan is the
oracle), and whenever the graph library is not installed; the graph above.
A scope that keeps fewer rows than the threshold is scanned exactly over its
own rows (`exact_scope`): cheap, and a graph asked for a few in-scope rows
among a million would have to nominate most of them.

The graph nominates `ANN_FETCH_FACTOR` x the rows the exact scan would rank
(the vector arm ranks `arm_limit` x 4 rows), divided by the share of rows in
scope, and the arm ranks the nominees by exact cosine. If fewer in-scope rows
come back than the scan would rank, the scope is scanned exactly instead, so
a restrictive scope never answers from a thin list.

Upkeep: a graph exists only at or past the threshold. `index rebuild`,
`index embed` and a model migration's switch build it; a write door folds its
tail in (`after_write`: insertion, once the tail reaches `FOLD_ROWS`); a read
that finds no usable graph (never built, killed mid-build, damaged, another
space) builds it, and one that finds a tail of `4 x FOLD_ROWS` (writers that
never folded: hand commits indexed by a read) extends it. A reader never waits
for another process's build: it scans exactly meanwhile.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.logs import get_logger

if TYPE_CHECKING:
    import numpy.typing as npt

    from memhtml.embed.ann import AnnGraph
    from memhtml.embed.matrix import LoadedMatrix
    from memhtml.index.scope import Scope
    from memhtml.ops.corpus import Corpus

log = get_logger("memhtml")

ENV_MIN_ROWS: Final = "MEMHTML_ANN_MIN_ROWS"
# The break-even of a cold CLI search (docs/benchmarks.md): below it, importing the graph
# library costs a one-shot process more than scanning every vector (a process that keeps
# searching gains from ~20k rows: lower it for a long-lived server).
DEFAULT_MIN_ROWS: Final = 100_000
# Rows the exact scan ranks, times this: how many the graph nominates.
ANN_FETCH_FACTOR: Final = 2
# A scoped search asks the graph for at most this many nominees before scanning exactly.
MAX_FETCH: Final = 20_000
# A write door folds the tail into the graph once it holds this many rows; a read, at 4x.
FOLD_ROWS: Final = 4096
READ_FOLD_ROWS: Final = 4 * FOLD_ROWS


def ann_min_rows() -> int:
    """Rows from which the vector arm asks the graph ($MEMHTML_ANN_MIN_ROWS, >= 1)."""
    raw = os.environ.get(ENV_MIN_ROWS)
    try:
        return max(1, int(raw)) if raw else DEFAULT_MIN_ROWS
    except ValueError:
        return DEFAULT_MIN_ROWS


@dataclass
class VectorPlan:
    """How one search's vector arm scans: `method` exact, exact_scope or ann, and why."""

    method: str
    why: str
    rows: int
    graph: AnnGraph | None = None
    mask: npt.NDArray[Any] | None = None
    in_scope: int | None = None
    fetch: int = 0
    ranked: int | None = None
    notes: list[str] = field(default_factory=list)

    def run(
        self,
        matrix: LoadedMatrix,
        query_vector: npt.NDArray[Any],
        want: int,
        norms: Any,
    ) -> list[tuple[str, float]]:
        """The arm's (content hash, cosine) candidates, best first."""
        import numpy as np

        from memhtml.index.arms import ann_vectors, best_vectors, subset_vectors
        from memhtml.index.retrieval import VECTOR_OVERSAMPLE

        if self.method == "ann" and self.graph is not None:
            found, ranked = ann_vectors(
                matrix, self.graph, query_vector, want, fetch=self.fetch, mask=self.mask
            )
            self.ranked = ranked
            if self.mask is None or ranked >= want * VECTOR_OVERSAMPLE:
                return found
            self.method = "exact_scope"
            self.notes.append(f"the graph nominated {ranked} rows in scope: scanned the scope")
        if self.method == "exact_scope" and self.mask is not None:
            return subset_vectors(matrix, query_vector, want, np.flatnonzero(self.mask))
        return best_vectors(matrix, query_vector, want, norms=norms(), mask=self.mask)

    def explain(self) -> dict[str, Any]:
        """What `--explain` reports about the vector arm's scan."""
        data: dict[str, Any] = {"method": self.method, "why": self.why, "rows": self.rows}
        if self.in_scope is not None:
            data["rows_in_scope"] = self.in_scope
        if self.graph is not None:
            data["graph_rows"] = self.graph.rows
            data["tail_rows"] = max(0, self.rows - self.graph.rows)
            data["nominated"] = self.fetch
        if self.ranked is not None:
            data["rows_ranked"] = self.ranked
        if self.notes:
            data["notes"] = list(self.notes)
        return data


def plan(
    corpus: Corpus, matrix: LoadedMatrix, scope: Scope, want: int, *, exact: bool
) -> VectorPlan:
    """Choose the scan for one search (on the caller's thread: the scope asks SQLite)."""
    rows, floor = matrix.rows, ann_min_rows()
    if exact:
        return VectorPlan(
            "exact", "asked for the exact scan", rows, mask=_mask(corpus, matrix, scope)
        )
    if rows < floor:
        return VectorPlan(
            "exact",
            f"{rows} rows, below {ENV_MIN_ROWS} ({floor})",
            rows,
            mask=_mask(corpus, matrix, scope),
        )
    import numpy as np

    from memhtml.embed import ann  # only past the threshold: a small store never loads it
    from memhtml.index.arms import scope_mask
    from memhtml.index.retrieval import VECTOR_OVERSAMPLE

    if not ann.available():
        return VectorPlan(
            "exact",
            "the graph library (usearch) is not installed: pip install 'memhtml[ann]'",
            rows,
            mask=_mask(corpus, matrix, scope),
        )
    mask = scope_mask(corpus.conn, matrix, scope)
    in_scope = None if mask is None else int(np.count_nonzero(mask))
    if in_scope is not None and in_scope < floor:
        return VectorPlan(
            "exact_scope",
            f"{in_scope} rows in scope, below {ENV_MIN_ROWS} ({floor})",
            rows,
            mask=mask,
            in_scope=in_scope,
        )
    graph = corpus.ann_graph(matrix)
    if graph is None:
        return VectorPlan(
            "exact",
            "no graph yet (another process is building it)",
            rows,
            mask=mask,
            in_scope=in_scope,
        )
    fetch = ANN_FETCH_FACTOR * want * VECTOR_OVERSAMPLE
    if in_scope is not None:
        fetch = min(MAX_FETCH, -(-fetch * rows // max(in_scope, 1)))
    return VectorPlan(
        "ann",
        f"{rows} rows, at or above {ENV_MIN_ROWS} ({floor})",
        rows,
        graph=graph,
        mask=mask,
        in_scope=in_scope,
        fetch=fetch,
    )


def _mask(corpus: Corpus, matrix: LoadedMatrix, scope: Scope) -> Any:
    from memhtml.index.arms import scope_mask

    return scope_mask(corpus.conn, matrix, scope)


class GraphKeeper:
    """One process's mapped graph, and when to build or extend it (see the module doc)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._graph: AnnGraph | None = None

    def _dir(self) -> Any:
        from memhtml.index.embedding import vectors_dir

        return vectors_dir(self.corpus.vectors_root)

    def graph(self, matrix: LoadedMatrix, *, build: bool = True) -> AnnGraph | None:
        """A graph over a prefix of `matrix` whose tail a read may scan; built or extended
        here when there is none or its tail is long (unless another process builds)."""
        from memhtml.embed import ann

        cached = self._graph
        fresh = cached is not None and matrix.rows - cached.rows < READ_FOLD_ROWS
        if cached is not None and fresh and cached.manifest.matches(matrix):
            return cached
        graph = ann.load(self._dir(), matrix)
        if graph is not None and matrix.rows - graph.rows < READ_FOLD_ROWS:
            self._graph = graph
            return graph
        if not build:
            return graph
        built = self._update(matrix, wait=False)
        self._graph = built if built is not None else graph
        return self._graph

    def _update(self, matrix: LoadedMatrix, *, wait: bool) -> AnnGraph | None:
        import sys

        from memhtml.embed import ann

        bar = None
        if sys.stderr.isatty():
            from memhtml.progress import Progress

            current = ann.read_manifest(self._dir(), matrix.header.epoch)
            done = current.rows if current is not None and current.matches(matrix) else 0
            bar = Progress(matrix.rows - done, "vector graph")
        try:
            return ann.update(
                self._dir(),
                matrix,
                wait=wait,
                progress=bar.advance if bar is not None else None,
            )
        finally:
            if bar is not None:
                bar.close()

    def refresh(self, *, force: bool = False) -> dict[str, Any] | None:
        """After `index rebuild`, `index embed` or a migration's switch: build or extend the
        graph now when the matrix is at or past the threshold (`force`: whatever the tail).
        Returns what it did, None when no graph is due."""
        matrix = self.corpus.vector_matrix()
        if matrix is None or matrix.rows < ann_min_rows():
            return None
        from memhtml.embed import ann

        if not ann.available():
            return None
        current = ann.load(self._dir(), matrix)
        if current is not None and not force and matrix.rows - current.rows < FOLD_ROWS:
            return {"rows": current.rows, "built": False}
        graph = self._update(matrix, wait=True)
        self._graph = graph
        return {"rows": graph.rows if graph is not None else 0, "built": graph is not None}

    def after_write(self) -> None:
        """A write door's upkeep: fold the tail into an existing graph once it is
        `FOLD_ROWS` long. Never builds a first graph (a read or `index embed` does)."""
        matrix = self.corpus.vector_matrix()
        if matrix is None or matrix.rows < ann_min_rows():
            return  # a small store never loads the graph's modules
        from memhtml.embed import ann

        if not ann.available():
            return
        manifest = ann.read_manifest(self._dir(), matrix.header.epoch)
        if manifest is None or not manifest.matches(matrix):
            return
        if matrix.rows - manifest.rows >= FOLD_ROWS:
            graph = ann.update(self._dir(), matrix, wait=False)
            if graph is not None:
                self._graph = graph

    def forget(self) -> None:
        """Drop the mapped graph (the vector space changed)."""
        self._graph = None
