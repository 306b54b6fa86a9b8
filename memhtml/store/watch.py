"""Knowing, without stat-ing every file, that the working tree has not changed.

A read must see the tree as it is now (the index follows uncommitted edits),
and `git status` answers that by stat-ing every tracked file, which at 10k
memories costs more than a warm search (docs/benchmarks.md, "Costs behind the
code").
A long-lived process (the MCP server) instead asks the kernel to report every
change under the memory folders (Linux inotify, one watch per directory):
while no event arrived since the last exact check, nothing changed, and the
check is skipped. Any event — a write, a rename, a new folder, a queue
overflow — sends the next read back to `git status`. This is the fsmonitor
idea git itself uses, without a daemon.

Events are drained *before* the exact check runs, so a change that lands
during the check leaves an event behind and the next read checks again: the
watcher can only cause an extra check, never a missed one. Where inotify is
unavailable (not Linux, watch limit reached) the watcher reports "changed"
every time, which is exactly the behaviour without it.

`changes()` also names what changed: the repo-relative paths of file events
(a write, a create, a delete, a rename's two sides, a chmod), so a reader can
check only those paths instead of the whole tree. It answers "unknown"
whenever the events cannot vouch for a finite set: a queue overflow, any
directory created, deleted or moved (files may have arrived before their
folder was watched), a memory folder appearing or going at the root, an
ignore or attributes file changing (that reclassifies paths nobody touched),
more than `MAX_PATHS` paths, or no watcher at all.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_IN_MODIFY: Final = 0x002
_IN_ATTRIB: Final = 0x004
_IN_CLOSE_WRITE: Final = 0x008
_IN_MOVED_FROM: Final = 0x040
_IN_MOVED_TO: Final = 0x080
_IN_CREATE: Final = 0x100
_IN_DELETE: Final = 0x200
_IN_DELETE_SELF: Final = 0x400
_IN_MOVE_SELF: Final = 0x800
_IN_Q_OVERFLOW: Final = 0x4000
_IN_IGNORED: Final = 0x8000
_IN_ISDIR: Final = 0x40000000
_IN_ONLYDIR: Final = 0x01000000
_IN_NONBLOCK: Final = 0o4000
_IN_CLOEXEC: Final = 0o2000000
_MASK: Final = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
)
_EVENT: Final = struct.Struct("iIII")
# Beyond this many named paths a drain is "unknown": checking the whole tree is
# then about as cheap as checking the paths one by one.
MAX_PATHS: Final = 256
# Files whose change reclassifies paths that were not touched (ignored or not,
# how content is converted): a change to one is "unknown".
_RULE_FILES: Final = frozenset({".gitignore", ".gitattributes"})


@dataclass(frozen=True)
class TreeChanges:
    """What changed under the watched folders since the last drain.

    `unknown` means the events cannot name a finite set (check everything);
    otherwise `paths` holds every repo-relative path an event touched (empty:
    nothing changed).
    """

    paths: frozenset[str] = frozenset()
    unknown: bool = False

    def __bool__(self) -> bool:
        return self.unknown or bool(self.paths)


UNKNOWN: Final = TreeChanges(unknown=True)


class TreeWatcher:
    """Tells whether anything under the watched folders changed since the last drain."""

    def __init__(self, root: Path, folders: Iterable[str]) -> None:
        self.root = root
        self.folders = tuple(f.strip("/") for f in folders)
        self._fd = -1
        self._dirs: dict[int, Path] = {}
        self._root_wd = -1
        self._libc: ctypes.CDLL | None = None
        self._start()

    @property
    def active(self) -> bool:
        """False when the kernel could not watch the tree (then every check is full)."""
        return self._fd >= 0

    def _start(self) -> None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        except (OSError, AttributeError):
            return
        if fd < 0:
            return
        self._libc, self._fd = libc, fd
        self._root_wd = self._add(self.root, recursive=False)
        for folder in self.folders:
            if (self.root / folder).is_dir():
                self._add(self.root / folder, recursive=True)
        if self._root_wd < 0:
            self.close()

    def _add(self, directory: Path, *, recursive: bool) -> int:
        if self._libc is None:
            return -1
        wd = int(
            self._libc.inotify_add_watch(self._fd, os.fsencode(directory), _MASK | _IN_ONLYDIR)
        )
        if wd < 0:
            if ctypes.get_errno() == errno.ENOSPC:  # the user's watch limit: give up watching
                self.close()
            return -1
        self._dirs[wd] = directory
        if recursive:
            try:
                children = [e for e in os.scandir(directory) if e.is_dir(follow_symlinks=False)]
            except OSError:
                children = []
            for child in children:
                self._add(Path(child.path), recursive=True)
        return wd

    def drain(self) -> bool:
        """Consume pending events; True when anything under the folders may have changed."""
        return bool(self.changes())

    def changes(self) -> TreeChanges:
        """Consume pending events: the paths they touched, or UNKNOWN (see the module doc)."""
        if not self.active:
            return UNKNOWN
        paths: set[str] = set()
        unknown = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self.close()
                return UNKNOWN
            if not data:
                break
            pos = 0
            while pos + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
                name = os.fsdecode(
                    data[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0")
                )
                pos += _EVENT.size + length
                path = self._event(wd, mask, name)
                if path is None:
                    unknown = True
                elif path:
                    paths.add(path)
        if unknown or len(paths) > MAX_PATHS:
            return UNKNOWN
        return TreeChanges(frozenset(paths))

    def _event(self, wd: int, mask: int, name: str) -> str | None:
        """One event: the path it touched, "" when it touched nothing we watch, None: unknown."""
        if mask & _IN_Q_OVERFLOW:
            return None
        if mask & _IN_IGNORED:  # a watched directory went away
            self._dirs.pop(wd, None)
            return None
        if wd == self._root_wd:
            # At the root only a memory folder appearing or going, or a rule file, matters.
            if name in self.folders:
                if mask & (_IN_CREATE | _IN_MOVED_TO) and mask & _IN_ISDIR:
                    self._add(self.root / name, recursive=True)
                return None
            return None if name in _RULE_FILES else ""
        parent = self._dirs.get(wd)
        if parent is None or not name:  # an unknown watch, or the directory itself
            return None
        if mask & (_IN_ISDIR | _IN_DELETE_SELF | _IN_MOVE_SELF):
            # A directory created, moved or deleted: files in it may have come or gone
            # without an event of their own. Watching a moved-in folder again also
            # renames the watches of its subtree (same inodes, same watch ids).
            if mask & _IN_ISDIR and mask & (_IN_CREATE | _IN_MOVED_TO):
                self._add(parent / name, recursive=True)
            return None
        if name in _RULE_FILES:
            return None
        return (parent / name).relative_to(self.root).as_posix()

    def __del__(self) -> None:
        # An unclosed reader (a Corpus never closed) must not hold an inotify
        # instance, a per-user resource (128 by default), past its life.
        self.close()

    def close(self) -> None:
        """Stop watching."""
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._dirs.clear()
