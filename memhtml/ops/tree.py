"""A view of the working tree with a batch's pending changes laid over it.

Ops in one batch plan against this view, so a later op sees what an earlier
one wrote, moved or claimed, and nothing touches the disk until the whole
batch has planned cleanly.

With a `base` (a commit's tree, `memhtml.store.branch.CommitTree`) the view
reads that commit instead of the working tree: sleep plans on its branch tip
while the user's files stay untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memhtml.contracts.errors import InvalidPathError, PathNotFoundError
from memhtml.store.files import FileChange, is_file_inside, resolve_inside

if TYPE_CHECKING:
    from memhtml.store.branch import CommitTree


def _tree_path(path: str) -> str:
    """A repository-relative path a commit can hold (no escape, never under .git)."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise InvalidPathError(f"path {path!r} is not a relative path inside the repository")
    if parts[0] == ".git":
        raise InvalidPathError(f"path {path!r} is inside .git")
    return path


@dataclass
class TreeView:
    """The working tree plus pending writes, deletes and moves."""

    root: Path
    _overlay: dict[str, bytes | None] = field(default_factory=dict)
    _moves: dict[str, str] = field(default_factory=dict)  # new path -> old path
    _order: dict[str, None] = field(default_factory=dict)  # first-touched order (a set)
    _resolved: dict[str, str] = field(default_factory=dict)  # realpath cache for this batch
    _inside: set[str] = field(default_factory=set)  # paths found inside the root this batch
    base: CommitTree | None = None  # read this commit instead of the working tree
    # Told (what, path, moved_from) before each pending write, delete or move, while the
    # view still holds the old bytes: sleep records which decision changed which file.
    observer: Callable[[str, str, str | None], None] | None = None

    def _check(self, path: str) -> None:
        if self.base is not None:
            _tree_path(path)
        elif path not in self._inside:
            resolve_inside(self.root, path, self._resolved)
            self._inside.add(path)

    def _committed(self, path: str) -> bool:
        """True when the layer under the overlay (working tree or base commit) holds `path`."""
        return self.base.has(path) if self.base is not None else (self.root / path).is_file()

    def exists(self, path: str) -> bool:
        """True when `path` holds a file in the view."""
        if path in self._overlay:
            return self._overlay[path] is not None
        if self.base is not None:
            return self.base.has(path)
        found = is_file_inside(self.root, path, self._resolved)
        self._inside.add(path)  # it resolved inside the root (else it raised)
        return found

    def read(self, path: str) -> bytes:
        """The bytes at `path` in the view (PathNotFoundError when absent)."""
        if path in self._overlay:
            data = self._overlay[path]
            if data is None:
                raise PathNotFoundError(f"no memory at {path}")
            return data
        if self.base is not None:
            held = self.base.get(path)
            if held is None:
                raise PathNotFoundError(f"no file at {path} in {self.base.commit[:12]}")
            return held
        target = resolve_inside(self.root, path, self._resolved)
        if not target.is_file():
            raise PathNotFoundError(
                f"no memory at {path}", suggestions=["memhtml list", "memhtml search <words>"]
            )
        return target.read_bytes()

    def _touch(self, path: str) -> None:
        self._order.setdefault(path)

    def write(self, path: str, data: bytes) -> None:
        """Pending write of `data` at `path`."""
        self._check(path)
        if self.observer is not None:
            self.observer("write", path, None)
        self._overlay[path] = data
        self._touch(path)

    def delete(self, path: str) -> None:
        """Pending removal of `path` (a generated file that no longer belongs in the tree)."""
        self._check(path)
        if self.observer is not None:
            self.observer("delete", path, None)
        self._overlay[path] = None
        self._touch(path)

    def move(self, old: str, new: str, data: bytes) -> None:
        """Pending move of `old` to `new` with new content."""
        self._check(new)
        if self.observer is not None:
            self.observer("move", new, old)
        origin = self._moves.pop(old, old)
        self._overlay[old] = None
        self._overlay[new] = data
        self._moves[new] = origin
        self._touch(old)
        self._touch(new)

    def changes(self) -> list[FileChange]:
        """The pending change set, in first-touched order, moves kept as moves."""
        moves: dict[str, str] = {}
        for new, origin in self._moves.items():
            if self._committed(origin) and self._overlay.get(origin, b"") is None:
                moves[new] = origin
        handled = set(moves.values())
        out: list[FileChange] = []
        for path in self._order:
            data = self._overlay.get(path)
            if path in moves:
                out.append(FileChange(path, data, moved_from=moves[path]))
            elif path in handled:
                continue
            elif data is None and not self._committed(path):
                continue  # created and removed within the batch
            else:
                out.append(FileChange(path, data))
        return out

    def staged(self, path: str) -> bool:
        """True when a pending write, delete or move holds `path`."""
        return path in self._overlay

    def paths(self, prefix: str = "") -> list[str]:
        """Every file under `prefix` in the view, sorted (on the working tree: a walk that
        leaves out `.git` and `.memhtml`)."""
        if self.base is None:
            below = [
                f.relative_to(self.root).as_posix()
                for f in self.root.rglob("*")
                if f.is_file() and f.relative_to(self.root).parts[0] not in (".git", ".memhtml")
            ]
            under = [p for p in below if p.startswith(prefix)]
        else:
            under = list(self.base.paths(prefix))
        held = {p for p in under if self._overlay.get(p, b"") is not None}
        held |= {p for p, d in self._overlay.items() if d is not None and p.startswith(prefix)}
        return sorted(held)

    def prefetch(self, paths: Iterable[str]) -> None:
        """Warm the reads of many base-commit files in one round trip (no-op otherwise)."""
        if self.base is not None:
            self.base.prefetch(p for p in paths if p not in self._overlay)

    @property
    def dirty(self) -> bool:
        """True when anything is pending."""
        return bool(self._order)
