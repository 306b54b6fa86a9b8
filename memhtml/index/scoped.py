"""The working tree's dirty set restricted to a few paths, without `git status`.

`git status` stats every tracked file and walks every folder, a cost that
grows with the store (docs/benchmarks.md, "Costs behind the code"). A
long-lived process whose watcher names the
few paths that changed since its last exact check (memhtml.store.watch) needs
the status of just those paths and the overlay's. `git status -- <paths>`
still reads the whole git index and hashes every name; this
module answers the same question from HEAD's entries for those paths
(`ls-tree`), the files themselves, git's own hashing (`hash-object`, which
applies the repository's filters) and git's ignore rules (`check-ignore`),
none of which reads the git index.

The answer is exact under what the caller checks first (`repo_stamp`): HEAD,
the git index and the rules git reads are as they were at an exact check, and
every path dirty then is in `maybe_staged` (the overlay). A path outside that
set was clean then, so its git index entry is HEAD's, or it has none: git
calls it dirty exactly when the file's hashed content or type differs from
HEAD's entry, or, with no entry, when the file exists and is not ignored. A
path in the overlay may also be staged: it is dirty when git's index differs
from HEAD for it (one `diff-index --cached`, cached while the git index is
unchanged). Anything this module does not model (a directory where a file
was, a symlink or submodule in HEAD, git failing) answers None: run the full
`git status`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import GitError
from memhtml.store.git import Git, blob_sha

RepoStamp = tuple[object, ...]
# What git reads besides HEAD and the files: the index (staging, read-tree, a
# merge), the config (core.filemode, autocrlf) and the repository's excludes.
_STAMPED: Final = ("index", "config", "info/exclude")
_REGULAR: Final = {"100644": False, "100755": True}  # HEAD mode -> executable


def repo_stamp(root: Path) -> RepoStamp:
    """A fingerprint of the git state a scoped check relies on (any change: check in full).

    The index file is replaced, never rewritten in place, so its inode, size and
    times change; its trailing checksum covers the rare reuse of all three.
    """
    git_dir = root / ".git"
    out: list[object] = []
    for name in _STAMPED:
        try:
            st = os.stat(git_dir / name)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    try:
        with open(git_dir / "index", "rb") as fh:
            fh.seek(-20, os.SEEK_END)
            out.append(fh.read(20))
    except OSError:
        out.append(None)
    return tuple(out)


@dataclass(frozen=True)
class CheckScope:
    """What one freshness check looks at: `paths` (None: the whole tree), and the HEAD
    and repo stamp it ran against (what the next check compares with)."""

    head: str | None
    stamp: RepoStamp
    paths: frozenset[str] | None

    @property
    def key(self) -> tuple[str | None, RepoStamp]:
        """(HEAD, stamp): equal at the next check means git's side did not move."""
        return (self.head, self.stamp)


class ScopedStatus:
    """`git status` of a few paths, for a caller that knows nothing else changed."""

    def __init__(self, git: Git, root: Path) -> None:
        self.git = git
        self.root = root
        self._staged: tuple[tuple[str, RepoStamp], frozenset[str]] | None = None
        self._filemode: tuple[RepoStamp, bool] | None = None

    def dirty(
        self,
        head: str,
        stamp: RepoStamp,
        paths: Iterable[str],
        maybe_staged: Iterable[str],
    ) -> set[str] | None:
        """The paths among `paths` that `git status` would report, or None: ask git status.

        `stamp` is `repo_stamp` at the exact check the caller relies on (and now);
        `maybe_staged` holds the paths that may differ between HEAD and git's index.
        """
        wanted = sorted(set(paths))
        if not wanted:
            return set()
        tree = self._head_entries(head, wanted)
        if tree is None:
            return None
        filemode = self._core_filemode(stamp)
        dirty: set[str] = set()
        clean: list[str] = []  # clean unless staged
        hash_needed: list[tuple[str, str]] = []
        untracked: list[str] = []
        for path in wanted:
            target = self.root / path
            try:
                st: os.stat_result | None = os.lstat(target)
            except (FileNotFoundError, NotADirectoryError):
                st = None
            except OSError:
                return None
            if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                return None  # a directory (or stranger) where a file may be: git decides
            entry = tree.get(path)
            if entry is None:
                (clean if st is None else untracked).append(path)
                continue
            mode, sha = entry
            if mode not in _REGULAR:
                return None
            if st is None or stat.S_ISLNK(st.st_mode):
                dirty.add(path)  # deleted, or a typechange
                continue
            if filemode and bool(st.st_mode & stat.S_IXUSR) != _REGULAR[mode]:
                dirty.add(path)
                continue
            try:
                data = target.read_bytes()
            except OSError:
                return None
            if blob_sha(data) == sha:
                clean.append(path)
            else:
                hash_needed.append((path, sha))
        if hash_needed:
            # The bytes differ; git compares them after its filters (autocrlf, ...).
            hashed = self._hash_objects([p for p, _ in hash_needed])
            if hashed is None:
                return None
            for (path, sha), got in zip(hash_needed, hashed, strict=True):
                if got == sha:
                    clean.append(path)
                else:
                    dirty.add(path)
        if untracked:
            ignored = self._ignored(untracked)
            if ignored is None:
                return None
            dirty.update(p for p in untracked if p not in ignored)
            clean.extend(p for p in untracked if p in ignored)
        maybe = set(maybe_staged)
        if any(p in maybe for p in clean):
            staged = self._staged_paths(head, stamp)
            dirty.update(p for p in clean if p in maybe and p in staged)
        return dirty

    # -- git, one process each, none reading the git index -------------------------
    def _head_entries(self, head: str, paths: Sequence[str]) -> dict[str, tuple[str, str]] | None:
        """path -> (mode, object id) of HEAD's entry at each path that has one."""
        try:
            listing = self.git.run(
                "--literal-pathspecs", "ls-tree", "-z", "--full-tree", head, "--", *paths
            )
        except GitError:
            return None
        out: dict[str, tuple[str, str]] = {}
        for rec in listing.split(b"\x00"):
            if not rec:
                continue
            meta, _, name = rec.partition(b"\t")
            parts = meta.decode().split(" ")
            if len(parts) != 3:
                return None
            out[name.decode("utf-8", "surrogateescape")] = (parts[0], parts[2])
        return out

    def _hash_objects(self, paths: Sequence[str]) -> list[str] | None:
        try:
            out = self.git.run("hash-object", "--", *paths)
        except GitError:  # a file gone meanwhile: its event is pending; let git status look
            return None
        shas = out.decode().split()
        return shas if len(shas) == len(paths) else None

    def _ignored(self, paths: Sequence[str]) -> set[str] | None:
        """The paths git's ignore rules exclude (none has a git index entry, so --no-index).

        Verbose output names every path, matched or not, so a failed run (no
        output) is told apart from "none ignored" (exit status 1).
        """
        out = self.git.run(
            "check-ignore",
            "--no-index",
            "--verbose",
            "--non-matching",
            "-z",
            "--stdin",
            stdin=b"".join(os.fsencode(p) + b"\x00" for p in paths),
            check=False,
        )
        fields = out.split(b"\x00")
        records = [fields[i : i + 4] for i in range(0, len(fields) - 1, 4)]
        if len(records) != len(paths) or any(len(r) != 4 for r in records):
            return None
        return {
            r[3].decode("utf-8", "surrogateescape")
            for r in records
            if r[2] and not r[2].startswith(b"!")
        }

    def _staged_paths(self, head: str, stamp: RepoStamp) -> frozenset[str]:
        key = (head, stamp)
        if self._staged is None or self._staged[0] != key:
            self._staged = (key, frozenset(self.git.staged_paths(head)))
        return self._staged[1]

    def _core_filemode(self, stamp: RepoStamp) -> bool:
        if self._filemode is None or self._filemode[0] != stamp:
            out = self.git.run("config", "--bool", "--get", "core.filemode", check=False)
            self._filemode = (stamp, out.strip() != b"false")
        return self._filemode[1]
