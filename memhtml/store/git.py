"""Git plumbing for the hot paths, batched: one subprocess per step, never one per file.

GitPython serves the cold paths (init, config, history); the write path and
the indexer call git's plumbing directly so a single write stays a handful of
short subprocesses and a rebuild reads every blob through one
``cat-file --batch``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, NamedTuple

from memhtml.contracts.errors import GitError, WriteConflictError

log = logging.getLogger("memhtml.store")

NULL_SHA: Final = "0" * 40
COMMIT_SUBJECT_MAX: Final = 72
_FALLBACK_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "memhtml",
    "GIT_AUTHOR_EMAIL": "memhtml@localhost",
    "GIT_COMMITTER_NAME": "memhtml",
    "GIT_COMMITTER_EMAIL": "memhtml@localhost",
}


def blob_sha(data: bytes) -> str:
    """Git's blob id for `data` (what `git hash-object` prints), computed without a subprocess."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data, usedforsecurity=False).hexdigest()


def commit_subject(operation: str, subject: str) -> str:
    """`memhtml(<operation>): <subject>`, whitespace collapsed, at most 72 chars (ellipsis)."""
    text = " ".join(subject.split()) or "(untitled)"
    line = f"memhtml({operation}): {text}"
    if len(line) > COMMIT_SUBJECT_MAX:
        line = line[: COMMIT_SUBJECT_MAX - 1].rstrip() + "…"
    return line


def status_argv(prefixes: Sequence[str] = (), *, read_only: bool = False) -> list[str]:
    """The `git status` command line every status read runs (porcelain v2, NUL-separated)."""
    return [
        "git",
        *(("--no-optional-locks",) if read_only else ()),
        "status",
        "--porcelain=v2",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--",
        *prefixes,
    ]


# The records are NamedTuples: a frozen dataclass costs a cold start ~1.5 ms each to create.
class TreeEntry(NamedTuple):
    """One blob in a tree listing."""

    mode: str
    sha: str
    path: str


class DiffEntry(NamedTuple):
    """One changed path between two commits: status is A, M, D, or R (with old_path)."""

    status: str
    path: str
    old_path: str | None = None


class StatusEntry(NamedTuple):
    """One uncommitted path in the working tree (porcelain v2)."""

    kind: str  # "changed", "renamed", "untracked", "unmerged"
    path: str
    old_path: str | None
    deleted: bool


class _Unset:
    """The type of `_UNSET`: an argument not given (None means something)."""


_UNSET: Final = _Unset()
# At or above this many objects a batch's blobs go into one pack, below it they are
# written loose: git's own rule (fastimport.unpackLimit 100 keeps 100 or fewer loose).
PACK_THRESHOLD: Final = 101


def fast_import_stream(blobs: Sequence[bytes]) -> bytes:
    """The `git fast-import --done` input that stores `blobs` (no marks, no commits)."""
    return b"".join(b"blob\ndata %d\n%b\n" % (len(data), data) for data in blobs) + b"done\n"


class BlobImport:
    """A running `git fast-import` that stores blobs as one pack (see `Git.store_blobs`).

    Its input is a temporary file, not a pipe this process feeds: the import
    then runs on its own, and nothing here competes for the interpreter while
    the caller writes the working tree.
    """

    def __init__(self, git: Git, blobs: Sequence[bytes]) -> None:
        import tempfile  # a large batch only: a single write never loads it

        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by wait()
        try:
            with tempfile.TemporaryFile() as stream:
                stream.write(fast_import_stream(blobs))
                stream.seek(0)
                self._proc = subprocess.Popen(
                    ["git", "fast-import", "--quiet", "--done"],
                    cwd=git.root,
                    stdin=stream,
                    stdout=subprocess.DEVNULL,
                    stderr=self._stderr,
                    env=git._env(),
                )
        except OSError:
            self._proc = None

    def wait(self) -> bool:
        """Wait for the import; True when every blob is stored (False: they will be written
        loose by the commit that follows)."""
        if self._proc is None:
            self._stderr.close()
            return False
        ok = self._proc.wait() == 0
        if not ok:
            self._stderr.seek(0)
            message = self._stderr.read().decode("utf-8", "replace").strip()
            log.warning("git fast-import failed (the blobs are written loose): %s", message)
        self._stderr.close()
        return ok

    def kill(self) -> None:
        """Stop the import (the write is being abandoned); a partial pack is git's to discard."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
        self._stderr.close()


class Git:
    """A repository's git, run as plumbing subprocesses."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._identity_env: dict[str, str] | None = None

    # -- running -----------------------------------------------------------
    def _env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("GIT_TERMINAL_PROMPT", "0")
        env.pop("GIT_DIR", None)
        env.pop("GIT_WORK_TREE", None)
        if extra:
            env.update(extra)
        return env

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
    ) -> bytes:
        """Run `git <args>` in the root; stdout bytes, GitError on failure when `check`."""
        try:
            proc = subprocess.run(
                ["git", *args],
                cwd=self.root,
                input=stdin,
                capture_output=True,
                env=self._env(env),
                check=False,
            )
        except FileNotFoundError as exc:
            raise GitError("git is not installed or not on PATH") from exc
        if check and proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise GitError(f"git {args[0]} failed: {err}", details={"args": list(args)})
        return proc.stdout

    def text(self, *args: str, check: bool = True) -> str:
        """Run git and decode stdout as UTF-8, stripped."""
        return self.run(*args, check=check).decode("utf-8", "replace").strip()

    # -- refs --------------------------------------------------------------
    def head(self) -> str | None:
        """The commit HEAD names, or None on an unborn branch."""
        out = self.run("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
        sha = out.decode().strip()
        return sha or None

    def head_fast(self) -> str | None:
        """HEAD read from the ref files without a subprocess (falls back to rev-parse)."""
        git_dir = self.root / ".git"
        try:
            head = (git_dir / "HEAD").read_text().strip()
            if not head.startswith("ref: "):
                return head if len(head) == 40 else self.head()
            ref = head[5:]
            loose = git_dir / ref
            if loose.is_file():
                return loose.read_text().strip() or None
            packed = git_dir / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    if line.endswith(" " + ref) and not line.startswith(("#", "^")):
                        return line.split(" ", 1)[0]
            return None
        except (OSError, UnicodeDecodeError):
            return self.head()

    def resolve_commit(self, ref: str) -> str | None:
        """The full sha of a commit-ish, or None when it names no commit."""
        out = self.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
        return out.decode().strip() or None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when `ancestor` is reachable from `descendant`."""
        proc = subprocess.run(
            ["git", "merge-base", "--is-ancestor", ancestor, descendant],
            cwd=self.root,
            capture_output=True,
            env=self._env(),
            check=False,
        )
        return proc.returncode == 0

    # -- reading -----------------------------------------------------------
    def ls_tree(self, ref: str, prefixes: Sequence[str] = ()) -> list[TreeEntry]:
        """Every blob under `prefixes` (all when empty) at `ref`, one subprocess."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", ref, "--", *prefixes)
        entries: list[TreeEntry] = []
        for record in out.split(b"\x00"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, sha = meta.decode().split(" ")
            if kind == "blob":
                entries.append(TreeEntry(mode, sha, path.decode("utf-8", "surrogateescape")))
        return entries

    def cat_objects(self, names: Iterable[str]) -> dict[str, tuple[str, bytes]]:
        """Blobs by name (a sha or `<commit>:<path>`) -> (blob sha, bytes); one `cat-file --batch`.

        Missing names and objects that are not blobs are left out.
        """
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", stdin=("\n".join(wanted) + "\n").encode())
        found: dict[str, tuple[str, bytes]] = {}
        pos = 0
        for name in wanted:
            nl = out.index(b"\n", pos)
            parts = out[pos:nl].decode("utf-8", "replace").split(" ")
            pos = nl + 1
            if len(parts) != 3:  # "<name> missing" (or ambiguous): no content follows
                continue
            size = int(parts[2])
            if parts[1] == "blob":
                found[name] = (parts[0], out[pos : pos + size])
            pos += size + 1
        return found

    def cat_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """The bytes of many blobs by sha, through one `cat-file --batch`."""
        return {sha: data for sha, (_, data) in self.cat_objects(shas).items()}

    def show_blob(self, commit: str, path: str) -> bytes | None:
        """A file's bytes as of a commit, or None when absent."""
        proc = subprocess.run(
            ["git", "cat-file", "blob", f"{commit}:{path}"],
            cwd=self.root,
            capture_output=True,
            env=self._env(),
            check=False,
        )
        return proc.stdout if proc.returncode == 0 else None

    def diff(self, old: str, new: str, prefixes: Sequence[str] = ()) -> list[DiffEntry]:
        """Changed blobs between two commits with rename detection, one subprocess."""
        out = self.run("diff", "--name-status", "-M", "-z", old, new, "--", *prefixes)
        fields = out.split(b"\x00")
        entries: list[DiffEntry] = []
        i = 0
        while i < len(fields) and fields[i]:
            status = fields[i].decode()
            if status.startswith(("R", "C")):
                old_path = fields[i + 1].decode("utf-8", "surrogateescape")
                path = fields[i + 2].decode("utf-8", "surrogateescape")
                entries.append(DiffEntry(status[0], path, old_path))
                i += 3
            else:
                entries.append(
                    DiffEntry(status[0], fields[i + 1].decode("utf-8", "surrogateescape"))
                )
                i += 2
        return entries

    def status(self, prefixes: Sequence[str] = (), *, read_only: bool = False) -> list[StatusEntry]:
        """Uncommitted changes (staged or not) and untracked files, porcelain v2.

        `read_only` (for readers that do not hold the repository lock) keeps git
        from refreshing its index file, so a reader never takes `.git/index.lock`
        from under a writer.
        """
        return parse_status(self.run(*status_argv(prefixes, read_only=read_only)[1:]))

    def start_status(
        self, prefixes: Sequence[str] = (), *, read_only: bool = True
    ) -> subprocess.Popen[bytes]:
        """`status` started in the background; `finish_status` collects it.

        A read starts it, ranks its query meanwhile (git and Python run on two
        cores at once), and only then looks at the answer.
        """
        try:
            return subprocess.Popen(
                status_argv(prefixes, read_only=read_only),
                cwd=self.root,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._env(),
            )
        except FileNotFoundError as exc:
            raise GitError("git is not installed or not on PATH") from exc

    @staticmethod
    def finish_status(proc: subprocess.Popen[bytes]) -> list[StatusEntry]:
        """The entries of a `start_status` run (GitError when git failed)."""
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise GitError(f"git status failed: {err.decode('utf-8', 'replace').strip()}")
        return parse_status(out)

    def staged_paths(self, head: str | _Unset | None = _UNSET) -> list[str]:
        """Paths whose index entry differs from HEAD (a user's staged work).

        `head` is HEAD's commit when the caller already knows it (None: unborn),
        which saves a `rev-parse`.
        """
        current = self.head() if isinstance(head, _Unset) else head
        return _paths_z(self.run(*_staged_argv(current)))

    def _index_stamp(self) -> tuple[int, int, int] | None:
        """(inode, mtime, size) of the git index file; None when it is elsewhere or absent."""
        if "GIT_INDEX_FILE" in os.environ:
            return None
        try:
            st = os.stat(self.root / ".git" / "index")
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def probe_staged(self, head: str | None) -> StagedProbe | None:
        """`staged_paths(head)` started in the background, for a commit a little later.

        A write door starts it as it takes the lock, so the git process runs
        while the door plans; `commit_paths` uses its answer only when HEAD and
        the git index file are still the ones it read (git replaces the index
        file on every change), and asks again otherwise. None: no probe.
        """
        stamp = self._index_stamp()
        if stamp is None:
            return None
        try:
            proc = subprocess.Popen(
                ["git", *_staged_argv(head)],
                cwd=self.root,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self._env(),
            )
        except OSError:
            return None
        return StagedProbe(head, stamp, proc)

    def _probed(self, probe: StagedProbe | None, head: str | None) -> list[str] | None:
        """The probe's answer when it still holds for `head` (see probe_staged)."""
        if probe is None:
            return None
        out = probe.finish()
        if out is None or probe.head != head or self._index_stamp() != probe.stamp:
            return None
        return _paths_z(out)

    # -- writing -----------------------------------------------------------
    def identity_env(self) -> dict[str, str]:
        """A committer identity for commits made with plumbing: {} when git has one,
        memhtml's own otherwise (asked of `git var` once per Git)."""
        if self._identity_env is None:
            proc = subprocess.run(
                ["git", "var", "GIT_COMMITTER_IDENT"],
                cwd=self.root,
                capture_output=True,
                env=self._env(),
                check=False,
            )
            self._identity_env = {} if proc.returncode == 0 else dict(_FALLBACK_IDENTITY)
        return dict(self._identity_env)  # a copy: callers add to their env

    def _commit_tree(
        self, tree: str, parents: Sequence[str], message: str, env: dict[str, str]
    ) -> str:
        """`git commit-tree`; without a usable identity, the fallback one.

        The identity is asked of git (`git var`) only when a commit fails, so a
        write with a configured identity costs no extra subprocess. On success
        `env` carries the identity used, for the reflog entry that follows.
        """
        args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p))]
        stdin = message.encode("utf-8")
        if self._identity_env is None:
            try:
                out = self.run(*args, stdin=stdin, env=env)
            except GitError:
                if not self.identity_env():
                    raise  # git has an identity: the failure was something else
            else:
                return out.decode().strip()
        env.update(self.identity_env())
        return self.run(*args, stdin=stdin, env=env).decode().strip()

    def store_blobs(self, blobs: Sequence[bytes]) -> BlobImport:
        """Start writing `blobs` into the object store as one pack (`git fast-import`).

        The write doors call this for a large batch before committing it: the
        `update-index` that stages the files then finds every object present
        and writes none, where it would otherwise write one loose object (a
        file and often a directory) per blob. It runs on its own while the
        caller writes the working-tree files; `BlobImport.wait()` waits for it.
        A failure only costs the speed: the objects are written loose then.
        """
        return BlobImport(self, blobs)

    def repack_geometric(self) -> bool:
        """Roll small packs and every loose object into bigger packs, pruning nothing
        (`git repack -d --geometric=2`; memhtml.store.upkeep). False when git failed:
        it renames its new pack into place before it deletes an old one."""
        try:
            self.run("repack", "-d", "-q", "--geometric=2")
        except GitError as exc:
            log.warning("object store upkeep: %s", exc)
            return False
        return True

    def commit_paths(
        self,
        paths: Sequence[str],
        message: str,
        expected_head: str | None,
        *,
        staged: StagedProbe | None = None,
    ) -> str:
        """Commit exactly `paths` (as they are in the working tree; absent = deleted).

        Other staged or unstaged work of the user is neither committed nor
        touched. HEAD moves by compare-and-swap from `expected_head`, so a
        commit made behind our back is a WriteConflictError, not a lost write.
        `staged`: the user's staged paths asked ahead (`probe_staged`).
        """
        if not paths:
            raise GitError("nothing to commit")
        listing = b"\x00".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\x00"
        ours = set(paths)
        probed = self._probed(staged, expected_head)
        if probed is None:
            probed = self.staged_paths(expected_head)
        staged_elsewhere = [p for p in probed if p not in ours]
        env: dict[str, str] = dict(self._identity_env or {})
        temp_index: Path | None = None
        if staged_elsewhere:
            # The user has staged work: build our tree in a private index from HEAD.
            temp_index = Path(self.text("rev-parse", "--git-path", "memhtml-index"))
            if not temp_index.is_absolute():
                temp_index = self.root / temp_index
            env["GIT_INDEX_FILE"] = str(temp_index)
            if expected_head:
                self.run("read-tree", expected_head, env=env)
            else:
                self.run("read-tree", "--empty", env=env)
        try:
            self.run("update-index", "--add", "--remove", "-z", "--stdin", stdin=listing, env=env)
            tree = self.run("write-tree", env=env).decode().strip()
            sha = self._commit_tree(tree, [expected_head] if expected_head else [], message, env)
            proc = subprocess.run(
                [
                    "git",
                    "update-ref",
                    "-m",
                    message.splitlines()[0],
                    "HEAD",
                    sha,
                    expected_head or NULL_SHA,
                ],
                cwd=self.root,
                capture_output=True,
                env=self._env(env),
                check=False,
            )
            if proc.returncode != 0:
                raise WriteConflictError(
                    "HEAD moved while committing (another writer committed first)",
                    suggestions=["retry the write"],
                )
        finally:
            if temp_index is not None:
                temp_index.unlink(missing_ok=True)
        if staged_elsewhere:
            # Keep the real index in step for our paths only.
            self.run("update-index", "--add", "--remove", "-z", "--stdin", stdin=listing)
        return sha

    def reset_paths(self, paths: Sequence[str]) -> None:
        """Put the index entries of `paths` back to HEAD (after a failed commit)."""
        if paths and self.head():
            self.run("reset", "-q", "HEAD", "--", *paths, check=False)


class StagedProbe:
    """A `staged_paths` question asked ahead (Git.probe_staged): the HEAD and the git index
    file (inode, mtime, size) it was asked against, and the running git process."""

    def __init__(
        self, head: str | None, stamp: tuple[int, int, int], proc: subprocess.Popen[bytes]
    ) -> None:
        self.head = head
        self.stamp = stamp
        self._proc: subprocess.Popen[bytes] | None = proc
        self._out: bytes | None = None

    def finish(self) -> bytes | None:
        """The process's output (None when it failed); waits for it once."""
        if self._proc is not None:
            out, _ = self._proc.communicate()
            self._out = out if self._proc.returncode == 0 else None
            self._proc = None
        return self._out

    def close(self) -> None:
        """Reap the process when its answer was never needed (a door that commits nothing)."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def _staged_argv(head: str | None) -> list[str]:
    if head is None:
        return ["ls-files", "-z"]
    return ["diff-index", "--cached", "--name-only", "-z", head]


def _paths_z(out: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\x00") if p]


def parse_status(out: bytes) -> list[StatusEntry]:
    """Entries of `git status --porcelain=v2 -z` output."""
    fields = out.split(b"\x00")
    entries: list[StatusEntry] = []
    i = 0
    while i < len(fields):
        rec = fields[i]
        i += 1
        if not rec:
            continue
        kind = rec[:1]
        if kind == b"1":
            parts = rec.split(b" ", 8)
            xy = parts[1].decode()
            path = parts[8].decode("utf-8", "surrogateescape")
            entries.append(StatusEntry("changed", path, None, "D" in xy))
        elif kind == b"2":
            parts = rec.split(b" ", 9)
            path = parts[9].decode("utf-8", "surrogateescape")
            old = fields[i].decode("utf-8", "surrogateescape")
            i += 1
            entries.append(StatusEntry("renamed", path, old, False))
        elif kind == b"u":
            parts = rec.split(b" ", 10)
            entries.append(
                StatusEntry("unmerged", parts[10].decode("utf-8", "surrogateescape"), None, False)
            )
        elif kind == b"?":
            entries.append(
                StatusEntry("untracked", rec[2:].decode("utf-8", "surrogateescape"), None, False)
            )
    return entries
