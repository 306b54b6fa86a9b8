"""A plain change set of many files in several folders is written on two threads; a
failure anywhere leaves the tree exactly as it was."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from memhtml.store import files
from memhtml.store.files import FileChange, apply_changes


def _changes(n: int) -> list[FileChange]:
    return [FileChange(f"areas/f{i % 4}/m{i}.html", f"<p>{i}</p>".encode()) for i in range(n)]


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "m"
    (base / "areas" / "f0").mkdir(parents=True)
    (base / "areas" / "f0" / "old.html").write_bytes(b"old")
    return base


def _writing_threads(monkeypatch: pytest.MonkeyPatch, *, parallel_from: int) -> set[int]:
    """Parallel writes from `parallel_from` files on; the ids of the threads that write files."""
    monkeypatch.setattr(files, "PARALLEL_WRITES_MIN", parallel_from)
    threads: set[int] = set()
    real = files.write_atomic

    def watched(target: Path, data: bytes, **kw: object) -> None:
        threads.add(threading.get_ident())
        real(target, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "write_atomic", watched)
    return threads


def test_many_files_in_several_folders_land_with_the_ordinary_mode(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = _writing_threads(monkeypatch, parallel_from=4)
    changes = _changes(20)
    touched, undo = apply_changes(root, changes)
    if files._usable_cpus() > 1:  # written on the pool's threads, not this one
        assert threads and threading.get_ident() not in threads
    assert touched == [c.path for c in changes]
    tree = _tree(root)
    for c in changes:
        assert tree[c.path] == c.content
        mode = stat.S_IMODE((root / c.path).stat().st_mode)
        assert mode == files._NEW_FILE_MODE
    assert not list(root.rglob(".memhtml-*.tmp"))
    assert set(undo.previous.values()) == {None}


def test_a_failed_file_puts_every_folder_back(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "PARALLEL_WRITES_MIN", 4)
    before = _tree(root)
    real = files.write_atomic

    def failing(target: Path, data: bytes, **kw: object) -> None:
        if target.name == "m13.html":
            raise OSError(28, "No space left on device")
        real(target, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "write_atomic", failing)
    changes = [*_changes(20), FileChange("areas/f0/old.html", b"new")]
    with pytest.raises(OSError, match="No space"):
        apply_changes(root, changes)
    assert _tree(root) == before
    assert sorted(p.name for p in (root / "areas").iterdir()) == ["f0"]


def test_one_folder_or_a_move_is_written_in_order(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = _writing_threads(monkeypatch, parallel_from=2)
    one_folder = [FileChange(f"areas/f0/n{i}.html", b"x") for i in range(6)]
    apply_changes(root, one_folder)
    moved = [FileChange("archive/2026/areas/f0/old.html", b"gone", moved_from="areas/f0/old.html")]
    apply_changes(root, [*_changes(6), *moved])
    assert threads == {threading.get_ident()}
    assert (root / "archive/2026/areas/f0/old.html").read_bytes() == b"gone"
    assert os.path.exists(root / "areas/f0/n5.html")
