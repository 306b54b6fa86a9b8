"""A watching process checks only the paths the kernel names, and ends where `git status` would.

Two copies of one memory root receive the same hand edits. The watching
corpus (as the MCP server or a library loop) catches up through the scoped
check (memhtml.index.scoped); the other runs the full `git status` path. After
every step their indexes must agree row for row, and the watching corpus must
have taken the path the step calls for (scoped, or the full fallback).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import memhtml
from tests.index.test_indexer import snapshot

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")

NOW = "2026-01-02T03:04:05Z"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


class Twins:
    """The watched root and its unwatched twin, edited alike."""

    def __init__(self, tmp: Path, repo: Path) -> None:
        with memhtml.open(repo, embedder="fake", now=NOW) as seed:
            self.paths = [
                seed.write(title=f"fact {w}", claim=f"The {w} service listens on port {i}.")["path"]
                for i, w in enumerate(("alpha", "beta", "gamma", "delta"))
            ]
        self.twin = tmp / "twin"
        shutil.copytree(repo, self.twin, symlinks=True)
        self.root = repo
        self.watched: Any = memhtml.open(repo, embedder="fake", now=NOW)
        assert self.watched.watch_tree()
        self.full: Any = memhtml.open(self.twin, embedder="fake", now=NOW)
        assert self.watched.catch_up() and self.full.catch_up()  # the first exact check

    def both(self, change: Callable[[Path], object]) -> None:
        for root in (self.root, self.twin):
            change(root)

    def check(self, expect: str, *, via: str = "catch_up") -> dict[str, int]:
        """Catch both up; the indexes agree; the watched one took the `expect` path."""
        before = self.watched.freshness_checks
        if via == "catch_up":
            assert self.watched.catch_up() is True
        elif via == "update":
            self.watched.index.update()
        else:
            assert self.watched.search(via).index_fresh
        assert self.full.catch_up() is True
        after = self.watched.freshness_checks
        taken = {k: after[k] - before[k] for k in after}
        assert taken[expect] >= 1, taken
        if expect != "full":
            assert taken["full"] == 0, taken
        assert snapshot(self.watched.conn) == snapshot(self.full.conn)
        assert self.watched.index.status()["index_fresh"]
        return taken

    def close(self) -> None:
        self.watched.close()
        self.full.close()


@pytest.fixture
def twins(tmp_path: Path, repo: Path) -> Iterator[Twins]:
    t = Twins(tmp_path, repo)
    yield t
    t.close()


def _replace(path: str, old: str, new: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        target = root / path
        target.write_text(target.read_text().replace(old, new))

    return change


def test_each_kind_of_hand_edit_is_followed_through_the_scoped_check(twins: Twins) -> None:
    a, b, c, d = twins.paths
    originals = {p: (twins.root / p).read_bytes() for p in twins.paths}

    def restore(path: str) -> Callable[[Path], None]:
        return lambda root: (root / path).write_bytes(originals[path])

    # Nothing changed: the watcher vouches, no check at all.
    twins.check("skipped")
    # An edit, and its revert to the committed bytes.
    twins.both(_replace(a, "port 0", "port 8080"))
    twins.check("scoped")
    assert twins.watched.conn.execute("SELECT path FROM worktree_overlay").fetchall() == [(a,)]
    twins.both(restore(a))
    twins.check("scoped")
    # A delete, and the file restored.
    twins.both(lambda root: (root / b).unlink())
    twins.check("scoped")
    assert twins.watched.conn.execute("SELECT 1 FROM files WHERE path = ?", (b,)).fetchone() is None
    twins.both(restore(b))
    twins.check("scoped")
    # Unparseable, then repaired.
    twins.both(_replace(c, "<mark", "<broken"))
    twins.check("scoped")
    assert twins.watched.conn.execute("SELECT 1 FROM skipped_files WHERE path = ?", (c,)).fetchone()
    twins.both(restore(c))
    twins.check("scoped")
    # A new untracked memory, and a duplicate of one that is committed.
    new = a.rsplit("/", 1)[0] + "/hand-written.html"
    twins.both(lambda root: (root / new).write_bytes(originals[a].replace(b"port 0", b"port 7")))
    twins.check("scoped")
    copy = a.rsplit("/", 1)[0] + "/zz-copy.html"
    twins.both(lambda root: (root / copy).write_bytes(originals[d]))
    twins.check("scoped")
    # A rename by hand (both sides named), then an executable bit (a mode change).
    moved = d.rsplit("/", 1)[0] + "/renamed-by-hand.html"
    twins.both(lambda root: os.rename(root / d, root / moved))
    twins.check("scoped")
    twins.both(lambda root: os.chmod(root / a, 0o755))
    twins.check("scoped")
    twins.both(lambda root: os.chmod(root / a, 0o644))
    # Through `index update` and through a search too.
    twins.both(_replace(a, "port 0", "port 9"))
    twins.check("scoped", via="update")
    twins.both(restore(a))
    twins.check("scoped", via="service port")
    # In the end both equal a fresh rebuild of HEAD plus the working tree.
    twins.watched.index.rebuild(embed=True)
    rebuilt = snapshot(twins.watched.conn)
    assert rebuilt == snapshot(twins.full.conn)


def test_ignored_and_staged_paths_match_git_status(twins: Twins) -> None:
    a = twins.paths[0]
    folder = a.rsplit("/", 1)[0]
    # A rule file changes what is ignored: the watcher cannot vouch, so a full check.
    twins.both(lambda root: (root / folder / ".gitignore").write_text("scratch-*.html\n"))
    twins.check("full")
    # An ignored new memory is not dirty; an unignored one is.
    body = (twins.root / a).read_bytes().replace(b"port 0", b"port 4242")
    twins.both(lambda root: (root / folder / "scratch-1.html").write_bytes(body))
    twins.check("scoped")
    assert not twins.watched.conn.execute(
        "SELECT 1 FROM files WHERE path = ?", (f"{folder}/scratch-1.html",)
    ).fetchone()
    # Staging replaces .git/index: full check; then reverting the worktree leaves the
    # path dirty (staged), which the scoped check must still see.
    original = (twins.root / a).read_bytes()
    twins.both(_replace(a, "port 0", "port 31337"))
    twins.both(lambda root: git(root, "add", a))
    twins.check("full")
    twins.both(lambda root: (root / a).write_bytes(original))
    twins.check("scoped")
    assert twins.watched.conn.execute(
        "SELECT path FROM worktree_overlay WHERE path = ?", (a,)
    ).fetchall() == [(a,)]


def test_what_the_watcher_cannot_vouch_for_falls_back_to_git_status(twins: Twins) -> None:
    a, b, *_ = twins.paths
    # A hand commit moves HEAD.
    twins.both(_replace(a, "port 0", "port 1"))
    twins.both(lambda root: git(root, "commit", "-qam", "hand"))
    twins.check("full")
    # A new folder: files may have landed before it was watched.
    fresh = "resources/brand-new/x.html"
    body = (twins.root / b).read_bytes().replace(b"port 1", b"port 11")
    twins.both(lambda root: (root / "resources" / "brand-new").mkdir(parents=True))
    twins.both(lambda root: (root / fresh).write_bytes(body))
    twins.check("full")
    # A lost event queue.
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit <= 200_000:
        target = twins.root / b
        other = twins.root / fresh
        data, spare = target.read_bytes(), other.read_bytes()
        fa, fb = os.open(target, os.O_WRONLY), os.open(other, os.O_WRONLY)
        try:
            for _ in range(limit // 2 + 64):
                os.pwrite(fa, data[:1], 0)
                os.pwrite(fb, spare[:1], 0)
        finally:
            os.close(fa)
            os.close(fb)
        twins.check("full")
    # Then quiet again: the next edit is scoped once more.
    twins.both(_replace(b, "port 1", "port 12"))
    twins.check("scoped")
