"""Without the `research` extra, export says which extra to install (ERR_EXTRA_REQUIRED).

It used to answer ERR_STORAGE, which sends a user looking at their index. The
missing module is simulated in process: `sys.modules[name] = None` makes the
import fail exactly as an absent package does.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from memhtml.analysis import export
from memhtml.cli.main import run
from memhtml.contracts.errors import ExtraRequiredError, error_codes


@pytest.fixture(params=["polars", "pyarrow"])
def missing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    name = str(request.param)
    monkeypatch.setitem(sys.modules, name, None)
    return name


def test_cli_export_names_the_missing_extra(repo: Path, tmp_path: Path, missing: str) -> None:
    out = io.StringIO()
    code = run(["export", "--out", str(tmp_path / "x"), "--repo", str(repo), "--json"], out)
    envelope = json.loads(out.getvalue())
    assert code == 1
    assert envelope["code"] == "ERR_EXTRA_REQUIRED" != "ERR_STORAGE"
    assert missing in envelope["error"]
    assert envelope["suggestions"] == ["pip install 'memhtml[research]'"]
    assert envelope["details"] == {"extra": "research", "missing": [missing]}
    assert not (tmp_path / "x").exists()


def test_library_entry_points_raise_the_typed_error(repo: Path, missing: str) -> None:
    with pytest.raises(ExtraRequiredError, match=missing):
        export.export_root(repo, repo / "out")
    with pytest.raises(ExtraRequiredError, match=missing):
        export.frames(repo)
    with pytest.raises(ExtraRequiredError, match=missing):
        export.register_duckdb({})


def test_duckdb_missing_only_stops_what_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(ExtraRequiredError, match="duckdb"):
        export.register_duckdb({})


def test_the_code_is_in_the_manifest() -> None:
    assert "ERR_EXTRA_REQUIRED" in error_codes()
    assert ExtraRequiredError.exit_code == 1
