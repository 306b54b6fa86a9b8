"""A view of the working tree with a batch's pending changes laid over it.

Ops in one batch plan against this view, so a later op sees what an earlier
one wrote, moved or claimed, and nothing touches the disk until the whole
batch has planned cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memhtml.contracts.errors import PathNotFoundError
from memhtml.store.files import FileChange, resolve_inside


@dataclass
class TreeView:
    """The working tree plus pending writes, deletes and moves."""

    root: Path
    _overlay: dict[str, bytes | None] = field(default_factory=dict)
    _moves: dict[str, str] = field(default_factory=dict)  # new path -> old path
    _order: list[str] = field(default_factory=list)
    _resolved: dict[str, str] = field(default_factory=dict)  # realpath cache for this batch

    def exists(self, path: str) -> bool:
        """True when `path` holds a file in the view."""
        if path in self._overlay:
            return self._overlay[path] is not None
        target = resolve_inside(self.root, path, self._resolved)
        return target.is_file()

    def read(self, path: str) -> bytes:
        """The bytes at `path` in the view (PathNotFoundError when absent)."""
        if path in self._overlay:
            data = self._overlay[path]
            if data is None:
                raise PathNotFoundError(f"no memory at {path}")
            return data
        target = resolve_inside(self.root, path, self._resolved)
        if not target.is_file():
            raise PathNotFoundError(
                f"no memory at {path}", suggestions=["memhtml list", "memhtml search <words>"]
            )
        return target.read_bytes()

    def _touch(self, path: str) -> None:
        if path not in self._order:
            self._order.append(path)

    def write(self, path: str, data: bytes) -> None:
        """Pending write of `data` at `path`."""
        resolve_inside(self.root, path, self._resolved)
        self._overlay[path] = data
        self._touch(path)

    def move(self, old: str, new: str, data: bytes) -> None:
        """Pending move of `old` to `new` with new content."""
        resolve_inside(self.root, new, self._resolved)
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
            if (self.root / origin).is_file() and self._overlay.get(origin, b"") is None:
                moves[new] = origin
        handled = set(moves.values())
        out: list[FileChange] = []
        for path in self._order:
            data = self._overlay.get(path)
            if path in moves:
                out.append(FileChange(path, data, moved_from=moves[path]))
            elif path in handled:
                continue
            elif data is None and not (self.root / path).is_file():
                continue  # created and removed within the batch
            else:
                out.append(FileChange(path, data))
        return out

    @property
    def dirty(self) -> bool:
        """True when anything is pending."""
        return bool(self._order)
