"""`memhtml sync`: one memory shared across machines through a git remote.

Each machine holds a clone; a remote carries the commits; each clone's index
is a local projection. A sync, under the repository lock:

1. settles a killed writer, refuses an unresolved earlier sync (finish it with
   git, or `sync --abort`) and a dirty tree;
2. fetches the remote's branch (the one HEAD is on), git checking every object;
3. checks every incoming commit (`memhtml.store.incoming`): a commit that brings
   anything but memory files and memhtml's scaffold (the planes, a
   `.gitattributes` of the remote's own, a symlink, an oversized file, a name
   with a control character...) or that deletes more memories than allowed
   (without `allow_deletions`) refuses the sync with ERR_REMOTE before anything
   lands: only the remote-tracking ref and the object store have moved;
4. integrates it: nothing to do, a fast-forward, or a merge commit through
   the `*.html` merge driver (head-only divergence merges clean). Never a
   rebase: a memory someone cited by commit keeps its commit. Two histories
   with no common commit are refused (before the check);
5. on a conflict (both sides changed one memory's article) stops with
   `ERR_SYNC_CONFLICT`, listing the paths and both versions' claims, and
   leaves git's merge in progress for a person to resolve with ordinary git
   (conflict markers stay in the working tree, never in a commit: every write
   door refuses while the merge is unresolved) or `sync --abort`;
6. folds a fact both sides wrote independently (one content at two paths)
   into the older copy, the later one archived with `supersedes` (one commit);
7. pushes; a push the remote rejected because it moved meanwhile fetches and
   integrates again, at most MAX_ROUNDS times;
8. catches the index up with exactly what changed (renames as renames, so
   vectors are kept).

The state plane stays local (per-machine usage); `state export` carries it in
the tree for those who want it. memhtml's git attributes live in
`.git/info/attributes` (`memhtml.store.attributes`), which outranks any
`.gitattributes` a commit brings: the merge driver and the bytes a write
stores are memhtml's whatever the tree says.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import (
    GitError,
    InvalidFlagError,
    RemoteError,
    SyncConflictError,
)

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus
    from memhtml.store.git import Git

MAX_ROUNDS: Final = 3
MAX_LISTED: Final = 50
FOLD_REASON: Final = "sync: the same fact was written on two machines"


# -- git state --------------------------------------------------------------------


def merge_in_progress(root: Path) -> bool:
    """True while a merge (a sync's or a person's) is unresolved in this clone."""
    return (root / ".git" / "MERGE_HEAD").exists()


def refuse_unresolved(root: Path) -> None:
    """ERR_SYNC_CONFLICT when a merge is unresolved: a write now would commit markers or
    mix a write into a person's resolution."""
    if merge_in_progress(root):
        raise SyncConflictError(
            "a sync merge is unresolved in this clone; nothing is written until it is",
            suggestions=[
                "resolve the conflicted files, then `git add` them and `git commit`",
                "memhtml sync --abort (back to where the sync started)",
            ],
            details={"reason": "unresolved"},
        )


def _branch(git: Git) -> str:
    from memhtml.store.branch import current_branch

    ref = current_branch(git)
    if ref is None or not ref.startswith("refs/heads/"):
        raise GitError(
            "HEAD is detached; sync works on a branch", suggestions=["git checkout main"]
        )
    return ref.removeprefix("refs/heads/")


def remotes(git: Git) -> list[str]:
    """The remotes configured in this clone."""
    return [r for r in git.text("remote").splitlines() if r.strip()]


def pick_remote(git: Git, branch: str, name: str | None) -> str:
    """`name`, else the branch's upstream remote, else the only remote; a typed refusal."""
    known = remotes(git)
    if name is not None:
        if name not in known:
            raise RemoteError(
                f"no remote named {name!r}" + (f" (known: {', '.join(known)})" if known else ""),
                suggestions=[f"memhtml remote add {name} <url>"],
                details={"reason": "unknown", "remotes": known},
            )
        return name
    upstream = git.text("config", "--get", f"branch.{branch}.remote", check=False)
    if upstream in known:
        return upstream
    if len(known) == 1:
        return known[0]
    raise RemoteError(
        "no remote configured" if not known else f"several remotes ({', '.join(known)}); name one",
        suggestions=["memhtml remote add origin <url>", "memhtml sync --remote NAME"],
        details={"reason": "none" if not known else "ambiguous", "remotes": known},
    )


def ahead_behind(git: Git) -> dict[str, Any] | None:
    """Commits ahead of and behind the upstream as last fetched (None: no remote)."""
    try:
        branch = _branch(git)
        remote = pick_remote(git, branch, None)
    except (RemoteError, GitError):
        return None
    theirs = git.resolve_commit(f"refs/remotes/{remote}/{branch}")
    head = git.head()
    if theirs is None or head is None:
        return {"remote": remote, "branch": branch, "ahead": None, "behind": None}
    out = git.text("rev-list", "--left-right", "--count", f"{head}...{theirs}", check=False)
    ahead, _, behind = out.partition("\t")
    return {
        "remote": remote,
        "branch": branch,
        "ahead": int(ahead or 0),
        "behind": int(behind or 0),
    }


def _count(git: Git, old: str | None, new: str | None) -> int:
    if old is None or new is None or old == new:
        return 0
    return int(git.text("rev-list", "--count", f"{old}..{new}", check=False) or 0)


# -- one round --------------------------------------------------------------------


def _fetch(git: Git, remote: str, branch: str) -> str | None:
    """Fetch the remote's `branch`; its commit (None when the remote has no such branch)."""
    import subprocess

    proc = subprocess.run(
        ["git", "ls-remote", "--heads", remote, f"refs/heads/{branch}"],
        cwd=git.root,
        capture_output=True,
        env=git._env(),
        check=False,
    )
    if proc.returncode != 0:
        raise RemoteError(
            f"the remote {remote!r} cannot be reached:"
            f" {proc.stderr.decode('utf-8', 'replace').strip()}",
            suggestions=[f"git remote get-url {remote}", "check the URL and the network"],
            details={"reason": "unreachable", "remote": remote},
        )
    if not proc.stdout.strip():
        return None  # an empty remote, or one without this branch yet: push creates it
    try:
        # git checks every object it receives (a malformed tree, a `.git` path component)
        git.run(
            "-c",
            "fetch.fsckObjects=true",
            "fetch",
            "--quiet",
            "--no-recurse-submodules",
            remote,
            f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}",
        )
    except GitError as exc:
        refused = "fsck" in exc.message.lower() or "bad object" in exc.message.lower()
        raise RemoteError(
            f"fetching from {remote!r} failed: {exc.message}",
            suggestions=["check the remote: git fsck on its side", "memhtml sync (to retry)"],
            details={"reason": "refused" if refused else "unreachable", "remote": remote},
        ) from exc
    return git.resolve_commit(f"refs/remotes/{remote}/{branch}")


def _claims(git: Git, path: str) -> dict[str, str | None]:
    from memhtml.html import parse_memory

    out: dict[str, str | None] = {}
    for side, stage in (("ours", 2), ("theirs", 3)):
        data = git.run("show", f":{stage}:{path}", check=False)
        out[side] = parse_memory(data).gist or None if data else None
    return out


def _refuse_unrelated(git: Git, remote: str, branch: str, head: str, theirs: str) -> None:
    """ERR_REMOTE (unrelated) when `theirs` shares no commit with `head`."""
    if not git.text("merge-base", head, theirs, check=False):
        raise RemoteError(
            f"{remote}/{branch} shares no history with this clone; nothing was merged",
            suggestions=["memhtml init --clone <url> into an empty folder instead"],
            details={"reason": "unrelated", "remote": remote},
        )


def _integrate(corpus: Corpus, remote: str, branch: str, theirs: str | None) -> str:
    """Bring `theirs` into HEAD: the mode used; ERR_SYNC_CONFLICT leaves the merge open."""

    git = corpus.git
    head = git.head()
    if theirs is None or head == theirs:
        return "up-to-date"
    if head is not None and git.is_ancestor(theirs, head):
        return "up-to-date"
    env = git.identity_env()
    if head is None or git.is_ancestor(head, theirs):
        git.run("merge", "--ff-only", "--quiet", theirs, env=env)
        return "fast-forward"
    message = f"memhtml(sync): merge {remote}/{branch}\n"
    # Not --quiet: git words each conflict on stdout ("CONFLICT (add/add): Merge conflict
    # in PATH"), and a person resolving it needs those words, not only our summary.
    args = ("merge", "--no-ff", "--no-edit", "-m", message, theirs)
    done = git.attempt(*args, env=env)
    if done.returncode == 0:
        return "merge"
    if not merge_in_progress(corpus.root):
        raise git.failure(args, done.stderr)  # git refused before merging: nothing to resolve
    conflicted = git.text("diff", "--name-only", "--diff-filter=U", check=False).splitlines()
    said = _git_said(done.stdout, done.stderr)
    listed = [
        {"path": p, **_claims(git, p), "git": _said_about(said, p)} for p in conflicted[:MAX_LISTED]
    ]
    first = listed[0]["git"] if listed and listed[0]["git"] else None
    raise SyncConflictError(
        f"both sides changed {len(conflicted)} memory article(s); the merge is left for"
        " you to resolve" + (f" (git: {first})" if first else ""),
        suggestions=[
            "edit each conflicted file, `git add` it, then `git commit`",
            "memhtml sync --abort (back to where the sync started)",
        ],
        details={"conflicts": listed, "count": len(conflicted), "git": "\n".join(said)},
    )


MAX_GIT_LINES: Final = 200


def _git_said(stdout: bytes, stderr: bytes) -> list[str]:
    """git's own lines about a merge (its CONFLICT lines, a driver's note), without the
    progress chatter ("Auto-merging PATH")."""
    text = (stdout + b"\n" + stderr).decode("utf-8", "replace")
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("Auto-merging ")][:MAX_GIT_LINES]


def _said_about(said: list[str], path: str) -> str | None:
    """git's CONFLICT line(s) naming `path` (None when git named it in none)."""
    about = [line for line in said if line.startswith("CONFLICT") and path in line]
    return " ".join(about) or None


def _fold_duplicates(corpus: Corpus) -> list[dict[str, str]]:
    """Fold each active memory the merge made a duplicate of another into the older copy."""
    from memhtml.html import parse_memory
    from memhtml.ops.fold import Batch, merge_into
    from memhtml.ops.tree import TreeView

    corpus.sync(worktree=False)
    rows = corpus.conn.execute(
        "SELECT path, substr(reason, length('duplicate content of ') + 1) FROM skipped_files"
        " WHERE reason LIKE 'duplicate content of %' AND path NOT LIKE 'archive/%'"
        " ORDER BY path"
    ).fetchall()
    if not rows:
        return []
    now = corpus.clock()
    view = TreeView(corpus.root)
    batch = Batch(corpus._planner(view, now), view)

    def created(path: str) -> str:
        return parse_memory(view.read(path)).created or ""

    folded: list[dict[str, str]] = []
    for copy_raw, holder_raw in rows:
        copy, holder = str(copy_raw), str(holder_raw)
        if not (view.exists(copy) and view.exists(holder)):
            continue
        if parse_memory(view.read(copy)).memory_type == "task":
            continue
        keep, drop = sorted((holder, copy), key=lambda p: (created(p), p))
        moved = merge_into(batch, drop, keep)
        if moved is not None:
            folded.append({"path": drop, "archived_to": moved.to, "into": keep})
    changes = view.changes()
    if changes:
        lines = "\n".join(f"  {f['path']} -> {f['into']}" for f in folded[:MAX_LISTED])
        corpus.commit_changes(
            changes,
            f"memhtml(sync): fold {len(folded)} fact(s) written on two machines\n\n{lines}\n",
            docs=batch.planner.docs,
            embedder=corpus.embedder,
            now=now,
        )
    return folded


_PUSH_RACES: Final = (
    "non-fast-forward",
    "fetch first",
    "cannot lock ref",
    "failed to update ref",
    "but expected",
)


def push_raced(message: str) -> bool:
    """Whether a failed push lost a race (retry after a fetch) rather than being refused."""
    text = message.lower()
    return any(race in text for race in _PUSH_RACES)


def _push(git: Git, remote: str, branch: str) -> bool:
    """Push; False when the remote moved meanwhile (a non-fast-forward rejection)."""
    try:
        git.run("push", "--quiet", remote, f"HEAD:refs/heads/{branch}")
    except GitError as exc:
        text = exc.message
        # a race is retried: the remote moved ("fetch first", "non-fast-forward"), or another
        # push held or moved the ref while this one updated it ("cannot lock ref", "failed
        # to update ref", "but expected"); a remote that refuses the push itself ("[remote
        # rejected]" by a hook, a protected branch) is not a race
        if push_raced(text):
            return False
        raise RemoteError(
            f"pushing to {remote!r} failed: {exc.message}",
            details={"reason": "push", "remote": remote},
        ) from exc
    return True


def _changed(git: Git, old: str | None, new: str | None) -> dict[str, int]:
    counts = {"added": 0, "changed": 0, "archived": 0, "renamed": 0, "deleted": 0}
    if old is None or new is None or old == new:
        return counts
    for entry in git.diff(old, new, ("projects/", "areas/", "resources/", "archive/")):
        status = entry.status[:1]
        if status == "R":
            archived = entry.path.startswith("archive/")
            counts["archived" if archived else "renamed"] += 1
        elif status == "A":
            counts["added"] += 1
        elif status == "M":
            counts["changed"] += 1
        elif status == "D":
            counts["deleted"] += 1
    return counts


# -- the commands -------------------------------------------------------------------


def sync(
    corpus: Corpus,
    *,
    remote: str | None = None,
    push: bool = True,
    allow_deletions: bool = False,
) -> dict[str, Any]:
    """Fetch, check, integrate, fold cross-clone duplicates, push, index: the `sync.report`
    payload. `allow_deletions` lets the remote delete more memories than
    `incoming.deletions_allowed` (ERR_REMOTE, reason `deletions`, without it)."""
    from memhtml.store import incoming

    git = corpus.git
    with corpus.lock.hold():
        corpus.recover()
        refuse_unresolved(corpus.root)
        # read-only: git refreshes no stat data into its index, so a refused sync leaves
        # git's index byte-identical too
        dirty = sorted({e.path for e in git.status((), read_only=True)})
        if dirty:
            from memhtml.ops.dirty import dirty_tree_error

            raise dirty_tree_error(corpus.root, dirty, needs="sync needs a clean tree")
        branch = _branch(git)
        name = pick_remote(git, branch, remote)
        start = git.head()
        received = sent = 0
        modes: list[str] = []
        folded: list[dict[str, str]] = []
        pushed = False
        checked = {"commits": 0, "paths": 0, "deleted": 0}
        for _round in range(MAX_ROUNDS):
            theirs = _fetch(git, name, branch)
            before = git.head()
            if theirs is not None and theirs != before:
                if before is not None:
                    _refuse_unrelated(git, name, branch, before, theirs)
                seen = incoming.check(
                    git,
                    theirs,
                    local=before,
                    source=f"{name}/{branch}",
                    allow_deletions=allow_deletions,
                )
                checked = {k: checked[k] + seen[k] for k in checked}
            received += _count(git, before, theirs)
            modes.append(_integrate(corpus, name, branch, theirs))
            folded += _fold_duplicates(corpus)
            head = git.head()
            # what the remote lacks: everything, when it has no such branch yet
            behind_them = [f"^{theirs}"] if theirs else []
            ahead = 0 if head is None else int(git.text("rev-list", "--count", head, *behind_them))
            if not push or ahead == 0:
                break
            if _push(git, name, branch):
                sent, pushed = ahead, True
                break
        else:
            raise RemoteError(
                f"{name} kept moving: {MAX_ROUNDS} pushes were rejected; this clone holds"
                " everything it fetched",
                suggestions=["memhtml sync"],
                details={"reason": "rejected", "remote": name},
            )
        report = corpus.sync(worktree=False)
        end = git.head()
    return {
        "remote": name,
        "branch": branch,
        "previous_head": start,
        "head_sha": end,
        "mode": next((m for m in reversed(modes) if m != "up-to-date"), "up-to-date"),
        "rounds": len(modes),
        "received": received,
        "sent": sent,
        "pushed": pushed,
        "files": _changed(git, start, end),
        "folded": folded,
        "checked": checked,
        "conflicts": [],
        "index": report.to_data() if report is not None else None,
    }


def abort(corpus: Corpus) -> dict[str, Any]:
    """Undo an unresolved sync merge: the clone is back where the sync started."""
    git = corpus.git
    with corpus.lock.hold():
        if not merge_in_progress(corpus.root):
            return {"aborted": False, "head_sha": git.head(), "reason": "no merge in progress"}
        git.run("merge", "--abort")
        corpus.sync(worktree=False)
        return {"aborted": True, "head_sha": git.head(), "reason": None}


def remote_add(corpus: Corpus, name: str, url: str) -> dict[str, Any]:
    """`git remote add NAME URL` (refused when NAME exists)."""
    git = corpus.git
    if not name.strip() or name.startswith("-") or any(c.isspace() for c in name):
        raise InvalidFlagError(f"remote name {name!r} is not a valid name")
    if name in remotes(git):
        raise RemoteError(
            f"a remote named {name!r} exists",
            suggestions=[f"git remote set-url {name} {url}"],
            details={"reason": "exists", "remote": name},
        )
    git.run("remote", "add", "--", name, url)
    return {"remote": name, "url": url, "remotes": remotes(git)}


def clone(url: str, root: Path) -> dict[str, Any]:
    """Clone `url` into the empty folder `root`, register the merge driver (as `init`).

    The clone is made without a checkout, memhtml's attributes are pinned, and
    the whole history of the branch it will be on is checked as a sync checks
    an incoming range (`memhtml.store.incoming`); a refused clone is removed,
    leaving `root` as it was.
    """
    import os
    import subprocess

    from memhtml.store import attributes, incoming
    from memhtml.store.git import Git
    from memhtml.store.layout import init_repo

    root = Path(root).expanduser().absolute()
    existed = root.exists()
    if existed and any(root.iterdir()):
        raise InvalidFlagError(
            f"{root} is not empty; --clone needs an empty or new folder",
            details={"field": "root"},
        )
    root.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["git", "clone", "--quiet", "--no-checkout", "--", url, str(root)],
        capture_output=True,
        check=False,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
    )
    if proc.returncode != 0:
        raise RemoteError(
            f"cloning {url} failed: {proc.stderr.decode('utf-8', 'replace').strip()}",
            details={"reason": "unreachable", "remote": url},
        )
    git = Git(root)
    try:
        attributes.ensure(root)
        branch, tip = _clone_branch(git)
        if tip is not None:
            incoming.check(git, tip, local=None, source=url)
        _check_out(git, branch, tip)
    except BaseException:
        _remove_clone(root, existed)
        raise
    report = init_repo(root)
    return {"root": str(root), "url": url, "init": report.__dict__}


def _clone_branch(git: Git) -> tuple[str, str | None]:
    """The branch a fresh clone is to be on, and the remote's commit of it (None: an empty
    remote). A bare remote whose HEAD names a branch it does not hold (`master` beside
    `main`) would leave the clone on an orphan name: the clone takes `main`, else the
    first branch the remote holds."""
    branch = _branch(git)
    tip = git.resolve_commit(f"refs/remotes/origin/{branch}")
    if tip is not None:
        return branch, tip
    held = [
        r.removeprefix("refs/remotes/origin/")
        for r in git.text("for-each-ref", "--format=%(refname)", "refs/remotes/origin/").split()
        if not r.endswith("/HEAD")
    ]
    if not held:
        return branch, None  # an empty remote: the first push creates the branch
    pick = "main" if "main" in held else sorted(held)[0]
    return pick, git.resolve_commit(f"refs/remotes/origin/{pick}")


def _check_out(git: Git, branch: str, tip: str | None) -> None:
    """Check the checked clone out on `branch` (tracking the remote's), or leave an empty one."""
    if tip is None:
        return
    if git.resolve_commit(f"refs/heads/{branch}") == tip:
        git.run("reset", "--hard", "--quiet", tip)
    else:
        git.run("checkout", "--quiet", "--force", "-B", branch, "--track", f"origin/{branch}")


def _remove_clone(root: Path, existed: bool) -> None:
    """Put `root` back as it was before a refused clone: absent, or empty."""
    from shutil import rmtree

    if not existed:
        rmtree(root, ignore_errors=True)
        return
    for child in root.iterdir():
        if child.is_dir() and not child.is_symlink():
            rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
