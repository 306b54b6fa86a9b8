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


# -- naming what changed (TreeWatcher.changes) ------------------------------------------


def test_file_events_name_their_paths(watched: tuple[Path, TreeWatcher]) -> None:
    root, watcher = watched
    inbox = root / "areas" / "inbox"
    (inbox / "b.html").write_text("b")
    with (inbox / "a.html").open("a") as fh:
        fh.write("more")
    assert watcher.changes().paths == {"areas/inbox/a.html", "areas/inbox/b.html"}
    os.rename(inbox / "b.html", root / "resources" / "b.html")
    (inbox / "a.html").unlink()
    changes = watcher.changes()
    assert not changes.unknown
    assert changes.paths == {"areas/inbox/b.html", "resources/b.html", "areas/inbox/a.html"}
    os.chmod(root / "resources" / "b.html", 0o755)
    assert watcher.changes().paths == {"resources/b.html"}
    assert not watcher.changes()


def test_directory_events_are_unknown(watched: tuple[Path, TreeWatcher]) -> None:
    root, watcher = watched
    (root / "resources" / "topic").mkdir()
    assert watcher.changes().unknown
    (root / "resources" / "topic" / "x.html").write_text("x")
    assert watcher.changes().paths == {"resources/topic/x.html"}
    os.rename(root / "resources" / "topic", root / "archive" / "moved")
    assert watcher.changes().unknown
    # The moved folder's watches now carry its new name.
    (root / "archive" / "moved" / "x.html").write_text("y")
    assert watcher.changes().paths == {"archive/moved/x.html"}
    (root / "archive" / "moved" / "x.html").unlink()
    assert watcher.changes().paths == {"archive/moved/x.html"}
    (root / "archive" / "moved").rmdir()
    assert watcher.changes().unknown
    (root / "projects").mkdir()  # a memory folder appearing at the root
    assert watcher.changes().unknown


def test_rule_files_and_many_paths_are_unknown(watched: tuple[Path, TreeWatcher]) -> None:
    from memhtml.store.watch import MAX_PATHS

    root, watcher = watched
    (root / ".gitignore").write_text("areas/inbox/secret*\n")
    assert watcher.changes().unknown
    (root / "areas" / ".gitattributes").write_text("*.html text\n")
    assert watcher.changes().unknown
    for i in range(MAX_PATHS):
        (root / "resources" / f"n{i}.html").write_text("n")
    assert len(watcher.changes().paths) == MAX_PATHS
    for i in range(MAX_PATHS + 1):
        (root / "resources" / f"n{i}.html").write_text("m")
    assert watcher.changes().unknown


def test_a_queue_overflow_is_unknown(watched: tuple[Path, TreeWatcher]) -> None:
    root, watcher = watched
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 200_000:
        pytest.skip(f"max_queued_events is {limit}: too many writes to overflow it here")
    a = os.open(root / "areas" / "inbox" / "a.html", os.O_WRONLY | os.O_APPEND)
    b = os.open(root / "resources" / "b.html", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        # Alternating files: consecutive identical events would be merged by the kernel.
        for _ in range(limit // 2 + 64):
            os.write(a, b"x")
            os.write(b, b"x")
    finally:
        os.close(a)
        os.close(b)
    assert watcher.changes().unknown  # only two paths, but events were lost
    assert not watcher.changes()


def test_a_closed_watcher_knows_nothing(watched: tuple[Path, TreeWatcher]) -> None:
    _, watcher = watched
    watcher.close()
    assert watcher.changes().unknown and watcher.drain() is True
