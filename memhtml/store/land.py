"""Landing a finished commit on the checked-out branch: nothing half-applied, ever.

`git merge` (and `merge --ff-only`) write the working tree file by file with
git's own checkout, which truncates a file before it writes it, and move the
branch afterwards: a process stopped midway leaves hundreds of files changed
under an unmoved HEAD, one of them possibly empty, and a `MERGE_HEAD` that
refuses the next merge. Landing instead takes a commit built beforehand with
plumbing (a fast-forward's target, or a merge commit from
`git merge-tree --write-tree` and `commit-tree`) and moves the branch to it the
way a write door commits (memhtml.store.recovery):

1. the batch journal records the parent and the blob each path will hold;
2. each changed file is written atomically (temp file + rename) and the
   exact previous bytes are kept;
3. git's index takes the target's entries for exactly those paths
   (`update-index --index-info`: by blob id, so no attribute or filter can
   make what is staged differ from the commit);
4. `update-ref HEAD <target> <head>`, a compare-and-swap, is the one step
   that lands it;
5. the journal goes.

An exception, SIGTERM (which the entry points raise as `Terminated`) or SIGINT
before step 4 puts every byte and index entry back; a SIGKILL leaves the
journal, and the next writer (every write door, `doctor --fix`, sleep's own
commands) settles it: while HEAD has not moved the files holding the target's
bytes are rolled back, once it has they all equal HEAD and only git's index
entries are reset to it. Either way main is unchanged or fully moved, and the
tree is clean.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.errors import GitError, StorageError, WriteConflictError
from memhtml.store import recovery
from memhtml.store.files import FileChange, apply_changes
from memhtml.store.git import NULL_SHA, Git

REGULAR: Final = ("100644", "100755")
EXECUTABLE: Final = "100755"


@dataclass(frozen=True)
class TreeChange:
    """One path that differs between two commits: the target's mode and blob (None: gone)."""

    path: str
    mode: str | None
    blob: str | None


@dataclass
class Landed:
    """What landing a commit did."""

    head: str
    previous: str
    changed: list[str] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"head_sha": self.head, "previous_head": self.previous, "changed": len(self.changed)}


def tree_changes(git: Git, old: str, new: str) -> list[TreeChange]:
    """Every path whose entry differs between two commits (renames as removal plus
    addition), from one `git diff-tree`."""
    out = git.run("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new)
    fields = out.split(b"\x00")
    changes: list[TreeChange] = []
    i = 0
    while i + 1 < len(fields) and fields[i]:
        meta = fields[i].decode().lstrip(":").split(" ")
        path = fields[i + 1].decode("utf-8", "surrogateescape")
        i += 2
        new_mode, new_blob, status = meta[1], meta[3], meta[4]
        if status == "D":
            changes.append(TreeChange(path, None, None))
        else:
            changes.append(TreeChange(path, new_mode, new_blob))
    return changes


def refuse_unlandable(changes: Sequence[TreeChange]) -> None:
    """GitError naming every path whose new entry is not a plain file (a symlink or a
    submodule): landing writes files, and such a change is for git by hand."""
    odd = [c.path for c in changes if c.mode is not None and c.mode not in REGULAR]
    if odd:
        raise GitError(
            f"the commit to land changes {len(odd)} path(s) that are not plain files"
            f" ({', '.join(odd[:5])}); nothing was changed",
            suggestions=["merge it by hand with git, then run memhtml index update"],
            details={"paths": odd[:50]},
        )


def land(git: Git, root: Path, head: str, target: str, message: str) -> Landed:
    """Move the checked-out branch from `head` to `target` and bring the working tree and
    git's index along (the caller holds the repository lock and checked the tree is clean).

    Raises WriteConflictError when HEAD is no longer `head`; after any failure before the
    branch moved, the tree and git's index are exactly as they were.
    """
    if git.head() != head:
        raise WriteConflictError(
            "HEAD moved before the merge could land (another writer committed); nothing changed",
            suggestions=["retry the merge"],
        )
    diff = tree_changes(git, head, target)
    refuse_unlandable(diff)
    blobs = git.cat_blobs(c.blob for c in diff if c.blob is not None)
    changes = [
        FileChange(c.path, None if c.blob is None else blobs[c.blob])
        for c in diff
        if c.blob is None or c.blob in blobs
    ]
    if len(changes) != len(diff):
        raise GitError(f"the commit {target[:12]} names blobs the object store lacks")
    recovery.begin(root, head, changes)
    entries_back = True
    try:
        touched, undo = apply_changes(root, changes)  # restores itself on failure
        try:
            _executable_bits(root, diff)
            _stage(git, diff)
            _move_head(git, head, target, message)
        except BaseException:
            if git.head() == head:  # it did not land: every byte and entry goes back
                undo.restore(root)
                entries_back = _reset_entries(git, root, touched)
            raise
    except BaseException as exc:
        if git.head() != head or not entries_back:
            raise  # the journal stays: the next writer settles what is left
        recovery.end(root)
        if isinstance(exc, OSError):
            raise StorageError(
                f"cannot write the working tree while landing {target[:12]} ({exc});"
                " main unchanged, every file put back",
                suggestions=["free the path or the space named, then retry"],
            ) from exc
        raise
    recovery.end(root)
    return Landed(head=target, previous=head, changed=[c.path for c in diff])


def _reset_entries(git: Git, root: Path, paths: Sequence[str]) -> bool:
    """Put git's index entries of `paths` back to HEAD; False when git would not (the
    journal then stays for the next writer). An interrupted git child (killed by
    `subprocess.run` on the way out) may have left its index lock: no git runs in
    the root now that it was reaped, so the lock is stale and goes first."""
    if not paths:
        return True  # (an empty pathspec would reset every entry, the user's staged work too)
    recovery.clear_stale_git_lock(root)
    try:
        listing = b"".join(p.encode("utf-8", "surrogateescape") + b"\x00" for p in paths)
        git.run(
            "--literal-pathspecs",
            "reset",
            "-q",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            "HEAD",
            stdin=listing,
        )
    except GitError:
        return False
    return True


def _executable_bits(root: Path, diff: Sequence[TreeChange]) -> None:
    """Give a file the target records as executable its x bits (a write keeps the old mode
    or makes an ordinary file), and take them from one it records as plain."""
    for change in diff:
        if change.mode is None:
            continue
        target = root / change.path
        mode = stat.S_IMODE(target.lstat().st_mode)
        want = mode | ((mode & 0o444) >> 2) if change.mode == EXECUTABLE else mode & ~0o111
        if want != mode:
            os.chmod(target, want)


def _stage(git: Git, diff: Sequence[TreeChange]) -> None:
    """git's index takes the target's entries for exactly the changed paths (by blob id),
    then refreshes their stat data so `status` sees a clean tree without rehashing."""
    lines = b"".join(
        (f"{c.mode} {c.blob}\t".encode() if c.blob is not None else f"0 {NULL_SHA}\t".encode())
        + c.path.encode("utf-8", "surrogateescape")
        + b"\x00"
        for c in diff
    )
    if lines:
        _through(git, "update-index", "-z", "--index-info", stdin=lines)
    _through(git, "update-index", "-q", "--refresh", check=False)


def _move_head(git: Git, head: str, target: str, message: str) -> None:
    """The one step that lands it: HEAD's branch from `head` to `target`, compare-and-swap."""
    env = git.identity_env()
    subject = message.splitlines()[0] if message else "memhtml: land"
    try:
        _through(git, "update-ref", "-m", subject, "HEAD", target, head, env=env)
    except GitError as exc:
        raise WriteConflictError(
            "HEAD moved while the merge was landing (another writer committed); main unchanged",
            suggestions=["retry the merge"],
        ) from exc


def _through(
    git: Git,
    *args: str,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> bytes:
    """`git ARGS` run to its end even when this process is asked to stop meanwhile.

    `subprocess.run` kills its child when the wait is interrupted (SIGTERM raised as
    `Terminated`, SIGINT), and a git killed halfway through `update-index` or
    `update-ref` leaves its lock file, which refuses every later write. Here git
    finishes what it started and the interrupt is raised afterwards, so the caller
    rolls back (or, once HEAD moved, leaves the journal) with git's files whole.
    """
    import subprocess

    proc = subprocess.Popen(
        ["git", *args],
        cwd=git.root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=git._env(env),
    )
    stop: BaseException | None = None
    feed: bytes | None = stdin or b""
    while True:
        try:
            out, err = proc.communicate(feed)
            break
        except BaseException as exc:  # git first; the interrupt once it is done
            stop = stop or exc
            feed = None  # communicate resumes the input it already took
    if stop is not None:
        raise stop
    if check and proc.returncode != 0:
        message = err.decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0]} failed: {message}", details={"args": list(args)})
    return out


def merge_tree(git: Git, ours: str, theirs: str) -> tuple[str, list[str]]:
    """The tree of merging `theirs` into `ours`, written to the object store without a
    working tree or git's index (`git merge-tree --write-tree`, with the repository's
    merge drivers), and the conflicted paths (empty: a clean merge).

    GitError when git cannot merge the two at all.
    """
    import subprocess

    proc = subprocess.run(
        ["git", "merge-tree", "--write-tree", "-z", "--name-only", ours, theirs],
        cwd=git.root,
        capture_output=True,
        env=git._env(),
        check=False,
    )
    fields = proc.stdout.split(b"\x00")
    tree = fields[0].decode().strip() if fields else ""
    if proc.returncode not in (0, 1) or len(tree) != 40:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(
            f"git merge-tree failed: {err or 'no tree'}", details={"args": [ours, theirs]}
        )
    conflicts: list[str] = []
    if proc.returncode == 1:
        for name in fields[1:]:
            if not name:
                break
            conflicts.append(name.decode("utf-8", "surrogateescape"))
    return tree, list(dict.fromkeys(conflicts))


def commit_tree(git: Git, tree: str, parents: Sequence[str], message: str) -> str:
    """A commit object of `tree` (nothing moves: `land` does that)."""
    args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p))]
    return git.run(*args, stdin=message.encode("utf-8"), env=git.identity_env()).decode().strip()
