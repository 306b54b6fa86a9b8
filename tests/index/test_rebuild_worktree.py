"""A rebuild parses HEAD while `git status` runs, then puts the working tree's edits in place.

The reference is the same edits committed: a rebuild over uncommitted edits
must give the rows, rowids (the FTS table's keys) and skips a rebuild gives
once they are committed, however the edited paths fall among the parse
chunks (before the first tree path, inside a chunk, on a chunk's edge, after
the last one), in worker processes and inline.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memhtml.index import indexer as indexer_module
from memhtml.store.git import Git
from tests.index.test_indexer import snapshot


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _plane(conn: sqlite3.Connection) -> dict[str, Any]:
    out: dict[str, Any] = snapshot(conn)
    # What differs by construction: the committed run has no overlay, and its history
    # retires the path whose deletion it committed.
    out.pop("overlay")
    out.pop("retired")
    out["rowids"] = conn.execute(
        "SELECT rowid, path, blob_sha FROM files ORDER BY rowid"
    ).fetchall()
    out["fts"] = conn.execute(
        "SELECT rowid, round(bm25(files_fts), 9) FROM files_fts WHERE files_fts MATCH 'fact'"
        " ORDER BY rowid"
    ).fetchall()
    return out


def _seed(corpus: Any, repo: Path) -> str:
    """Committed memories over several chunks; returns one file's text to copy."""
    first = corpus.write(title="Seed", type="semantic", claim="The seed fact.", tag=["t"])
    text = (repo / first["path"]).read_text()
    for bucket in ("areas", "resources"):
        (repo / bucket / "m").mkdir(parents=True, exist_ok=True)
        for i in range(9):
            (repo / bucket / "m" / f"f-{i}.html").write_text(
                text.replace("The seed fact.", f"Fact {bucket} {i}.")
            )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "seed")
    return text


def _edit_worktree(repo: Path, text: str) -> None:
    def put(rel: str, claim: str) -> None:
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace("The seed fact.", claim))

    put("areas/a-first.html", "Untracked, before every tree path.")  # new, sorts first
    put("areas/m/f-3.html", "Edited in the middle of a chunk.")
    put("areas/m/f-4a.html", "Untracked between two tree paths.")
    (repo / "resources" / "m" / "f-5.html").unlink()  # deleted, not committed
    put("resources/m/f-7.html", "Fact areas 2.")  # now a duplicate of areas/m/f-2 (smaller path)
    put("resources/zz-last.html", "Untracked, after every tree path.")
    (repo / "areas" / "m" / "f-8.html").write_text("<html><article>no mark</article></html>")


@pytest.mark.parametrize("workers", [True, False])
@pytest.mark.parametrize("chunk", [1, 3, 4, 100])
def test_rebuild_over_uncommitted_edits_equals_rebuild_of_them_committed(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch, workers: bool, chunk: int
) -> None:
    monkeypatch.setattr(indexer_module, "CHUNK", chunk)
    monkeypatch.setattr(indexer_module, "PARALLEL_MIN", 0 if workers else 10**9)
    text = _seed(corpus, repo)
    _edit_worktree(repo, text)

    report = corpus.indexer.rebuild()
    over_worktree = _plane(corpus.conn)
    overlay = dict(corpus.conn.execute("SELECT path, blob_sha FROM worktree_overlay"))

    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the same edits")
    committed_report = corpus.indexer.rebuild()

    assert _plane(corpus.conn) == over_worktree
    assert report.touched == committed_report.touched
    assert report.skipped == committed_report.skipped
    skipped = {s["path"]: s["reason"] for s in report.skipped}
    assert skipped["resources/m/f-7.html"] == "duplicate content of areas/m/f-2.html"
    assert "areas/m/f-8.html" in skipped
    assert report.touched[0] == "areas/a-first.html"
    assert report.touched[-1] == "resources/zz-last.html"
    assert "resources/m/f-5.html" not in report.touched
    assert overlay["resources/m/f-5.html"] is None
    assert set(overlay) == {
        "areas/a-first.html",
        "areas/m/f-3.html",
        "areas/m/f-4a.html",
        "areas/m/f-8.html",
        "resources/m/f-5.html",
        "resources/m/f-7.html",
        "resources/zz-last.html",
    }


def test_many_uncommitted_files_parse_in_the_pool_and_keep_path_order(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More edited files than PARALLEL_MIN go to the workers (queued after the tree)."""
    monkeypatch.setattr(indexer_module, "CHUNK", 2)
    monkeypatch.setattr(indexer_module, "PARALLEL_MIN", 3)
    text = _seed(corpus, repo)
    for i in range(7):
        (repo / "areas" / "m" / f"f-{i}b.html").write_text(
            text.replace("The seed fact.", f"Untracked {i}.")
        )
    report = corpus.indexer.rebuild()
    over_worktree = _plane(corpus.conn)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the same files")
    assert corpus.indexer.rebuild().touched == report.touched
    assert _plane(corpus.conn) == over_worktree
    assert report.touched == sorted(report.touched)


def test_a_rebuild_that_fails_early_leaves_no_git_status_behind(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(corpus, repo)
    started: list[subprocess.Popen[bytes]] = []
    real_start = corpus.git.start_status

    def start_status(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(real_start(*args, **kwargs))
        return started[-1]

    def broken_ls_tree(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("ls-tree broke")

    monkeypatch.setattr(corpus.git, "start_status", start_status)
    monkeypatch.setattr(corpus.git, "ls_tree", broken_ls_tree)
    with pytest.raises(RuntimeError, match="ls-tree broke"):
        corpus.indexer.rebuild()
    assert len(started) == 1
    assert started[0].returncode is not None  # reaped, not left running


NOT_MEMORIES = (
    "areas/m/index.html",  # a generated listing
    "areas/m/notes.txt",
    "areas/m/photo.png",
    "archive/notayear/areas/m/x.html",  # not archive/<YYYY>/<original path>
    "areas/.html",
)


@pytest.mark.parametrize("workers", [True, False])
def test_files_that_are_not_memories_are_neither_indexed_nor_skipped(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch, workers: bool
) -> None:
    monkeypatch.setattr(indexer_module, "CHUNK", 2)
    monkeypatch.setattr(indexer_module, "PARALLEL_MIN", 0 if workers else 10**9)
    text = _seed(corpus, repo)
    reference = corpus.indexer.rebuild()
    plane = _plane(corpus.conn)
    for rel in NOT_MEMORIES:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text.replace("The seed fact.", f"Not a memory: {rel}."))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "files that are not memories")
    report = corpus.indexer.rebuild()
    assert report.touched == reference.touched
    assert report.skipped == reference.skipped == []
    assert _plane(corpus.conn) == plane


def test_the_workers_filter_is_exactly_indexable(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=tmp_path,
        input=b"",
        check=True,
        capture_output=True,
    )
    paths = [*NOT_MEMORIES, "areas/m/ok.html", "archive/2024/areas/m/ok.html", "README.html"]
    empty = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # the empty blob
    git = Git(tmp_path)
    kept = [r.path for r in indexer_module.tree_rows_chunk(git, "NOW", [(p, empty) for p in paths])]
    assert kept == [p for p in paths if indexer_module.indexable(p)]
    assert kept == ["areas/m/ok.html", "archive/2024/areas/m/ok.html"]
