"""A campaign's spec: datasets x settings, read from TOML or JSON and checked field by field.

A dataset is a harness over its data file (and other input files, by flag)
with harness flags; a setting is how the retriever runs (weights over
production, k, MMR lambda, embedder, consolidation, harness flags). Every
problem is an ``InvalidFlagError`` whose message and ``details["field"]``
name the field (``settings[2].weights``), raised before any cell runs.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.errors import InvalidFlagError

EMBEDDERS: Final[tuple[str, ...]] = ("fake", "local")
CONSOLIDATE: Final[tuple[str, ...]] = ("last-wins",)
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
    # flags that say where things go or how the campaign runs are the campaign's
    own = ("--data", "--out-dir", "--workdir", "--tag", "--ray", "--workers", "--keep")
    for flag in (*own, "--save-capture"):
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


__all__ = [
    "CONSOLIDATE",
    "EMBEDDERS",
    "CampaignSpec",
    "DatasetSpec",
    "SettingSpec",
    "load_spec",
    "parse_spec",
]
