"""`memhtml sync`: one memory shared across machines through a git remote.

Each machine holds a clone; a remote carries the commits; each clone's index
is a local projection. A sync, under the repository lock:

1. settles a killed writer, refuses an unresolved earlier sync (finish it with
   git, or `sync --abort`) and a dirty tree;
2. fetches the remote's branch (the one HEAD is on);
3. integrates it: nothing to do, a fast-forward, or a merge commit through
   the `*.html` merge driver (head-only divergence merges clean). Never a
   rebase: a memory someone cited by commit keeps its commit. Two histories
   with no common commit are refused;
4. on a conflict (both sides changed one memory's article) stops with
   `ERR_SYNC_CONFLICT`, listing the paths and both versions' claims, and
   leaves git's merge in progress for a person to resolve with ordinary git
   (conflict markers stay in the working tree, never in a commit: every write
   door refuses while the merge is unresolved) or `sync --abort`;
5. folds a fact both sides wrote independently (one content at two paths)
   into the older copy, the later one archived with `supersedes` (one commit);
6. pushes; a push the remote rejected because it moved meanwhile fetches and
   integrates again, at most MAX_ROUNDS times;
7. catches the index up with exactly what changed (renames as renames, so
   vectors are kept).

The state plane stays local (per-machine usage); `state export` carries it in
the tree for those who want it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import (
    DirtyTreeError,
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
    git.run("fetch", "--quiet", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")
    return git.resolve_commit(f"refs/remotes/{remote}/{branch}")


def _claims(git: Git, path: str) -> dict[str, str | None]:
    from memhtml.html import parse_memory

    out: dict[str, str | None] = {}
    for side, stage in (("ours", 2), ("theirs", 3)):
        data = git.run("show", f":{stage}:{path}", check=False)
        out[side] = parse_memory(data).gist or None if data else None
    return out


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
    if not git.text("merge-base", head, theirs, check=False):
        raise RemoteError(
            f"{remote}/{branch} shares no history with this clone; nothing was merged",
            suggestions=["memhtml init --clone <url> into an empty folder instead"],
            details={"reason": "unrelated", "remote": remote},
        )
    message = f"memhtml(sync): merge {remote}/{branch}\n"
    try:
        git.run("merge", "--no-ff", "--no-edit", "--quiet", "-m", message, theirs, env=env)
    except GitError as exc:
        conflicted = git.text("diff", "--name-only", "--diff-filter=U", check=False).splitlines()
        if not merge_in_progress(corpus.root):
            raise  # not a conflict: git refused before merging (nothing to resolve)
        listed = [{"path": p, **_claims(git, p)} for p in conflicted[:MAX_LISTED]]
        raise SyncConflictError(
            f"both sides changed {len(conflicted)} memory article(s); the merge is left for"
            " you to resolve",
            suggestions=[
                "edit each conflicted file, `git add` it, then `git commit`",
                "memhtml sync --abort (back to where the sync started)",
            ],
            details={"conflicts": listed, "count": len(conflicted), "git": exc.message},
        ) from exc
    return "merge"


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


def _push(git: Git, remote: str, branch: str) -> bool:
    """Push; False when the remote moved meanwhile (a non-fast-forward rejection)."""
    try:
        git.run("push", "--quiet", remote, f"HEAD:refs/heads/{branch}")
    except GitError as exc:
        text = exc.message.lower()
        # a race ("fetch first", "non-fast-forward") is retried; a remote that refuses the
        # push itself ("[remote rejected]": a hook, a protected branch) is not a race
        if "non-fast-forward" in text or "fetch first" in text:
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


def sync(corpus: Corpus, *, remote: str | None = None, push: bool = True) -> dict[str, Any]:
    """Fetch, integrate, fold cross-clone duplicates, push, index: the `sync.report` payload."""
    git = corpus.git
    with corpus.lock.hold():
        corpus.recover()
        refuse_unresolved(corpus.root)
        dirty = sorted({e.path for e in git.status(())})
        if dirty:
            raise DirtyTreeError(
                f"the working tree has {len(dirty)} uncommitted change(s); sync needs a clean tree",
                suggestions=["commit or discard them: git status"],
                details={"paths": dirty[:MAX_LISTED]},
            )
        branch = _branch(git)
        name = pick_remote(git, branch, remote)
        start = git.head()
        received = sent = 0
        modes: list[str] = []
        folded: list[dict[str, str]] = []
        pushed = False
        for _round in range(MAX_ROUNDS):
            theirs = _fetch(git, name, branch)
            before = git.head()
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
    """Clone `url` into the empty folder `root`, register the merge driver (as `init`)."""
    import os
    import subprocess

    from memhtml.store.git import Git
    from memhtml.store.layout import init_repo

    root = Path(root).expanduser().absolute()
    if root.exists() and any(root.iterdir()):
        raise InvalidFlagError(
            f"{root} is not empty; --clone needs an empty or new folder",
            details={"field": "root"},
        )
    root.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["git", "clone", "--quiet", "--", url, str(root)],
        capture_output=True,
        check=False,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
    )
    if proc.returncode != 0:
        raise RemoteError(
            f"cloning {url} failed: {proc.stderr.decode('utf-8', 'replace').strip()}",
            details={"reason": "unreachable", "remote": url},
        )
    _track_a_remote_branch(Git(root))
    report = init_repo(root)
    return {"root": str(root), "url": url, "init": report.__dict__}


def _track_a_remote_branch(git: Git) -> None:
    """After a clone, be on a branch the remote has: a bare remote whose HEAD names a branch
    it does not hold (`master` beside `main`) leaves the clone on an orphan name."""
    branch = _branch(git)
    if git.resolve_commit(f"refs/remotes/origin/{branch}") is not None:
        return
    held = [
        r.removeprefix("refs/remotes/origin/")
        for r in git.text("for-each-ref", "--format=%(refname)", "refs/remotes/origin/").split()
        if not r.endswith("/HEAD")
    ]
    if not held:
        return  # an empty remote: the first push creates the branch
    pick = "main" if "main" in held else sorted(held)[0]
    git.run("checkout", "--quiet", "-B", pick, "--track", f"origin/{pick}")
