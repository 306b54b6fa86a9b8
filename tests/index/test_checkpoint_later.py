"""A big write door commits without SQLite's automatic checkpoint and checkpoints its WAL on a
thread of its own; the rows are committed (and seen by other connections) either way."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.index import db
from memhtml.store.layout import init_repo


def _ops(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {"op": "write", "title": f"note {i}", "type": "semantic", "claim": f"Pool {i} drains."}
        for i in range(start, start + n)
    ]


def _index_path(root: Path) -> Path:
    return root / ".memhtml" / "index.db"


def _hold_checkpoints(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Checkpoint threads record the database they were asked for and run nothing."""
    started: list[str] = []

    class Held:
        def __init__(self, path: str) -> None:
            started.append(path)

        def join(self) -> None:
            pass

    monkeypatch.setattr(db, "Checkpoint", Held)
    return started


def test_a_big_batch_leaves_its_pages_in_the_wal_for_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _hold_checkpoints(monkeypatch)
    root = tmp_path / "memory"
    init_repo(root)
    with memhtml.open(root, embedder="off") as c:
        c.apply(_ops(3))
        c.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        # A low limit, so that the batch's COMMIT would checkpoint by itself.
        c.conn.execute("PRAGMA wal_autocheckpoint = 10")
        before = _index_path(root).stat().st_size
        c.apply(_ops(db.LATER_CHECKPOINT_FILES, start=3))
        assert started == [str(_index_path(root))]
        # The COMMIT copied nothing into the database file: the pages wait in the WAL.
        assert _index_path(root).stat().st_size == before
        assert c.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 10  # restored
        with sqlite3.connect(_index_path(root)) as other:  # committed: another reader sees it
            count = other.execute("SELECT count(*) FROM files").fetchone()[0]
        assert count == db.LATER_CHECKPOINT_FILES + 3
        busy, frames, copied = c.conn.execute("PRAGMA main.wal_checkpoint(PASSIVE)").fetchone()
        assert (busy, copied) == (0, frames) and frames > 0
        assert _index_path(root).stat().st_size > before


def test_the_thread_checkpoints_and_close_waits_for_it(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    init_repo(root)
    c = memhtml.open(root, embedder="off")
    c.apply(_ops(db.LATER_CHECKPOINT_FILES))
    running = c.indexer._checkpoint
    assert running is not None
    c.close()
    assert c.indexer._checkpoint is None and not running._thread.is_alive()
    with memhtml.open(root, embedder="off") as again:
        hits = again.search("pool drains", limit=5).hits
    assert len(hits) == 5


def test_a_small_write_commits_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: str) -> None:
        raise AssertionError("a small write started a checkpoint thread")

    monkeypatch.setattr(db, "Checkpoint", refuse)
    root = tmp_path / "memory"
    init_repo(root)
    with memhtml.open(root, embedder="off") as c:
        c.apply(_ops(db.LATER_CHECKPOINT_FILES - 1))
        c.write(title="one", claim="One more write.")
        assert c.indexer._checkpoint is None


def test_a_big_rebuild_checkpoints_on_the_thread_and_a_small_one_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "memory"
    init_repo(root)
    with memhtml.open(root, embedder="off") as c:
        c.apply(_ops(3))
        started = _hold_checkpoints(monkeypatch)
        c.index.rebuild(embed=False)
        assert started == []  # a few files: checkpointed inside the COMMIT, as before
        c.apply(_ops(db.LATER_CHECKPOINT_FILES, start=3))
        started.clear()
        c.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.conn.execute("PRAGMA wal_autocheckpoint = 10")
        before = _index_path(root).stat().st_size
        report = c.index.rebuild(embed=False)
        assert started == [str(_index_path(root))]
        assert report["projected"] == db.LATER_CHECKPOINT_FILES + 3
        assert _index_path(root).stat().st_size == before  # the pages wait in the WAL
        assert c.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 10
        with sqlite3.connect(_index_path(root)) as other:
            count = other.execute("SELECT count(*) FROM files").fetchone()[0]
        assert count == db.LATER_CHECKPOINT_FILES + 3
