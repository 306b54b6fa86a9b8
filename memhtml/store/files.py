"""Atomic working-tree edits with an undo record.

A write door stages its whole change set here first: every file is written
through a temp file and `os.replace`, moves are renames, and the undo record
restores the exact previous bytes if the commit that follows fails.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, NamedTuple

from memhtml.contracts.errors import InvalidPathError, StorageError
from memhtml.contracts.paths import is_memory_path
from memhtml.store import faults


class FileChange(NamedTuple):  # not a frozen dataclass: it would `exec` at a cold start
    """One path's new content (None deletes); `moved_from` makes it a rename."""

    path: str
    content: bytes | None
    moved_from: str | None = None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# A plain batch of at least this many files, in two folders or more, is written
# on WRITE_THREADS threads (see _write_files).
PARALLEL_WRITES_MIN: Final = 64
WRITE_THREADS: Final = 2
# A new file gets the mode `open()` would give it (0666 less the umask), as a
# git checkout does; mkstemp's private 0600 would differ between clones.
_NEW_FILE_MODE: Final = 0o666 & ~_umask()


def write_atomic(
    target: Path, data: bytes, *, existed: bool | None = None, dirs: set[str] | None = None
) -> None:
    """Write `data` to `target` via a temp file in the same directory and a rename.

    The file keeps its mode when it existed, and gets the ordinary mode for a
    new file (0666 less the umask) otherwise. A caller writing many files may
    say whether the target `existed` (saving a stat) and pass a set of `dirs`
    known to exist (saving a mkdir each).
    """
    parent = target.parent
    if dirs is None or str(parent) not in dirs:
        if faults.active() and not parent.is_dir() and faults.step(f"mkdir {parent.name}"):
            raise faults.enospc(str(parent))
        parent.mkdir(parents=True, exist_ok=True)
        if dirs is not None:
            dirs.add(str(parent))
    mode = _NEW_FILE_MODE
    if existed is not False:
        with contextlib.suppress(OSError):
            mode = target.stat().st_mode & 0o777
    # An interrupt (SIGTERM raised as an exception, SIGINT) may land between any two
    # steps: the temp file's name is known before it exists and the descriptor is
    # forgotten before it is closed, so the cleanup removes what was made and never
    # closes a descriptor twice (it could be another thread's by then).
    names: list[str] = []
    fd = -1
    try:
        fd = _temp_file(parent, names)
        # No fsync: the commit is the durable record, and git itself does not
        # fsync by default; the rename keeps readers from seeing a torn file.
        if mode != _NEW_FILE_MODE:
            os.fchmod(fd, mode)
        if faults.step(f"write {parent.name}/{target.name}"):
            raise faults.enospc(names[-1])  # the test seam: as a full disk fails the write below
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fd, closing = -1, fd
        os.close(closing)
        os.replace(names[-1], target)
    except BaseException:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        for name in names:
            Path(name).unlink(missing_ok=True)
        raise


_TEMP_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_temp_serial = itertools.count()


def _temp_file(directory: Path, names: list[str]) -> int:
    """A new `.memhtml-*.tmp` file in `directory` (the recovery sweep's pattern), opened for
    writing with the new-file mode; the name is unique by pid and a counter, and is in
    `names` (last) before the file exists, so an interrupt can never orphan it."""
    for _ in range(100):
        name = f"{directory}/.memhtml-{os.getpid()}-{next(_temp_serial)}.tmp"
        names.append(name)
        try:
            return os.open(name, _TEMP_FLAGS, 0o666)
        except FileExistsError:  # left by a killed process that had our pid: not ours
            names.remove(name)
            continue
    import tempfile  # a hundred names taken: rare enough to load it only then

    fd, name = tempfile.mkstemp(prefix=".memhtml-", suffix=".tmp", dir=directory)
    names.append(name)
    os.fchmod(fd, _NEW_FILE_MODE)
    return fd


def resolve_inside(root: Path, rel: str, cache: dict[str, str] | None = None) -> Path:
    """`root/rel`, refusing anything (symlinks included) that resolves outside the root.

    `cache` (one per batch) remembers resolved directories, so a batch of
    thousands of paths pays the realpath walk once per directory.
    """
    return _inside(root, rel, cache)[0]


def is_file_inside(root: Path, rel: str, cache: dict[str, str] | None = None) -> bool:
    """`resolve_inside(root, rel, cache).is_file()`, with one `lstat` unless `rel` is a link."""
    resolved, st = _locate(root, rel, cache)
    return _is_file(resolved, st)


def _is_file(resolved: str, st: os.stat_result | None) -> bool:
    if st is None:
        return False
    if stat.S_ISLNK(st.st_mode):
        return os.path.isfile(resolved)
    return stat.S_ISREG(st.st_mode)


def _inside(
    root: Path, rel: str, cache: dict[str, str] | None
) -> tuple[Path, str, os.stat_result | None]:
    """(root/rel, its resolved path, the lstat of its last component or None when absent)."""
    return (root / rel, *_locate(root, rel, cache))


def _joined(root: Path, rel: str) -> str:
    """`str(root / rel)`, without building a Path when `rel` is already normal."""
    normal = (
        rel not in ("", ".")
        and not rel.startswith(("/", "./"))
        and not rel.endswith(("/", "/."))
        and "//" not in rel
        and "/./" not in rel
    )
    return f"{root}/{rel}" if normal else str(root / rel)


def _locate(
    root: Path, rel: str, cache: dict[str, str] | None
) -> tuple[str, os.stat_result | None]:
    """(the resolved path of root/rel, the lstat of its last component or None when absent);
    InvalidPathError when it resolves outside the root or links to a non-memory file."""
    real_root = _resolved(str(root), cache)
    parent, _, name = _joined(root, rel).rpartition("/")
    real_parent = _resolved(parent, cache)
    resolved = os.path.join(real_parent, name)
    try:
        st: os.stat_result | None = os.lstat(resolved)
    except (OSError, ValueError):
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        resolved = os.path.realpath(resolved)
    if resolved != real_root and not resolved.startswith(real_root + os.sep):
        raise InvalidPathError(f"path {rel!r} resolves outside the memory root")
    inside = resolved[len(real_root) + 1 :]
    if inside != rel and not is_memory_path(inside):
        # An in-tree symlink to `.git/config` or another non-memory file is not a memory.
        raise InvalidPathError(f"path {rel!r} is a link to {inside!r}, which is not a memory file")
    return resolved, st


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
    restored: bool = False  # every path is back (a restore the full disk refused is not)

    def restore(self, root: Path) -> None:
        """Put every touched path back to its previous bytes (or absence).

        Removals go first: they free the space that putting bytes back may need."""
        ordered = sorted(self.previous.items(), key=lambda item: item[1] is not None)
        for rel, data in ordered:
            target = root / rel
            if data is None:
                target.unlink(missing_ok=True)
                prune_empty_dirs(root, target.parent)
            else:
                write_atomic(target, data)
        self.restored = True


def prune_empty_dirs(root: Path, directory: Path) -> None:
    """Remove `directory` and its parents up to `root` while they are empty."""
    while directory != root and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def apply_changes(
    root: Path, changes: Sequence[FileChange], undo: Undo | None = None
) -> tuple[list[str], Undo]:
    """Apply a change set to the working tree; the touched paths and how to undo them.

    On a failure the tree is put back before the exception propagates; `undo`
    (given by the caller) then says whether that restore completed.
    """
    undo = Undo() if undo is None else undo
    touched: dict[str, None] = {}
    resolved: dict[str, str] = {}
    dirs: set[str] = set()

    present: dict[str, bool] = {}  # path -> something (a file, a link, ...) was there

    def remember(rel: str) -> Path:
        target, real, st = _inside(root, rel, resolved)
        if rel not in undo.previous:
            undo.previous[rel] = target.read_bytes() if _is_file(real, st) else None
            present[rel] = st is not None
        touched[rel] = None
        return target

    try:
        if _plain_writes(changes):
            jobs = []
            for change in changes:
                assert change.content is not None
                target = remember(change.path)
                existed = present[change.path] or undo.previous[change.path] is not None
                jobs.append((target, change.content, existed))
            _write_files(jobs)
            return list(touched), undo
        for change in changes:
            if change.moved_from is not None:
                source = remember(change.moved_from)
                target = remember(change.path)
                if not source.is_file():
                    raise StorageError(f"cannot move {change.moved_from}: not a file")
                data = change.content if change.content is not None else source.read_bytes()
                write_atomic(target, data, dirs=dirs)
                source.unlink()
                prune_empty_dirs(root, source.parent)
                dirs.clear()  # a pruned folder must be made again
            elif change.content is None:
                target = remember(change.path)
                target.unlink(missing_ok=True)
                prune_empty_dirs(root, target.parent)
                dirs.clear()
            else:
                target = remember(change.path)
                existed = present[change.path] or undo.previous[change.path] is not None
                write_atomic(target, change.content, existed=existed, dirs=dirs)
    except BaseException:
        undo.restore(root)
        raise
    return list(touched), undo


def _plain_writes(changes: Sequence[FileChange]) -> bool:
    """True when every change writes content at its own path (no move, no removal)."""
    paths = {c.path for c in changes}
    return len(paths) == len(changes) and all(
        c.moved_from is None and c.content is not None for c in changes
    )


def _write_files(jobs: Sequence[tuple[Path, bytes, bool]]) -> None:
    """Write (target, data, existed) jobs; many files in several folders on two threads.

    Creating a file is kernel work (the inode, the directory entry) that runs
    outside the interpreter lock, and folders do not contend with each other,
    so each thread takes whole folders. A failure or an interrupt stops both
    threads before it propagates: nothing is written after the caller's undo.
    """
    groups: dict[Path, list[tuple[Path, bytes, bool]]] = {}
    for job in jobs:
        groups.setdefault(job[0].parent, []).append(job)
    if len(jobs) < PARALLEL_WRITES_MIN or len(groups) < 2 or _usable_cpus() < 2:
        dirs: set[str] = set()
        for target, data, existed in jobs:
            write_atomic(target, data, existed=existed, dirs=dirs)
        return
    from concurrent.futures import ThreadPoolExecutor

    stop = threading.Event()

    def write_folder(folder: Path, group: list[tuple[Path, bytes, bool]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        made = {str(folder)}
        for target, data, existed in group:
            if stop.is_set():
                return
            write_atomic(target, data, existed=existed, dirs=made)

    pool = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="memhtml-write")
    try:
        ordered = sorted(groups.items(), key=lambda item: -len(item[1]))  # big folders first
        futures = [pool.submit(write_folder, folder, group) for folder, group in ordered]
        for future in futures:
            future.result()
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True)


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
