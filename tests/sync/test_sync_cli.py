"""The sync surface from the command line: init --clone, remote add, sync, status."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from memhtml.cli.main import run
from tests.sync.conftest import git


def call(*argv: str) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    code = run([*argv, "--json"], stdout=out)
    return code, json.loads(out.getvalue())


def test_clone_write_sync_status(remote: Path, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("MEMHTML_EMBEDDER", "fake")
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        code, out = call("init", "--clone", str(remote), "--repo", str(root))
        assert code == 0, out
        assert out["data"]["cloned_from"] == str(remote)
    code, out = call(
        "write",
        "--repo",
        str(a),
        "--title",
        "Drain",
        "--type",
        "semantic",
        "--claim",
        "Drain the VIP before a deploy.",
    )
    assert code == 0, out
    code, out = call("status", "--repo", str(a))
    assert out["data"]["remote"] == {"remote": "origin", "branch": "main", "ahead": 1, "behind": 0}
    code, out = call("sync", "--repo", str(a))
    assert code == 0 and out["type"] == "sync.report" and out["data"]["sent"] == 1, out
    code, out = call("sync", "--repo", str(b), "--no-push")
    assert out["data"]["received"] == 1 and out["data"]["mode"] == "fast-forward"
    code, out = call("search", "--repo", str(b), "drain the VIP")
    assert out["data"]["hits"][0]["title"] == "Drain"


def test_errors_are_typed(remote: Path, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("MEMHTML_EMBEDDER", "fake")
    a = tmp_path / "a"
    call("init", "--clone", str(remote), "--repo", str(a))
    code, out = call("init", "--clone", str(remote), "--repo", str(a))
    assert (code, out["code"]) == (2, "ERR_INVALID_FLAG")  # not an empty folder
    code, out = call("remote", "add", "origin", "x", "--repo", str(a))
    assert out["code"] == "ERR_REMOTE"
    git(a, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    code, out = call("sync", "--repo", str(a))
    assert out["code"] == "ERR_REMOTE" and out["details"]["reason"] == "unreachable"
    code, out = call("sync", "--abort", "--repo", str(a))
    assert code == 0 and out["data"]["aborted"] is False
