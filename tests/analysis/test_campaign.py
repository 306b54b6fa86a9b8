"""Campaign core: the spec, a cell's identity, the folder's atomic cells, resume, the lock.

The cells here are computed by a small function of their command line (the
harness-driven campaigns, serial and on Ray, are in tests/bench/).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("polars")
pytest.importorskip("pyarrow")

from memhtml.analysis import campaign as cp
from memhtml.analysis.fanout import Serial
from memhtml.contracts.errors import InvalidFlagError, StorageError

CODE = {"source": "s" * 64, "packages": {"numpy": "2"}}
CALLS: list[str] = []


def fake_cell(task: cp.CellTask) -> cp.CellOutcome:
    """Rows that depend only on the command line; `--k 13` fails the cell."""
    CALLS.append(task.id)
    if "13" in task.argv:
        return cp.CellOutcome(task.id, error="unlucky k")
    k = int(task.argv[task.argv.index("--k") + 1]) if "--k" in task.argv else 10
    rows = [
        {"qid": f"q{i}", "category": "even" if i % 2 == 0 else "odd", "hit": i % k == 0, "x": i}
        for i in range(4)
    ]
    return cp.CellOutcome(task.id, rows=rows, metrics=["hit"], summary={"n": 4})


def _spec(tmp_path: Path, **over: Any) -> dict[str, Any]:
    data = tmp_path / "data.json"
    if not data.exists():
        data.write_text('{"rows": [1, 2, 3]}')
    raw: dict[str, Any] = {
        "name": "t",
        "baseline": "prod",
        "datasets": [{"name": "d1", "harness": "h", "data": str(data)}],
        "settings": [{"name": "prod"}, {"name": "k2", "k": 2}],
    }
    raw.update(over)
    return raw


def _plan(tmp_path: Path, raw: dict[str, Any], code: dict[str, Any] = CODE) -> list[cp.Cell]:
    return cp.plan(cp.parse_spec(raw, tmp_path), code=code)


# -- the spec ------------------------------------------------------------------------------
def test_a_toml_spec_reads_relative_paths_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text("{}")
    (tmp_path / "gold.json").write_text("{}")
    spec_file = tmp_path / "c.toml"
    spec_file.write_text(
        """
name = "demo"
baseline = "prod"
[[datasets]]
name = "fc"
harness = "factconsolidation"
data = "d.json"
files = { heuristic = "gold.json" }
args = ["--sizes", "6k"]
[[settings]]
name = "prod"
[[settings]]
name = "rrf"
weights = { fts = 1, vector = 1, recency = 0 }
mmr_lambda = 1
"""
    )
    spec = cp.load_spec(spec_file, harnesses={"factconsolidation"})
    d = spec.datasets[0]
    assert d.data == (tmp_path / "d.json").resolve()
    heuristic = str(d.files["heuristic"])
    assert d.argv() == ["--data", str(d.data), "--heuristic", heuristic, "--sizes", "6k"]
    rrf = spec.settings[1]
    assert rrf.weights == {"fts": 1.0, "vector": 1.0, "recency": 0.0}
    assert rrf.argv("fake") == [
        "--embedder",
        "fake",
        "--weights",
        "fts=1,recency=0,vector=1",
        "--mmr-lambda",
        "1.0",
    ]
    assert spec.reps == 1000 and spec.seed == 0 and spec.embedder == "fake"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"baseline": "nope"}, "baseline"),
        ({"settings": [{"name": "a"}, {"name": "a"}]}, "settings"),
        ({"settings": [{"name": "a", "weight": "fts=1"}]}, "settings[0]"),
        ({"settings": [{"name": "a", "weights": "bogus=1"}]}, "settings[0].weights"),
        ({"settings": [{"name": "a", "k": 0}]}, "settings[0].k"),
        ({"settings": [{"name": "a", "mmr_lambda": 2}]}, "settings[0].mmr_lambda"),
        ({"settings": [{"name": "a", "embedder": "gpt"}]}, "settings[0].embedder"),
        ({"settings": [{"name": "a", "args": ["--out-dir", "/"]}]}, "settings[0].args"),
        ({"settings": [{"name": "a", "args": ["--save-capture=/x"]}]}, "settings[0].args"),
        ({"settings": [{"name": "../x"}]}, "settings[0].name"),
        ({"settings": []}, "settings"),
        ({"datasets": [{"name": "d", "harness": "h", "data": "/no/such"}]}, "datasets[0].data"),
        ({"datasets": [{"name": "d", "harness": "nope", "data": "x"}]}, "datasets[0].harness"),
        ({"reps": 0}, "reps"),
        ({"colour": "red"}, "(top)"),
    ],
)
def test_a_bad_spec_is_a_typed_error_naming_the_field(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    raw = _spec(tmp_path, **change)
    if "baseline" not in change and "settings" in change and change["settings"]:
        raw["baseline"] = change["settings"][0]["name"]
    with pytest.raises(InvalidFlagError) as info:
        cp.parse_spec(raw, tmp_path, harnesses={"h"})
    assert info.value.details["field"] == field
    assert field in info.value.message


def test_an_unreadable_spec_file_is_a_typed_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("name = ")
    with pytest.raises(InvalidFlagError, match="not valid TOML"):
        cp.load_spec(bad)
    with pytest.raises(InvalidFlagError, match="cannot read"):
        cp.load_spec(tmp_path / "missing.json")


# -- identity ------------------------------------------------------------------------------
def test_a_cell_is_named_by_what_decides_its_rows(tmp_path: Path) -> None:
    raw = _spec(tmp_path)
    base = {c.setting: c.id for c in _plan(tmp_path, raw)}
    assert len(set(base.values())) == 2
    # labels are not identity: renaming a setting keeps its id
    renamed = _spec(tmp_path, settings=[{"name": "production"}, {"name": "k2", "k": 2}])
    renamed["baseline"] = "production"
    assert {c.id for c in _plan(tmp_path, renamed)} == set(base.values())
    # the data's content is, its path is not
    moved = tmp_path / "elsewhere.json"
    moved.write_bytes((tmp_path / "data.json").read_bytes())
    raw_moved = _spec(tmp_path, datasets=[{"name": "d1", "harness": "h", "data": str(moved)}])
    assert {c.id for c in _plan(tmp_path, raw_moved)} == set(base.values())
    moved.write_text('{"rows": [1, 2, 4]}')
    assert not {c.id for c in _plan(tmp_path, raw_moved)} & set(base.values())
    # and so is the code
    other_code = {**CODE, "source": "t" * 64}
    assert not {c.id for c in _plan(tmp_path, raw, other_code)} & set(base.values())


@given(st.dictionaries(st.text(max_size=5), st.integers(), max_size=6))
def test_the_identity_digest_ignores_key_order(d: dict[str, int]) -> None:
    assert cp.digest_json(d) == cp.digest_json(dict(reversed(list(d.items()))))


def test_source_digest_sees_an_edit_and_skips_excluded_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "reader.py").write_text("y = 1\n")
    (tmp_path / "notes.md").write_text("words")
    first = cp.source_digest([tmp_path], exclude=[tmp_path / "reader.py"])
    (tmp_path / "reader.py").write_text("y = 2\n")
    (tmp_path / "notes.md").write_text("other words")
    assert cp.source_digest([tmp_path], exclude=[tmp_path / "reader.py"]) == first
    (tmp_path / "a.py").write_text("x = 2\n")
    assert cp.source_digest([tmp_path], exclude=[tmp_path / "reader.py"]) != first


# -- a cell's file ---------------------------------------------------------------------------
def test_cell_table_normalizes_metrics_and_refuses_repeated_questions() -> None:
    out = cp.CellOutcome(
        "c" * 32,
        rows=[
            {"qid": "a", "size": "6k", "hit@1": True, "mrr": None, "top10": ["x"]},
            {"qid": "b", "size": "6k", "hit@1": False, "mrr": 0.5, "top10": []},
        ],
        metrics=["hit@1", "mrr", "absent"],
        group="size",
    )
    table = cp.cell_table(out)
    assert table.column_names[:6] == ["cell", "qid", "category", "hit@1", "mrr", "absent"]
    assert table.column("category").to_pylist() == ["6k", "6k"]
    assert table.column("hit@1").to_pylist() == [1.0, 0.0]
    assert table.column("mrr").to_pylist() == [None, 0.5]
    assert table.column("absent").to_pylist() == [None, None]
    assert "top10" in table.column_names and "size" in table.column_names
    out.rows.append({"qid": "a", "size": "6k", "hit@1": True})
    with pytest.raises(ValueError, match="repeat"):
        cp.cell_table(out)


def test_a_cell_file_counts_only_when_whole_and_its_own(tmp_path: Path) -> None:
    folder = cp.CampaignFolder(tmp_path)
    cells = _plan(tmp_path, _spec(tmp_path))
    folder.cells_dir.mkdir(parents=True)
    path = folder.write_cell(cells[0], fake_cell(cp.CellTask(cells[0].id, "h", ())))
    meta = folder.cell_meta(cells[0].id)
    assert meta is not None and meta["n_rows"] == 4 and meta["metrics"] == ["hit"]
    assert meta["identity"] == json.loads(json.dumps(cells[0].identity))
    # a torn file (a copy cut short) is not done
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    assert not folder.is_done(cells[0].id)
    # another cell's file under this name is not done either
    path.write_bytes(whole)
    folder.cell_path(cells[1].id).write_bytes(whole)
    assert folder.is_done(cells[0].id) and not folder.is_done(cells[1].id)
    assert not list(folder.cells_dir.glob(".memhtml-*.tmp"))  # the temp file was renamed


# -- running --------------------------------------------------------------------------------
def test_a_rerun_computes_only_what_is_not_done(tmp_path: Path) -> None:
    spec = cp.parse_spec(_spec(tmp_path), tmp_path)
    folder = cp.CampaignFolder(tmp_path / "camp")
    CALLS.clear()
    first = cp.run_campaign(spec, folder, fake_cell, Serial(), code=CODE)
    assert len(first.computed) == 2 and not first.skipped and not first.failed
    assert len(CALLS) == 2
    again = cp.run_campaign(spec, folder, fake_cell, Serial(), code=CODE)
    assert again.computed == [] and sorted(again.skipped) == sorted(first.computed)
    assert len(CALLS) == 2
    # a lost cell and a torn one are computed again, nothing else
    lost, torn = first.computed
    folder.cell_path(lost).unlink()
    folder.cell_path(torn).write_bytes(b"PAR1 cut short")
    (folder.cells_dir / ".memhtml-999-0.tmp").write_bytes(b"left by a killed run")
    third = cp.run_campaign(spec, folder, fake_cell, Serial(), code=CODE)
    assert sorted(third.computed) == sorted([lost, torn]) and third.skipped == []
    assert not list(folder.cells_dir.glob(".memhtml-*.tmp"))
    manifest = folder.manifest()
    assert [c["setting"] for c in manifest["cells"]] == ["prod", "k2"]
    assert manifest["baseline"] == "prod" and manifest["code"] == CODE


def test_cells_of_an_earlier_plan_are_kept_until_pruned(tmp_path: Path) -> None:
    spec = cp.parse_spec(_spec(tmp_path), tmp_path)
    folder = cp.CampaignFolder(tmp_path / "camp")
    old = cp.run_campaign(spec, folder, fake_cell, Serial(), code=CODE)
    edited = {**CODE, "source": "e" * 64}  # the code changed: every cell is new
    new = cp.run_campaign(spec, folder, fake_cell, Serial(), code=edited)
    assert len(new.computed) == 2 and new.other_files == 2
    assert all(folder.cell_path(c).exists() for c in old.computed)
    gone = cp.prune(folder)
    assert sorted(p.stem for p in gone) == sorted(old.computed)
    assert sorted(p.stem for p in folder.cells_dir.glob("*.parquet")) == sorted(new.computed)


def test_a_failed_cell_writes_nothing_and_is_tried_again(tmp_path: Path) -> None:
    raw = _spec(tmp_path, settings=[{"name": "prod"}, {"name": "bad", "k": 13}])
    spec = cp.parse_spec(raw, tmp_path)
    folder = cp.CampaignFolder(tmp_path / "camp")
    seen: list[tuple[str, str]] = []
    rep = cp.run_campaign(
        spec,
        folder,
        fake_cell,
        Serial(),
        code=CODE,
        on_cell=lambda c, status, _: seen.append((c.setting, status)),
    )
    assert list(rep.failed.values()) == ["unlucky k"]
    assert seen == [("prod", "computed"), ("bad", "failed")]
    assert not folder.cell_path(next(iter(rep.failed))).exists()
    again = cp.run_campaign(spec, folder, fake_cell, Serial(), code=CODE)
    assert again.computed == [] and list(again.failed) == list(rep.failed)


def test_identical_settings_share_one_cell(tmp_path: Path) -> None:
    raw = _spec(tmp_path, settings=[{"name": "prod"}, {"name": "same", "k": None}])
    spec = cp.parse_spec(raw, tmp_path)
    CALLS.clear()
    rep = cp.run_campaign(spec, cp.CampaignFolder(tmp_path / "c"), fake_cell, Serial(), code=CODE)
    assert len(CALLS) == 1 and rep.to_data()["cells"] == 1


def test_a_second_run_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    folder = cp.CampaignFolder(tmp_path / "camp")
    with folder.lock(), pytest.raises(StorageError, match="another campaign run"):
        cp.run_campaign(
            cp.parse_spec(_spec(tmp_path), tmp_path), folder, fake_cell, Serial(), code=CODE
        )


def test_a_folder_without_a_manifest_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="not a campaign folder"):
        cp.CampaignFolder(tmp_path).manifest()
    (tmp_path / "campaign.json").write_text("{not json")
    with pytest.raises(StorageError, match="unreadable"):
        cp.CampaignFolder(tmp_path).manifest()
