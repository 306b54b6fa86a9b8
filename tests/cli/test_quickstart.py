"""quickstart never touches existing memories, names the right flag, and cleans up after itself."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., tuple[int, dict[str, Any]]]


def head(root: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_an_existing_store_is_refused_untouched(cli: Cli, store: Path) -> None:
    before = head(store)
    index_db = store / ".memhtml" / "index.db"
    mtime = index_db.stat().st_mtime_ns
    code, payload = cli("quickstart", "--repo", str(store), "--embedder", "fake")
    assert (code, payload["code"]) == (2, "ERR_INVALID_FLAG")
    assert "--repo" in payload["error"] and "--out" not in payload["error"]
    assert not any("--out" in s for s in payload["suggestions"])
    assert head(store) == before and index_db.stat().st_mtime_ns == mtime


def test_a_non_empty_directory_names_repo_not_out(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    code, payload = cli("quickstart", "--repo", str(tmp_path), "--embedder", "fake")
    assert (code, payload["code"]) == (2, "ERR_INVALID_FLAG")
    assert f"--repo {tmp_path}" in payload["error"] and "--out" not in payload["error"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_given_repo_is_kept_and_an_untouched_demo_is_reused(cli: Cli, tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    code, payload = cli("quickstart", "--repo", str(demo), "--embedder", "fake")
    assert code == 0 and payload["data"]["created"] and payload["data"]["kept"]
    code, payload = cli("quickstart", "--repo", str(demo), "--embedder", "fake")
    assert code == 0 and not payload["data"]["created"] and payload["data"]["kept"]
    assert (demo / ".git").exists()


def test_the_temporary_store_is_deleted_unless_kept(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, payload = cli("quickstart", "--embedder", "fake")
    assert code == 0 and payload["data"]["kept"] is False
    assert payload["data"]["memories"] > 0 and payload["data"]["searches"][0]["hits"]
    assert not Path(payload["data"]["root"]).exists()
    assert list(tmp_path.iterdir()) == []
    assert not any("MEMHTML_ROOT" in step for step in payload["data"]["next"])
    code, payload = cli("quickstart", "--embedder", "fake", "--keep")
    assert code == 0 and payload["data"]["kept"] is True
    assert (Path(payload["data"]["root"]) / ".git").exists()
