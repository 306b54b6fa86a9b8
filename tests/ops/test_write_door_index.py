"""A write door indexes its batch beside the commit (memhtml.index.commit): the rows land
with the commit, and a commit that fails or an index pass that fails leaves the index at
the parent, never half-written, and the next door catches up."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import WriteConflictError
from memhtml.index import writer
from memhtml.store.git import Git
from memhtml.store.recovery import journal_path


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def _paths(corpus: Any) -> list[str]:
    return [str(r[0]) for r in corpus.conn.execute("SELECT path FROM files ORDER BY path")]


def _ops(n: int, word: str) -> list[dict[str, Any]]:
    return [
        {"title": f"{word} fact {i}", "type": "semantic", "claim": f"The {word} pool has {i} rows."}
        for i in range(n)
    ]


def test_rows_and_watermark_land_with_the_commit(corpus: Any, repo: Path) -> None:
    corpus.write(title="first", type="semantic", claim="One row first.")
    out = corpus.apply(_ops(3, "amber"))
    assert out.commit_sha == _head(repo)
    assert corpus.indexer.watermark() == out.commit_sha
    assert sorted(r["path"] for r in out.results) == [p for p in _paths(corpus) if "amber" in p]
    assert out.index["projected"] == 3 and out.index["head_sha"] == out.commit_sha
    assert not corpus.conn.in_transaction


def test_a_failed_commit_leaves_the_index_at_the_parent(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus.write(title="first", type="semantic", claim="One row first.")
    parent, before = _head(repo), _paths(corpus)

    def refuse(self: Git, *args: Any, **kwargs: Any) -> str:
        raise WriteConflictError("HEAD moved while committing")

    with monkeypatch.context() as patch:
        patch.setattr(Git, "commit_paths", refuse)
        with pytest.raises(WriteConflictError):
            corpus.apply(_ops(3, "birch"))
    assert _head(repo) == parent and corpus.indexer.watermark() == parent
    assert _paths(corpus) == before  # the rows prepared beside the commit rolled back
    assert not corpus.conn.in_transaction
    assert not list((repo / "resources").rglob("birch*"))  # the tree is back too
    again = corpus.apply(_ops(2, "birch"))  # the connection and the store still work
    assert again.commit_sha == _head(repo) == corpus.indexer.watermark()
    assert len([p for p in _paths(corpus) if "birch" in p]) == 2


def test_a_failed_index_pass_is_caught_up_by_the_next_door(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus.write(title="first", type="semantic", claim="One row first.")
    parent = _head(repo)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(writer, "bulk_insert", broken)
        outcome = corpus.apply(_ops(3, "cedar"))  # landed: acknowledged, with a warning
    landed = _head(repo)
    assert landed != parent and outcome.commit_sha == landed  # its index pass did not land
    (warning,) = outcome.to_data()["warnings"]
    assert warning["code"] == "index-behind" and "disk full" in warning["message"]
    assert corpus.indexer.watermark() == parent
    assert not [p for p in _paths(corpus) if "cedar" in p]
    assert not corpus.conn.in_transaction
    assert journal_path(repo).exists()  # left for the next writer to settle
    corpus.write(title="next", type="semantic", claim="The next door runs.")
    assert len([p for p in _paths(corpus) if "cedar" in p]) == 3
    assert corpus.indexer.watermark() == _head(repo)
    assert not journal_path(repo).exists()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_work_staged_while_a_door_plans_is_never_committed(corpus: Any, repo: Path) -> None:
    corpus.write(title="first", type="semantic", claim="One row first.")
    (repo / "notes.txt").write_text("the user's own file\n")

    def plan(planner: Any) -> dict[str, Any]:
        # The user stages work after the door asked git about staged work, before it commits.
        _git(repo, "add", "notes.txt")
        from memhtml.contracts.ops import WriteOp

        return planner.write(WriteOp(title="during", type="semantic", claim="Planned meanwhile."))

    out = corpus.plan_commit(plan, lambda payload: "memhtml(write): during")
    assert out["commit_sha"] == _git(repo, "rev-parse", "HEAD")
    committed = _git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert committed == [out["path"]]
    assert _git(repo, "diff", "--cached", "--name-only") == "notes.txt"  # still staged, ours
