"""The commit plumbing of the write doors: a large batch's blobs in one pack, few git
processes per write, the fallback identity, and a failed pack import costing nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.store import git as git_module


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout


def _objects(root: Path) -> dict[str, int]:
    out = _git(root, "count-objects", "-v")
    return {k: int(v) for k, v in (line.split(": ") for line in out.splitlines())}


def _ops(n: int, tag: str = "") -> list[dict[str, Any]]:
    return [
        {"title": f"fact {tag}{i}", "type": "semantic", "claim": f"Fact {tag}{i} holds."}
        for i in range(n)
    ]


def test_a_large_batch_stores_its_blobs_in_one_pack(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_module, "PACK_THRESHOLD", 5)
    # git keeps an import of fewer than transfer.unpackLimit (100) objects loose: lower it.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "fastimport.unpackLimit")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "2")
    before = _objects(repo)
    out = corpus.apply(_ops(8))
    after = _objects(repo)
    assert out.summary()["written"] == 8
    assert after["packs"] == before["packs"] + 1
    assert after["in-pack"] == before["in-pack"] + 8  # the eight blobs
    # Only the commit and its trees are loose: no blob was written twice.
    assert after["count"] - before["count"] == 1 + len({"", "areas", "areas/inbox"})
    assert _git(repo, "status", "--porcelain", "--", "areas") == ""
    _git(repo, "fsck", "--strict")
    for result in out.results:
        assert _git(repo, "cat-file", "-t", f"HEAD:{result['path']}").strip() == "blob"


def test_a_small_batch_writes_loose_objects(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_module, "PACK_THRESHOLD", 5)
    before = _objects(repo)
    corpus.apply(_ops(4))
    after = _objects(repo)
    assert after["packs"] == before["packs"]
    assert after["count"] - before["count"] == 4 + 1 + 3


def test_a_failed_pack_import_still_commits(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_module, "PACK_THRESHOLD", 2)

    class Failed:
        def wait(self) -> bool:
            return False

        def kill(self) -> None:
            pass

    monkeypatch.setattr(git_module.Git, "store_blobs", lambda self, blobs: Failed())
    out = corpus.apply(_ops(3))
    assert out.commit_sha == _git(repo, "rev-parse", "HEAD").strip()
    assert _git(repo, "status", "--porcelain", "--", "areas") == ""
    _git(repo, "fsck", "--strict")


def test_a_write_runs_few_git_processes(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus.write(title="first", claim="The first fact.")  # the index exists from here on
    calls: list[list[str]] = []
    real_popen = subprocess.Popen  # subprocess.run starts its process through it

    class Popen(real_popen):  # type: ignore[misc,valid-type]
        def __init__(self, args: Any, *a: Any, **k: Any) -> None:
            if isinstance(args, list) and args[:1] == ["git"]:
                calls.append(args[1:2])
            super().__init__(args, *a, **k)

    monkeypatch.setattr(subprocess, "Popen", Popen)
    corpus.write(title="second", claim="The second fact.")
    # update-index (staging), hash-object (blob ids) and cat-file (HEAD's trees) at once,
    # then mktree, commit-tree, update-ref: nothing reads git's whole index but the first.
    assert [c[0] for c in calls] == [
        "update-index",
        "hash-object",
        "cat-file",
        "mktree",
        "commit-tree",
        "update-ref",
    ]


def test_without_an_identity_the_commit_is_memhtmls(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{name}_NAME", raising=False)
        monkeypatch.delenv(f"GIT_{name}_EMAIL", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("EMAIL", "")
    _git(repo, "config", "user.useConfigOnly", "true")
    with memhtml.open(repo, embedder="off") as corpus:
        first = corpus.write(title="anon", claim="Nobody wrote this.")
        second = corpus.write(title="anon two", claim="Nobody wrote this either.")
    for sha in (first["commit_sha"], second["commit_sha"]):
        who = _git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", sha).strip()
        assert who == "memhtml <memhtml@localhost>|memhtml <memhtml@localhost>"
