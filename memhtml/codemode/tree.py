"""The corpus as one commit's tree, read through git's object store.

A script sees the tree of one pinned commit: `--sha`, else HEAD resolved to
a sha before the script starts. Nothing reads the working tree, so an
uncommitted edit is invisible, a ref that moves afterwards changes nothing,
and gitignored files (the index and state databases) do not exist in it.
Bytes come through the store's long-lived `git cat-file --batch` reader
(`BlobReader`); the listing is one `ls-tree -r -l`, with every blob's size,
so a file is measured before any of it is read.

Guest paths are resolved lexically here, on the host: `..` cannot climb out
of the mount, an absolute host path names nothing, and a symbolic link is an
entry that is never followed (reading one is `ELOOP`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from memhtml.codemode.limits import CORPUS_MOUNT
from memhtml.contracts.errors import InvalidFlagError, InvalidMemoryError
from memhtml.store.branch import BlobReader
from memhtml.store.git import Git

GUEST_CWD: Final = "/workspace"
SYMLINK_MODE: Final = "120000"
Kind = Literal["file", "symlink", "dir"]
# Longer guest paths are ENAMETOOLONG, as Linux's PATH_MAX makes them under Node.
PATH_MAX: Final = 4096
# Blobs the reader may hold for one execution before it drops them; files read
# ahead after a miss (in path order), and the bytes they may add.
CACHE_BYTES: Final = 32 * 1024 * 1024
READ_AHEAD: Final = 128
READ_AHEAD_BYTES: Final = 1024 * 1024

# errno values as Node reports them (negative), for the guest's error objects.
ERRNO: Final[dict[str, int]] = {
    "ENOENT": -2,
    "EINVAL": -22,
    "ENOTDIR": -20,
    "EISDIR": -21,
    "EROFS": -30,
    "ELOOP": -40,
    "ENAMETOOLONG": -36,
    "EIO": -5,
}
_MESSAGES: Final[dict[str, str]] = {
    "ENOENT": "no such file or directory",
    "EINVAL": "invalid argument",
    "ENOTDIR": "not a directory",
    "EISDIR": "illegal operation on a directory",
    "EROFS": "read-only file system",
    "ELOOP": "too many symbolic links encountered (links are not followed)",
    "ENAMETOOLONG": "name too long",
    "EIO": "i/o error",
}


class GuestFsError(Exception):
    """A filesystem refusal the guest sees as a Node-style error (`code`, `errno`, `path`)."""

    def __init__(self, code: str, syscall: str, path: str) -> None:
        super().__init__(f"{code}: {_MESSAGES.get(code, code)}, {syscall} '{path}'")
        self.code = code
        self.syscall = syscall
        self.path = path

    def to_data(self) -> dict[str, Any]:
        """What the guest turns into its error object."""
        return {
            "code": self.code,
            "errno": ERRNO.get(self.code, -1),
            "syscall": self.syscall,
            "path": self.path,
            "message": str(self),
        }


def normalize(path: str) -> str:
    """An absolute, lexically resolved guest path (`..` never climbs above `/`)."""
    if path.startswith("/") and "//" not in path and "/." not in path and not path.endswith("/"):
        return path  # already normal: the common case, a path the guest built from a listing
    if not path.startswith("/"):
        path = f"{GUEST_CWD}/{path}"
    parts: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts:
                parts.pop()
            continue
        parts.append(segment)
    return "/" + "/".join(parts)


def tree_path(guest_path: str, syscall: str) -> str:
    """The tree path a guest path names under the mount ("" for the mount itself).

    Anything outside the mount, a NUL byte, or a non-string is ENOENT/EINVAL:
    the host filesystem is not there to be named.
    """
    if not isinstance(guest_path, str) or "\x00" in guest_path:
        raise GuestFsError("EINVAL", syscall, str(guest_path)[:PATH_MAX])
    if len(guest_path) > PATH_MAX:
        raise GuestFsError("ENAMETOOLONG", syscall, guest_path[:PATH_MAX] + "...")
    resolved = normalize(guest_path)
    if resolved == CORPUS_MOUNT:
        return ""
    if resolved.startswith(CORPUS_MOUNT + "/"):
        return resolved[len(CORPUS_MOUNT) + 1 :]
    raise GuestFsError("ENOENT", syscall, guest_path)


class FileTooLargeError(Exception):
    """A file of the tree is larger than a read may bring in (its bytes are never read)."""

    def __init__(self, path: str, size: int) -> None:
        super().__init__(f"{path} is {size} bytes")
        self.path = path
        self.size = size


@dataclass
class PinnedTree:
    """One commit's tree: its regular files, its symbolic links and its directories.

    The listing carries each blob's size (`ls-tree -l`), so a file is measured
    before a byte of it is read: a read over its bound is refused, `size` never
    reads the blob, and the read-ahead skips large files. The blobs held after
    reading are bounded too (CACHE_BYTES): a walk over a large store keeps
    the host's memory flat.
    """

    git: Git
    commit: str
    commit_time: int  # committer time, seconds since the epoch
    ref: str
    reader: BlobReader
    _entries: dict[str, tuple[str, int]] | None = None  # regular files: path -> (sha, size)
    _links: dict[str, int] = field(default_factory=dict)  # symbolic links: path -> target size
    _dirs: set[str] = field(default_factory=set)
    _order: list[str] | None = None
    _cached: int = 0  # bytes the reader holds for this tree
    bytes_read: int = 0  # bytes of blobs read for this tree, in all

    @classmethod
    def pin(cls, git: Git, ref: str | None) -> PinnedTree:
        """Resolve `ref` (default HEAD) to a commit before anything runs.

        A ref that names no commit (an unknown sha, an unborn HEAD) is
        ERR_INVALID_MEMORY, as in the original; a ref spelled like an option
        is refused before git sees it.
        """
        wanted = (ref or "").strip() or "HEAD"
        if len(wanted) > 256 or wanted.startswith("-") or any(c in wanted for c in "\x00\n\r"):
            shown = wanted if len(wanted) <= 80 else wanted[:77] + "..."
            raise InvalidFlagError(
                f"--sha: {shown!r} is not a commit name", suggestions=["memhtml help exec"]
            )
        out = git.run("show", "-s", "--format=%H %ct", f"{wanted}^{{commit}}", "--", check=False)
        fields = out.decode("utf-8", "replace").split()
        if len(fields) != 2 or len(fields[0]) != 40:
            raise InvalidMemoryError(
                f"{wanted} names no commit in {git.root}",
                suggestions=["memhtml status (is there a commit yet?)", "pass --sha <commit>"],
            )
        return cls(git, fields[0], int(fields[1]), wanted, BlobReader(git))

    def close(self) -> None:
        """End the blob reader's git process and drop what it holds."""
        self.reader.close()
        self.reader.cache.clear()

    # -- the listing (one ls-tree, on first use) ---------------------------------------
    @property
    def entries(self) -> dict[str, tuple[str, int]]:
        """The commit's regular files: path -> (blob sha, size in bytes)."""
        if self._entries is None:
            entries: dict[str, tuple[str, int]] = {}
            out = self.git.run("ls-tree", "-r", "-l", "-z", "--full-tree", self.commit)
            for record in out.split(b"\x00"):
                meta, _, raw = record.partition(b"\t")
                parts = meta.split()
                if len(parts) != 4 or parts[1] != b"blob":
                    continue
                path = raw.decode("utf-8", "surrogateescape")
                size = int(parts[3])
                if parts[0].decode() == SYMLINK_MODE:
                    self._links[path] = size
                else:
                    entries[path] = (parts[2].decode(), size)
            for path in [*entries, *self._links]:
                parts_ = path.split("/")[:-1]
                for i in range(len(parts_)):
                    self._dirs.add("/".join(parts_[: i + 1]))
            self._entries = entries
        return self._entries

    def kind(self, path: str) -> Kind | None:
        """What a tree path is: a file, a symbolic link, a directory, or nothing."""
        entries = self.entries
        if path == "" or path in self._dirs:
            return "dir"
        if path in entries:
            return "file"
        if path in self._links:
            return "symlink"
        return None

    def listing(self) -> dict[str, Any]:
        """The tree as nested folders for the guest: name -> 0 (file), 1 (link), or a folder."""
        root: dict[str, Any] = {}
        for paths, mark in ((self.entries, 0), (self._links, 1)):
            for path in paths:
                *folders, name = path.split("/")
                node = root
                for folder in folders:
                    node = node.setdefault(folder, {})
                node[name] = mark
        return root

    def resolve(self, guest_path: str, syscall: str = "open") -> str:
        """The tree path of the regular file a guest path names, or a GuestFsError."""
        path = tree_path(guest_path, syscall)
        kind = self.kind(path)
        if kind == "file":
            return path
        if kind == "dir":
            raise GuestFsError("EISDIR", syscall, guest_path)
        if kind == "symlink":
            raise GuestFsError("ELOOP", syscall, guest_path)
        raise GuestFsError("ENOENT", syscall, guest_path)

    def file_size(self, path: str) -> int:
        """The byte size of a regular file of the tree (a resolved tree path)."""
        return self.entries[path][1]

    def read(self, guest_path: str, max_bytes: int, syscall: str = "open") -> tuple[str, bytes]:
        """(tree path, bytes) of the file a guest path names (FileTooLargeError over max_bytes)."""
        path = self.resolve(guest_path, syscall)
        return path, self.read_at(path, max_bytes)

    def read_at(self, path: str, max_bytes: int) -> bytes:
        """The bytes of a resolved tree path, with the files after it read ahead."""
        sha, size = self.entries[path]
        if size > max_bytes:
            raise FileTooLargeError(path, size)
        data = self.reader.cache.get(sha)
        if data is None:
            self.fetch([path, *self._ahead(path)])
            data = self.reader.cache.get(sha)
        if data is None:  # the object store lost it: git says nothing more
            raise GuestFsError("EIO", "read", path)
        return data

    def fetch(self, paths: list[str]) -> None:
        """Read these files in one round trip, first dropping what earlier reads left behind."""
        wanted = {self.entries[p] for p in paths}
        size = sum(s for _, s in wanted)
        if self._cached + size > CACHE_BYTES:
            self.reader.cache.clear()
            self._cached = 0
        self.reader.blobs(sha for sha, _ in wanted)
        self._cached += size
        self.bytes_read += size

    def _ahead(self, path: str) -> list[str]:
        # A walk reads in path order: the next small files come in the same round trip.
        if self._order is None:
            self._order = sorted(self.entries)
        at = bisect.bisect_left(self._order, path)
        ahead: list[str] = []
        budget = READ_AHEAD_BYTES
        cache = self.reader.cache
        for other in self._order[at + 1 : at + 1 + READ_AHEAD]:
            sha, size = self.entries[other]
            if sha in cache or size > budget:
                continue
            ahead.append(other)
            budget -= size
        return ahead

    def size(self, guest_path: str) -> int:
        """The byte size of the file (or link target text) a guest path names."""
        path = tree_path(guest_path, "stat")
        if path in self.entries:
            return self.entries[path][1]
        return self._links.get(path, 0)
