"""The tree watcher: any change under the memory folders is reported, silence means none."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from memhtml.store.watch import TreeWatcher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


@pytest.fixture
def watched(tmp_path: Path) -> tuple[Path, TreeWatcher]:
    for folder in ("areas/inbox", "resources", "archive"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "areas" / "inbox" / "a.html").write_text("a")
    watcher = TreeWatcher(tmp_path, ("projects", "areas", "resources", "archive"))
    assert watcher.active
    assert watcher.drain() is False
    return tmp_path, watcher


def test_an_in_place_edit_is_reported_once(watched: tuple[Path, TreeWatcher]) -> None:
    root, watcher = watched
    with (root / "areas" / "inbox" / "a.html").open("a") as fh:  # no new directory entry
        fh.write("more")
    assert watcher.drain() is True
    assert watcher.drain() is False


def test_files_in_a_new_folder_are_watched(watched: tuple[Path, TreeWatcher]) -> None:
    root, watcher = watched
    (root / "resources" / "topic" / "deep").mkdir(parents=True)
    assert watcher.drain() is True
    (root / "resources" / "topic" / "deep" / "x.html").write_text("x")
    assert watcher.drain() is True
    (root / "resources" / "topic" / "deep" / "x.html").write_text("y")
    assert watcher.drain() is True


def test_delete_rename_and_a_new_bucket_are_reported(watched: tuple[Path, TreeWatcher]) -> None:
    root, watcher = watched
    os.rename(root / "areas" / "inbox" / "a.html", root / "archive" / "a.html")
    assert watcher.drain() is True
    (root / "archive" / "a.html").unlink()
    assert watcher.drain() is True
    (root / "projects" / "p").mkdir(parents=True)
    assert watcher.drain() is True
    (root / "projects" / "p" / "f.html").write_text("f")
    assert watcher.drain() is True


def test_changes_outside_the_memory_folders_are_not_reported(
    watched: tuple[Path, TreeWatcher],
) -> None:
    root, watcher = watched
    (root / ".memhtml").mkdir()
    (root / ".memhtml" / "index.db").write_text("db")
    (root / "README.html").write_text("readme")
    assert watcher.drain() is False


def test_a_watching_corpus_follows_hand_edits(corpus: Any, repo: Path) -> None:
    assert corpus.watch_tree()
    path = corpus.write(title="port", claim="The service listens on port 8080.")["path"]
    assert corpus.search("8080").index_fresh
    target = repo / path
    target.write_text(target.read_text().replace("8080", "9090"))
    result = corpus.search("9090")
    assert result.index_fresh and [h.path for h in result.hits][:1] == [path]
    assert corpus.index.status()["index_fresh"]
