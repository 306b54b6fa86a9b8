"""Atomic working-tree edits with an undo record.

A write door stages its whole change set here first: every file is written
through a temp file and `os.replace`, moves are renames, and the undo record
restores the exact previous bytes if the commit that follows fails.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import InvalidPathError, StorageError
from memhtml.contracts.paths import is_memory_path


@dataclass(frozen=True)
class FileChange:
    """One path's new content (None deletes); `moved_from` makes it a rename."""

    path: str
    content: bytes | None
    moved_from: str | None = None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# A new file gets the mode `open()` would give it (0666 less the umask), as a
# git checkout does; mkstemp's private 0600 would differ between clones.
_NEW_FILE_MODE: Final = 0o666 & ~_umask()


def write_atomic(target: Path, data: bytes) -> None:
    """Write `data` to `target` via a temp file in the same directory and a rename.

    The file keeps its mode when it existed, and gets the ordinary mode for a
    new file (0666 less the umask) otherwise.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o777
    except OSError:
        mode = _NEW_FILE_MODE
    fd, tmp = tempfile.mkstemp(prefix=".memhtml-", suffix=".tmp", dir=target.parent)
    try:
        # No fsync: the commit is the durable record, and git itself does not
        # fsync by default; the rename keeps readers from seeing a torn file.
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def resolve_inside(root: Path, rel: str, cache: dict[str, str] | None = None) -> Path:
    """`root/rel`, refusing anything (symlinks included) that resolves outside the root.

    `cache` (one per batch) remembers resolved directories, so a batch of
    thousands of paths pays the realpath walk once per directory.
    """
    candidate = root / rel
    real_root = _resolved(str(root), cache)
    parent, _, name = str(candidate).rpartition("/")
    real_parent = _resolved(parent, cache)
    resolved = os.path.join(real_parent, name)
    if os.path.islink(resolved):
        resolved = os.path.realpath(resolved)
    if resolved != real_root and not resolved.startswith(real_root + os.sep):
        raise InvalidPathError(f"path {rel!r} resolves outside the memory root")
    inside = resolved[len(real_root) + 1 :]
    if inside != rel and not is_memory_path(inside):
        # An in-tree symlink to `.git/config` or another non-memory file is not a memory.
        raise InvalidPathError(f"path {rel!r} is a link to {inside!r}, which is not a memory file")
    return candidate


def _resolved(path: str, cache: dict[str, str] | None) -> str:
    if cache is None:
        return os.path.realpath(path)
    hit = cache.get(path)
    if hit is None:
        hit = cache[path] = os.path.realpath(path)
    return hit


@dataclass
class Undo:
    """What to put back if the commit after a change set fails."""

    previous: dict[str, bytes | None] = field(default_factory=dict)

    def restore(self, root: Path) -> None:
        """Put every touched path back to its previous bytes (or absence)."""
        for rel, data in self.previous.items():
            target = root / rel
            if data is None:
                target.unlink(missing_ok=True)
                prune_empty_dirs(root, target.parent)
            else:
                write_atomic(target, data)


def prune_empty_dirs(root: Path, directory: Path) -> None:
    """Remove `directory` and its parents up to `root` while they are empty."""
    while directory != root and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def apply_changes(root: Path, changes: Sequence[FileChange]) -> tuple[list[str], Undo]:
    """Apply a change set to the working tree; the touched paths and how to undo them."""
    undo = Undo()
    touched: list[str] = []

    resolved: dict[str, str] = {}

    def remember(rel: str) -> Path:
        target = resolve_inside(root, rel, resolved)
        if rel not in undo.previous:
            undo.previous[rel] = target.read_bytes() if target.is_file() else None
        if rel not in touched:
            touched.append(rel)
        return target

    try:
        for change in changes:
            if change.moved_from is not None:
                source = remember(change.moved_from)
                target = remember(change.path)
                if not source.is_file():
                    raise StorageError(f"cannot move {change.moved_from}: not a file")
                data = change.content if change.content is not None else source.read_bytes()
                write_atomic(target, data)
                source.unlink()
                prune_empty_dirs(root, source.parent)
            elif change.content is None:
                target = remember(change.path)
                target.unlink(missing_ok=True)
                prune_empty_dirs(root, target.parent)
            else:
                target = remember(change.path)
                write_atomic(target, change.content)
    except BaseException:
        undo.restore(root)
        raise
    return touched, undo
