"""Building a branch with plumbing only: the user's working tree, index and HEAD are never touched.

Sleep curates on `refs/heads/sleep/<run-id>` while the agent keeps writing to
main. Nothing here checks anything out: a commit's files are read through one
long-lived `git cat-file --batch` process (`BlobReader`), new blobs are written
in one `git hash-object -w --stdin-paths` per commit, the tree is built in a
private index file (`GIT_INDEX_FILE`, seeded once with `read-tree`) through
one `update-index -z --index-info`, and the ref moves by compare-and-swap
(`update-ref <ref> <new> <old>`). Five subprocesses per commit, whatever the
number of files.
"""

from __future__ import annotations

import bisect
import os
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from memhtml.contracts.errors import GitError, WriteConflictError
from memhtml.store.files import FileChange
from memhtml.store.git import NULL_SHA, Git, blob_sha, fast_import_stream

FILE_MODE: Final = "100644"
READ_AHEAD: Final = 128  # files fetched after a cache miss, in path order
# Names written to cat-file per round trip: well under a pipe's 64 KiB, so
# writing a round never blocks on git's unread output.
_ROUND_BYTES: Final = 16 * 1024


def ref_sha(git: Git, ref: str) -> str | None:
    """The commit a full ref name points at, or None when the ref does not exist."""
    out = git.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    return out.decode().strip() or None


def current_branch(git: Git) -> str | None:
    """The full ref HEAD points at (`refs/heads/main`), or None when HEAD is detached."""
    out = git.run("symbolic-ref", "-q", "HEAD", check=False)
    return out.decode().strip() or None


def list_refs(git: Git, prefix: str) -> dict[str, str]:
    """Refs under `prefix` (e.g. `refs/heads/sleep/`) -> commit sha."""
    out = git.text("for-each-ref", "--format=%(refname) %(objectname)", prefix)
    found: dict[str, str] = {}
    for line in out.splitlines():
        name, _, sha = line.partition(" ")
        if name and sha:
            found[name] = sha
    return found


def move_ref(git: Git, ref: str, new: str, old: str | None, message: str) -> None:
    """Point `ref` at `new` only if it still points at `old` (None: only if it does not exist)."""
    proc = subprocess.run(
        ["git", "update-ref", "-m", message, ref, new, old or NULL_SHA],
        cwd=git.root,
        capture_output=True,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        check=False,
    )
    if proc.returncode != 0:
        raise WriteConflictError(
            f"{ref} moved while committing (expected {old or 'no ref'})",
            details={"stderr": proc.stderr.decode("utf-8", "replace").strip()},
        )


@dataclass(frozen=True)
class LogEntry:
    """One commit of a range: its sha, parents, subject, body and trailers."""

    sha: str
    parents: tuple[str, ...]
    subject: str
    trailers: dict[str, list[str]]


def log_range(git: Git, revision: str, *, first_parent: bool = False) -> list[LogEntry]:
    """Commits of `revision` (e.g. `base..tip`), oldest first, with their trailers."""
    sep, end = "\x1f", "\x1e"
    fmt = f"%H{sep}%P{sep}%s{sep}%(trailers:only,unfold){end}"
    args = ["log", "--reverse", f"--format={fmt}"]
    if first_parent:
        args.append("--first-parent")
    out = git.run(*args, revision, "--").decode("utf-8", "replace")
    entries: list[LogEntry] = []
    for raw in out.split(end):
        record = raw.strip("\n")
        if not record:
            continue
        sha, parents, subject, trailer_text = [*record.split(sep), "", "", ""][:4]
        trailers: dict[str, list[str]] = {}
        for line in trailer_text.splitlines():
            key, colon, value = line.partition(":")
            if colon and key.strip():
                trailers.setdefault(key.strip(), []).append(value.strip())
        entries.append(LogEntry(sha.strip(), tuple(parents.split()), subject, trailers))
    return entries


class BlobReader:
    """One `git cat-file --batch` process for a whole run, answering names as they come.

    A name is a blob sha or `<commit>:<path>`. Answers are cached by blob sha,
    so a file that did not change between two commits is read once. The
    process ends with `close()` (or with its parent: git exits at EOF on stdin).
    """

    def __init__(self, git: Git) -> None:
        self.git = git
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.cache: dict[str, bytes] = {}

    def _process(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._proc = subprocess.Popen(
                    ["git", "cat-file", "--batch"],
                    cwd=self.git.root,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
                )
            except FileNotFoundError as exc:
                raise GitError("git is not installed or not on PATH") from exc
        return self._proc

    @staticmethod
    def _answer(out: IO[bytes]) -> tuple[str, bytes] | None:
        header = out.readline()
        if not header:
            raise GitError("git cat-file --batch stopped answering")
        parts = header.decode("utf-8", "replace").split()
        if len(parts) != 3:  # "<name> missing" / "ambiguous": no content follows
            return None
        size = int(parts[2])
        data = out.read(size)
        out.read(1)  # the newline after the content
        return (parts[0], data) if parts[1] == "blob" else None

    def read_many(self, names: Iterable[str]) -> dict[str, tuple[str, bytes]]:
        """name -> (blob sha, bytes) for every name that is a blob; the others are left out."""
        wanted = list(dict.fromkeys(names))
        found: dict[str, tuple[str, bytes]] = {}
        with self._lock:
            proc = self._process()
            assert proc.stdin is not None and proc.stdout is not None
            i = 0
            while i < len(wanted):
                batch: list[str] = []
                size = 0
                while i < len(wanted) and (not batch or size < _ROUND_BYTES):
                    batch.append(wanted[i])
                    size += len(wanted[i]) + 1
                    i += 1
                proc.stdin.write(("\n".join(batch) + "\n").encode("utf-8", "surrogateescape"))
                proc.stdin.flush()
                for name in batch:
                    got = self._answer(proc.stdout)
                    if got is not None:
                        found[name] = got
                        self.cache[got[0]] = got[1]
        return found

    def blob(self, sha: str) -> bytes | None:
        """A blob's bytes by sha (cached)."""
        hit = self.cache.get(sha)
        if hit is not None:
            return hit
        got = self.read_many([sha]).get(sha)
        return None if got is None else got[1]

    def blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """Many blobs by sha, the uncached ones in one round trip per 16 KiB of names."""
        wanted = list(dict.fromkeys(shas))
        missing = [s for s in wanted if s not in self.cache]
        if missing:
            self.read_many(missing)
        return {s: self.cache[s] for s in wanted if s in self.cache}

    def close(self) -> None:
        """End the git process."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class CommitTree:
    """A commit's files (path -> blob sha) and a reader for their bytes.

    What a TreeView reads when it views a commit instead of the working tree.
    A read that misses the cache also fetches the next `READ_AHEAD` uncached
    files in path order in the same round trip: phases mostly walk the corpus
    in path order, so a walk costs one round trip per `READ_AHEAD` files.
    """

    commit: str
    entries: dict[str, str]
    reader: BlobReader
    _order: list[str] | None = None

    @classmethod
    def load(cls, git: Git, commit: str, reader: BlobReader) -> CommitTree:
        """The listing of `commit` (one `ls-tree -r`)."""
        return cls(commit, {e.path: e.sha for e in git.ls_tree(commit)}, reader)

    def has(self, path: str) -> bool:
        """True when the commit holds a file at `path`."""
        return path in self.entries

    def get(self, path: str) -> bytes | None:
        """The bytes at `path`, or None when the commit holds no file there."""
        sha = self.entries.get(path)
        if sha is None:
            return None
        hit = self.reader.cache.get(sha)
        if hit is not None:
            return hit
        if self._order is None:
            self._order = sorted(self.entries)
        at = bisect.bisect_left(self._order, path)
        ahead = [sha]
        cache = self.reader.cache
        for other in self._order[at + 1 : at + 1 + 4 * READ_AHEAD]:
            other_sha = self.entries[other]
            if other_sha not in cache:
                ahead.append(other_sha)
                if len(ahead) > READ_AHEAD:
                    break
        return self.reader.blobs(ahead).get(sha)

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read many files in one round trip per batch (later `get`s hit the cache)."""
        self.reader.blobs(sha for p in paths if (sha := self.entries.get(p)) is not None)

    def paths(self, prefix: str = "") -> list[str]:
        """Every path under `prefix` (a folder with its trailing slash, or "" for all), sorted."""
        return sorted(p for p in self.entries if p.startswith(prefix))

    def advance(self, commit: str, written: Mapping[str, str | None]) -> CommitTree:
        """The tree of a commit made from this one by `written` (path -> sha; None: removed)."""
        entries = dict(self.entries)
        for path, sha in written.items():
            if sha is None:
                entries.pop(path, None)
            else:
                entries[path] = sha
        return CommitTree(commit, entries, self.reader)


@dataclass
class BranchWriter:
    """Commits change sets onto one ref through a private index; nothing else is touched.

    `workdir` (inside `.git`) holds the private index, seeded from the parent
    commit on the first commit of a process; it then stays equal to the ref's tree.
    """

    git: Git
    ref: str
    workdir: Path
    _seeded: str | None = None
    written: dict[str, str | None] = field(default_factory=dict)

    @property
    def index_file(self) -> Path:
        """The private index."""
        return self.workdir / "git-index"

    def _env(self) -> dict[str, str]:
        return {**self.git.identity_env(), "GIT_INDEX_FILE": str(self.index_file)}

    def reset(self) -> None:
        """Forget the private index (the next commit seeds it from its parent again)."""
        self._seeded = None

    def _seed(self, parent: str) -> None:
        if self._seeded == parent:
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        for stale in (self.index_file, self.index_file.with_name("git-index.lock")):
            stale.unlink(missing_ok=True)  # a killed run's leftovers: the ref is the truth
        self.git.run("read-tree", parent, env=self._env())
        self._seeded = parent

    def _write_blobs(self, contents: Sequence[bytes]) -> list[str]:
        """Write blobs into the object store in one `git fast-import`; their shas, in order.

        One stream in, one pack (or a few loose objects) out: no file per blob.
        """
        if not contents:
            return []
        self.git.run("fast-import", "--quiet", "--done", stdin=fast_import_stream(contents))
        return [blob_sha(data) for data in contents]

    def commit(
        self,
        parent: str,
        changes: Sequence[FileChange],
        message: str,
        *,
        extra_blobs: Sequence[bytes] = (),
    ) -> str:
        """Commit `changes` on top of `parent` and move the ref from `parent` to the new commit.

        A change's `moved_from` is removed and its `path` written (with its
        content, or the source's blob when the content is None). The ref moves
        by compare-and-swap: a ref moved by anyone else is a WriteConflictError.
        `extra_blobs` go into the object store in the same stream (no tree names them:
        sleep's record of a file's state between two decisions of one phase).
        """
        if not changes:
            raise GitError("nothing to commit")
        self._seed(parent)
        stored = [c for c in changes if c.content is not None]
        written_shas = self._write_blobs([*(c.content or b"" for c in stored), *extra_blobs])
        shas = dict(zip([c.path for c in stored], written_shas[: len(stored)], strict=True))
        written: dict[str, str | None] = {}
        moved_blobs = self._moved_sources(parent, changes, shas)
        for change in changes:
            if change.moved_from is not None and change.moved_from != change.path:
                written[change.moved_from] = None
            written[change.path] = shas.get(change.path) or moved_blobs.get(change.path)
        lines = []
        for path, sha in written.items():
            encoded = path.encode("utf-8", "surrogateescape")
            if sha is None:
                lines.append(b"0 " + NULL_SHA.encode() + b"\t" + encoded)
            else:
                lines.append(f"{FILE_MODE} {sha}\t".encode() + encoded)
        env = self._env()
        self.git.run(
            "update-index", "-z", "--index-info", stdin=b"\x00".join(lines) + b"\x00", env=env
        )
        tree = self.git.run("write-tree", env=env).decode().strip()
        sha = (
            self.git.run("commit-tree", tree, "-p", parent, stdin=message.encode("utf-8"), env=env)
            .decode()
            .strip()
        )
        try:
            move_ref(self.git, self.ref, sha, parent, message.splitlines()[0])
        except WriteConflictError:
            self._seeded = None  # the private index no longer matches the ref
            raise
        self._seeded = sha
        self.written = written
        return sha

    def _moved_sources(
        self, parent: str, changes: Sequence[FileChange], shas: Mapping[str, str]
    ) -> dict[str, str]:
        """Blob shas for moves that carry no new content (the source's blob moves as it is)."""
        bare = [c for c in changes if c.content is None and c.moved_from is not None]
        if not bare:
            return {}
        listing = {
            e.path: e.sha for e in self.git.ls_tree(parent, [c.moved_from or "" for c in bare])
        }
        out: dict[str, str] = {}
        for c in bare:
            source = c.moved_from or ""
            sha = shas.get(source) or listing.get(source)
            if sha is None:
                raise GitError(f"cannot move {source}: not in {parent[:12]}")
            out[c.path] = sha
        return out
