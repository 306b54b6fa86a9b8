"""The corpus as one commit's tree, read through git's object store.

A script sees the tree of one pinned commit: `--sha`, else HEAD resolved to
a sha before the script starts. Nothing reads the working tree, so an
uncommitted edit is invisible, a ref that moves afterwards changes nothing,
and gitignored files (the index and state databases) do not exist in it.
Bytes come through the store's long-lived `git cat-file --batch` reader
(`BlobReader`, `CommitTree`); the listing is one `ls-tree -r`.

Guest paths are resolved lexically here, on the host: `..` cannot climb out
of the mount, an absolute host path names nothing, and a symbolic link is an
entry that is never followed (reading one is `ELOOP`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from memhtml.codemode.limits import CORPUS_MOUNT
from memhtml.contracts.errors import InvalidFlagError, InvalidMemoryError
from memhtml.store.branch import BlobReader, CommitTree
from memhtml.store.git import Git

GUEST_CWD: Final = "/workspace"
SYMLINK_MODE: Final = "120000"
Kind = Literal["file", "symlink", "dir"]

# errno values as Node reports them (negative), for the guest's error objects.
ERRNO: Final[dict[str, int]] = {
    "ENOENT": -2,
    "EINVAL": -22,
    "ENOTDIR": -20,
    "EISDIR": -21,
    "EROFS": -30,
    "ELOOP": -40,
}
_MESSAGES: Final[dict[str, str]] = {
    "ENOENT": "no such file or directory",
    "EINVAL": "invalid argument",
    "ENOTDIR": "not a directory",
    "EISDIR": "illegal operation on a directory",
    "EROFS": "read-only file system",
    "ELOOP": "too many symbolic links encountered (links are not followed)",
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
        raise GuestFsError("EINVAL", syscall, str(guest_path))
    resolved = normalize(guest_path)
    if resolved == CORPUS_MOUNT:
        return ""
    if resolved.startswith(CORPUS_MOUNT + "/"):
        return resolved[len(CORPUS_MOUNT) + 1 :]
    raise GuestFsError("ENOENT", syscall, guest_path)


@dataclass
class PinnedTree:
    """One commit's tree: its regular files, its symbolic links and its directories."""

    git: Git
    commit: str
    commit_time: int  # committer time, seconds since the epoch
    ref: str
    reader: BlobReader
    _files: CommitTree | None = None
    _links: dict[str, str] = field(default_factory=dict)
    _dirs: set[str] = field(default_factory=set)

    @classmethod
    def pin(cls, git: Git, ref: str | None) -> PinnedTree:
        """Resolve `ref` (default HEAD) to a commit before anything runs.

        A ref that names no commit (an unknown sha, an unborn HEAD) is
        ERR_INVALID_MEMORY, as in the original; a ref spelled like an option
        is refused before git sees it.
        """
        wanted = (ref or "").strip() or "HEAD"
        if wanted.startswith("-") or any(c in wanted for c in "\x00\n\r"):
            raise InvalidFlagError(
                f"--sha: {wanted!r} is not a commit name", suggestions=["memhtml help exec"]
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
        """End the blob reader's git process."""
        self.reader.close()

    # -- the listing (one ls-tree, on first use) ---------------------------------------
    @property
    def files(self) -> CommitTree:
        """The commit's regular files (path -> blob sha), read through the shared reader."""
        if self._files is None:
            entries: dict[str, str] = {}
            for entry in self.git.ls_tree(self.commit):
                if entry.mode == SYMLINK_MODE:
                    self._links[entry.path] = entry.sha
                else:
                    entries[entry.path] = entry.sha
            for path in [*entries, *self._links]:
                parts = path.split("/")[:-1]
                for i in range(len(parts)):
                    self._dirs.add("/".join(parts[: i + 1]))
            self._files = CommitTree(self.commit, entries, self.reader)
        return self._files

    def kind(self, path: str) -> Kind | None:
        """What a tree path is: a file, a symbolic link, a directory, or nothing."""
        files = self.files
        if path == "" or path in self._dirs:
            return "dir"
        if files.has(path):
            return "file"
        if path in self._links:
            return "symlink"
        return None

    def listing(self) -> dict[str, Any]:
        """The tree as nested folders for the guest: name -> 0 (file), 1 (link), or a folder."""
        root: dict[str, Any] = {}
        for paths, mark in ((self.files.entries, 0), (self._links, 1)):
            for path in paths:
                *folders, name = path.split("/")
                node = root
                for folder in folders:
                    node = node.setdefault(folder, {})
                node[name] = mark
        return root

    def read(self, guest_path: str, syscall: str = "open") -> tuple[str, bytes]:
        """(tree path, bytes) of the regular file a guest path names, or a GuestFsError."""
        return self.read_at(tree_path(guest_path, syscall), guest_path, syscall)

    def read_at(self, path: str, guest_path: str, syscall: str = "open") -> tuple[str, bytes]:
        """The same for a tree path already resolved from `guest_path`."""
        kind = self.kind(path)
        if kind == "file":
            data = self.files.get(path)
            if data is not None:
                return path, data
        if kind == "dir":
            raise GuestFsError("EISDIR", syscall, guest_path)
        if kind == "symlink":
            raise GuestFsError("ELOOP", syscall, guest_path)
        raise GuestFsError("ENOENT", syscall, guest_path)

    def size(self, guest_path: str) -> int:
        """The byte size of the file (or link target text) a guest path names."""
        path = tree_path(guest_path, "stat")
        sha = self.files.entries.get(path) or self._links.get(path)
        if sha is None:
            return 0
        data = self.reader.blob(sha)
        return 0 if data is None else len(data)
