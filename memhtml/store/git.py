"""Git plumbing for the hot paths, batched: one subprocess per step, never one per file.

Every git call of the store comes through here, `init` and its config
included (no git library: its objects earned nothing a command does not). A
single write stays a handful of short subprocesses and a rebuild reads every
blob through one ``cat-file --batch``.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Final, NamedTuple

from memhtml.contracts.errors import GitError, MemhtmlError, WriteConflictError
from memhtml.contracts.logs import get_logger
from memhtml.store import faults, trees
from memhtml.telemetry import span, traced

log = get_logger("memhtml.store")


def is_disk_full_text(text: str) -> bool:
    """True when git's stderr says the disk (or the quota) is full (memhtml.store.space)."""
    lowered = text.lower()
    return "no space left on device" in lowered or "disk quota exceeded" in lowered


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


# The records are NamedTuples: a frozen dataclass generates its methods with `exec` at import.
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
# Up to this many paths a commit's tree is built from HEAD's (`Git._tree_with`): it
# spares write-tree's read and rewrite of git's whole index, but hashes every path
# a second time beside update-index, which costs more than it spares for a big
# batch (docs/benchmarks.md, "Costs behind the code").
TREE_FROM_HEAD_MAX: Final = 100
# The git commands that read attributes to store, check out or merge content: each one
# runs after `Git.pin_attributes`.
_CONVERTING: Final = frozenset(
    {"add", "am", "apply", "checkout", "cherry-pick", "commit", "hash-object", "merge", "mv"}
    | {"read-tree", "rebase", "reset", "restore", "revert", "rm", "stash", "switch"}
    | {"update-index"}
)


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
        self._stderr: IO[bytes] | None = None
        if faults.git_step(("fast-import",)):
            return  # the test seam's full disk: the blobs are written loose (or not at all)
        try:  # a full temporary folder only costs the speed: the blobs are written loose
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by wait()
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
        if self._proc is None or self._stderr is None:
            self._close()
            return False
        ok = self._proc.wait() == 0
        if not ok:
            self._stderr.seek(0)
            message = self._stderr.read().decode("utf-8", "replace").strip()
            log.warning("git fast-import failed (the blobs are written loose): %s", message)
        self._close()
        return ok

    def _close(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def kill(self) -> None:
        """Stop the import (the write is being abandoned); a partial pack is git's to discard."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
        self._close()


class Git:
    """A repository's git, run as plumbing subprocesses."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._identity_env: dict[str, str] | None = None
        self._filemode: bool | None = None
        self._attributes_pinned = False

    # -- running -----------------------------------------------------------
    def _env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("GIT_TERMINAL_PROMPT", "0")
        env.pop("GIT_DIR", None)
        env.pop("GIT_WORK_TREE", None)
        if extra:
            env.update(extra)
        return env

    def pin_attributes(self) -> None:
        """Make memhtml's git attributes win over any `.gitattributes` (once per Git):
        `store/attributes.py` says why. Every command that stores, checks out or merges
        content calls it first, so no write depends on attributes a commit can set."""
        if not self._attributes_pinned:
            from memhtml.store import attributes

            attributes.ensure(self.root)
            self._attributes_pinned = True

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
    ) -> bytes:
        """Run `git <args>` in the root; stdout bytes, GitError on failure when `check`."""
        if not self._attributes_pinned and args and args[0] in _CONVERTING:
            self.pin_attributes()
        proc = self._exec(args, stdin=stdin, env=env)
        if check and proc.returncode != 0:
            raise self.failure(args, proc.stderr)
        return proc.stdout

    def attempt(
        self, *args: str, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """Run `git <args>` and return its whole outcome (exit code, stdout, stderr) without
        raising: for a command whose refusal is itself an answer to report (a merge's
        conflicts, which git words on stdout). `failure` makes the error when it is not."""
        if not self._attributes_pinned and args and args[0] in _CONVERTING:
            self.pin_attributes()
        return self._exec(args, env=env)

    def _exec(
        self,
        args: Sequence[str],
        *,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """`git <args>` run to its end (the fault seam of memhtml.store.faults applies)."""
        verdict = faults.git_step(tuple(args))
        if verdict == "before":
            return subprocess.CompletedProcess(["git", *args], 128, b"", faults.GIT_FULL_STDERR)
        try:
            with span("memhtml.git", git_command=args[0] if args else ""):
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
        if verdict == "after":
            return subprocess.CompletedProcess(proc.args, 128, proc.stdout, faults.GIT_FULL_STDERR)
        return proc

    def failure(self, args: Sequence[str], stderr: bytes) -> MemhtmlError:
        """The error for a failed git command: DiskFullError when git says the disk (or the
        quota) is full, naming the repository's file system; GitError otherwise."""
        err = stderr.decode("utf-8", "replace").strip()
        if is_disk_full_text(err):
            from memhtml.store.space import disk_full_error

            return disk_full_error(self.root / ".git", doing=f"git {args[0]} ran ({err})")
        return GitError(f"git {args[0]} failed: {err}", details={"args": list(args)})

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
            text = err.decode("utf-8", "replace").strip()
            if is_disk_full_text(text):
                from memhtml.store.space import disk_full_error

                raise disk_full_error(None, doing=f"git status ran ({text})")
            raise GitError(f"git status failed: {text}")
        return parse_status(out)

    def staged_paths(self, head: str | _Unset | None = _UNSET) -> list[str]:
        """Paths whose index entry differs from HEAD (a user's staged work).

        `head` is HEAD's commit when the caller already knows it (None: unborn),
        which saves a `rev-parse`.
        """
        current = self.head() if isinstance(head, _Unset) else head
        return _paths_z(self.run(*_staged_argv(current)))

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

    @traced("memhtml.git.commit")
    def commit_paths(
        self,
        paths: Sequence[str],
        message: str,
        expected_head: str | None,
    ) -> str:
        """Commit exactly `paths` (as they are in the working tree; absent = deleted).

        Other staged or unstaged work of the user is neither committed nor
        touched. HEAD moves by compare-and-swap from `expected_head`, so a
        commit made behind our back is a WriteConflictError, not a lost write.

        The commit's tree is HEAD's with `paths` changed, built from HEAD's
        trees (`_tree_with`) instead of by `write-tree`, which reads and
        rewrites git's whole index; where that declines, from an index
        (`_tree_from_index`). Meanwhile `update-index` stages `paths` in git's index,
        and HEAD moves only once that succeeded: a commit that fails may leave
        them staged (the write door puts them back with `reset_paths`), and no
        git process outlives this call.
        """
        if not paths:
            raise GitError("nothing to commit")
        listing = b"\x00".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\x00"
        # Staging reads and rewrites git's whole index: it runs while the tree is built.
        staging = self._start(["update-index", "--add", "--remove", "-z", "--stdin"], listing)
        try:
            tree = (
                self._tree_with(expected_head, paths) if len(paths) <= TREE_FROM_HEAD_MAX else None
            )
            if tree is None:
                staging.wait()
                tree = self._tree_from_index(paths, listing, expected_head)
            env: dict[str, str] = dict(self._identity_env or {})
            sha = self._commit_tree(tree, [expected_head] if expected_head else [], message, env)
            staging.wait()  # the commit lands only with its paths staged
        finally:
            staging.reap()
        args = ("update-ref", "-m", message.splitlines()[0], "HEAD", sha, expected_head or NULL_SHA)
        proc = self._exec(args, env=env)
        if proc.returncode != 0:
            if self.head() == sha:
                # HEAD names our commit: it landed, whatever git said after (a reflog line
                # the full disk refused); the acknowledgement must say so.
                log.warning(
                    "git update-ref failed after HEAD moved to %s: %s",
                    sha,
                    proc.stderr.decode("utf-8", "replace").strip(),
                )
                return sha
            if is_disk_full_text(proc.stderr.decode("utf-8", "replace")):
                raise self.failure(args, proc.stderr)
            raise WriteConflictError(
                "HEAD moved while committing (another writer committed first)",
                suggestions=["retry the write"],
            )
        return sha

    def _tree_with(self, base: str | None, paths: Sequence[str]) -> str | None:
        """The tree of commit `base` (None: no commit yet) with `paths` as the working tree
        has them, built without reading git's index; None where this might not be what
        `write-tree` of the index with `paths` staged makes.

        `hash-object -w` names (and writes) the paths' blobs, with the filters
        `update-index` applies, while `cat-file` reads `base`'s trees along the way;
        modes follow git's rule for a regular file (executable or not). The new trees
        are written deepest first by one `mktree`, which must name each one as computed
        here. None: a path that is not a regular file, `core.filemode` not on in the
        repository's config, a path where `base` has a tree or a gitlink (or a blob on
        its way), a tree left empty at the root, or any disagreement with git.
        """
        paths = list(dict.fromkeys(paths))
        if not self._filemode_on():
            return None
        modes: dict[str, bytes] = {}
        for path in paths:
            try:
                st = os.lstat(self.root / path)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode):
                return None
            modes[path] = b"100755" if st.st_mode & stat.S_IXUSR else b"100644"
        present = list(modes)
        dirs = sorted({d for p in paths for d in trees.ancestors(p)}, key=trees.depth, reverse=True)
        naming = (
            self._start(["hash-object", "-w", "--stdin-paths"], _lines(present))
            if present
            else None
        )
        try:
            names = [f"{base}:{d}" if d else f"{base}^{{tree}}" for d in dirs] if base else []
            out = self.run("cat-file", "--batch", stdin=_lines(names)) if names else b""
        finally:
            if naming is not None:
                naming.reap()
        blob_ids = naming.wait().split() if naming is not None else []
        found = trees.read_trees(out, len(dirs)) if base else [None] * len(dirs)
        if found is None or len(blob_ids) != len(present):
            return None
        entries = {d: trees.tree_entries(t) for d, t in zip(dirs, found, strict=True)}
        for path in paths:
            parent, _, name = path.rpartition("/")
            key = name.encode("utf-8", "surrogateescape")
            old = entries[parent].pop(key, None)
            if old is not None and old[0] in (trees.TREE_MODE, trees.GITLINK_MODE):
                return None
            if path in modes:
                entries[parent][key] = (modes[path], bytes.fromhex(blob_ids.pop(0).decode()))
        return self._make_trees(dirs, entries)

    def _make_trees(
        self, dirs: Sequence[str], entries: dict[str, dict[bytes, trees.Entry]]
    ) -> str | None:
        """Write the trees of `dirs` (deepest first) with their `entries`; the root's id, or
        None when the root would be empty or `git mktree` names a tree otherwise."""
        expected: list[str] = []
        batch: list[bytes] = []
        for d in dirs:
            tree = entries[d]
            parent, _, name = d.rpartition("/")
            if not tree and d:
                entries[parent].pop(name.encode("utf-8", "surrogateescape"), None)
                continue
            if not tree:
                return None
            oid = trees.tree_object_id(tree)
            if d:
                entries[parent][name.encode("utf-8", "surrogateescape")] = (trees.TREE_MODE, oid)
            expected.append(oid.hex())
            batch.append(
                b"".join(
                    b"%s %s %s\t%s\x00"
                    % (mode, trees.KIND.get(mode, b"blob"), sha.hex().encode(), key)
                    for key, (mode, sha) in tree.items()
                )
            )
        try:
            # --missing: no lookup per entry (each one names a blob `hash-object -w` wrote,
            # a tree of this batch, or an entry of HEAD's trees).
            made = self.run("mktree", "-z", "--missing", "--batch", stdin=b"\x00".join(batch))
        except GitError as exc:
            log.warning("git mktree refused a tree (writing it from an index): %s", exc)
            return None
        if [m.decode() for m in made.split()] != expected:
            log.warning("git mktree named a tree otherwise (writing it from an index)")
            return None
        return expected[-1]

    def _tree_from_index(
        self,
        paths: Sequence[str],
        listing: bytes,
        expected_head: str | None,
    ) -> str:
        """`write-tree` of git's index (`paths` staged in it already), or, when the user has
        staged other work, of a private index read from `expected_head` plus `paths`."""
        ours = set(paths)
        if all(p in ours for p in self.staged_paths(expected_head)):
            return self.run("write-tree").decode().strip()
        temp_index = Path(self.text("rev-parse", "--git-path", "memhtml-index"))
        if not temp_index.is_absolute():
            temp_index = self.root / temp_index
        env = {"GIT_INDEX_FILE": str(temp_index)}
        try:
            if expected_head:
                self.run("read-tree", expected_head, env=env)
            else:
                self.run("read-tree", "--empty", env=env)
            self.run("update-index", "--add", "--remove", "-z", "--stdin", stdin=listing, env=env)
            return self.run("write-tree", env=env).decode().strip()
        finally:
            temp_index.unlink(missing_ok=True)

    def _filemode_on(self) -> bool:
        """True when the repository's own config turns `core.filemode` on (as `git init`
        writes it where the file system keeps the executable bit); read once per Git."""
        if self._filemode is None:
            self._filemode = trees.filemode_on_in(self.root / ".git" / "config")
        return self._filemode

    def _start(self, args: list[str], stdin: bytes) -> _Job:
        """`git <args>` started with `stdin`, fed and read on a thread (`_Job.wait`)."""
        if not self._attributes_pinned and args[0] in _CONVERTING:
            self.pin_attributes()
        return _Job(self, args, stdin)

    def reset_paths(self, paths: Sequence[str]) -> bool:
        """Put the index entries of `paths` back to HEAD (after a failed commit); False when
        git could not (a full disk: it rewrites its index file), which the caller reports."""
        head = self.head() if paths else None
        if head is None:
            return True
        staged = self._exec(("diff-index", "--cached", "--name-only", "-z", head, "--", *paths))
        if staged.returncode == 0 and not staged.stdout:
            return True  # nothing of theirs is staged: no index to rewrite
        return self._exec(("reset", "-q", "HEAD", "--", *paths)).returncode == 0


class _Job:
    """A git process that runs while the caller does other work (`Git._start`): a thread
    feeds its stdin and collects its output, so a large input never blocks the caller."""

    def __init__(self, git: Git, args: list[str], stdin: bytes) -> None:
        self._git = git
        self._args = args
        self._out: tuple[bytes, bytes] = (b"", b"")
        self._returncode = 0
        self._verdict = faults.git_step(tuple(args))
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        if self._verdict == "before":  # the test seam's full disk: git never starts
            self._out, self._returncode = (b"", faults.GIT_FULL_STDERR), 128
            return
        try:
            self._proc = subprocess.Popen(
                ["git", *args],
                cwd=git.root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=git._env(),
            )
        except FileNotFoundError as exc:
            raise GitError("git is not installed or not on PATH") from exc
        self._thread = threading.Thread(target=self._communicate, args=(stdin,), daemon=True)
        self._thread.start()

    def _communicate(self, stdin: bytes) -> None:
        assert self._proc is not None
        self._out = self._proc.communicate(stdin)
        self._returncode = self._proc.returncode
        if self._verdict == "after":
            self._out, self._returncode = (self._out[0], faults.GIT_FULL_STDERR), 128

    def reap(self) -> None:
        """Wait for the process to end (it never outlives the caller's step)."""
        if self._thread is not None:
            self._thread.join()

    def wait(self) -> bytes:
        """Its stdout once it ended; GitError (DiskFullError for a full disk) when it failed."""
        self.reap()
        if self._returncode != 0:
            raise self._git.failure(self._args, self._out[1])
        return self._out[0]


def _lines(items: Sequence[str]) -> bytes:
    return "".join(item + "\n" for item in items).encode("utf-8", "surrogateescape")


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
