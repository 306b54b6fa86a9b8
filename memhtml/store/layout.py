"""Scaffolding a memory root: `memhtml init`.

Idempotent: an existing repository gets only the pieces it lacks, and a
commit only when something new was added.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import DiskFullError, GitError
from memhtml.store import attributes
from memhtml.store.files import write_atomic
from memhtml.store.git import Git

PARA_DIRS: Final[tuple[str, ...]] = (
    "projects",
    "areas",
    "areas/arcs",
    "areas/inbox",
    "resources",
    "resources/people",
    "archive",
)
SIDE_DIRS: Final[tuple[str, ...]] = (".memhtml/state", ".memhtml/sleep")
GITIGNORE_LINES: Final[tuple[str, ...]] = (
    "# memhtml: rebuildable or machine-local state",
    ".memhtml/index.db",
    ".memhtml/index.db-*",
    ".memhtml/state.db",
    ".memhtml/state.db-*",
    ".memhtml/vectors/",
    ".memhtml/*.lock",
)
GITATTRIBUTES_LINES: Final[tuple[str, ...]] = (
    "# memhtml: head-only edits (metas, links) merge without conflict markers",
    "*.html merge=memhtml diff=html",
    "index.html merge=ours",
    "sitemap.xml merge=ours",
)
# The scaffold's page: not a memory (no type), but its first sentence is an `article mark`
# as in the original's, so a guest script written for the original reads the same claim.
README_HTML: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Memory</title>
</head>
<body>
<article>
<p><mark>This repository is an agent's memory, kept by memhtml: one fact per HTML file.</mark>
The facts live under <code>projects/</code>, <code>areas/</code>, <code>resources/</code>
and <code>archive/</code>.</p>
<p>Every change is a commit; nothing is deleted, only moved into <code>archive/</code>. The
index under <code>.memhtml/</code> is derived from these files and gitignored. This page is
not itself a memory.</p>
</article>
</body>
</html>
"""


@dataclass
class InitReport:
    """What `init` found and did."""

    root: str
    created_repo: bool
    created: list[str] = field(default_factory=list)
    commit_sha: str | None = None


def merge_driver_command() -> str:
    """The merge driver command line git runs (this interpreter, so it works in any venv)."""
    return f"{shlex.quote(sys.executable)} -m memhtml.store.mergedriver %O %A %B %P"


def _ensure_lines(path: Path, lines: tuple[str, ...], created: list[str], rel: str) -> None:
    existing = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    missing = [ln for ln in lines if ln not in existing]
    if missing:
        write_atomic(path, ("\n".join(existing + missing) + "\n").encode())
        created.append(rel)


def _work_tree_root(root: Path) -> bool:
    """True when `root` is the top of a git work tree (not a folder inside another one)."""
    proc = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=root,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")},
        check=False,
    )
    if proc.returncode != 0:
        if (root / ".git").exists():  # a repository git refuses to read: never re-initialize it
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise GitError(f"init failed: {root} is a repository git cannot read: {err}")
        return False
    top = os.fsdecode(proc.stdout.rstrip(b"\n"))
    return Path(top).resolve() == root.resolve()


def _configure(git: Git) -> None:
    """The merge drivers, and an identity where git has none (a fresh machine's commits
    must still land): repository-local settings, each set only when it differs."""
    wanted = {
        "merge.memhtml.name": "memhtml head-aware merge",
        "merge.memhtml.driver": merge_driver_command(),
        "merge.ours.driver": "true",
    }
    for key, value in wanted.items():
        if git.text("config", "--local", "--get", key, check=False) != value:
            git.run("config", "--local", key, value)
    if not git.text("config", "--get", "user.email", check=False) and not git.run(
        "var", "GIT_COMMITTER_IDENT", check=False
    ):
        git.run("config", "--local", "user.name", "memhtml")
        git.run("config", "--local", "user.email", "memhtml@localhost")


def init_repo(root: str | os.PathLike[str]) -> InitReport:
    """Create or complete the memory root at `root` (a str or a path; `~` is expanded).

    Git's own commands do the work (`init`, `config`, `add`, `commit`) through the
    store's plumbing runner, so a failure is the store's typed error (a full disk
    is `ERR_DISK_FULL`).
    """
    root = Path(root).expanduser().absolute()
    root.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    git = Git(root)
    try:
        created_repo = not _work_tree_root(root)
        if created_repo:
            git.run("init", "-q", "--initial-branch=main")
        attributes.ensure(root)  # before anything is added: memhtml's attributes win
        for rel in PARA_DIRS + SIDE_DIRS:
            keep = root / rel / ".gitkeep"
            if not keep.exists():
                write_atomic(keep, b"")
                created.append(f"{rel}/.gitkeep")
        _ensure_lines(root / ".gitignore", GITIGNORE_LINES, created, ".gitignore")
        _ensure_lines(root / ".gitattributes", GITATTRIBUTES_LINES, created, ".gitattributes")
        readme = root / "README.html"
        if not readme.exists():
            write_atomic(readme, README_HTML.encode())
            created.append("README.html")
        _configure(git)
        commit_sha: str | None = None
        if created:
            git.run("add", "--", *created)
            has_head = git.head() is not None
            staged = (
                git.text("diff", "--cached", "--name-only", "--", *created) if has_head else "x"
            )
            if staged:
                git.run(
                    "commit", "-q", "-m", "memhtml(init): scaffold the memory root", "--", *created
                )
                commit_sha = git.head()
    except DiskFullError:
        raise
    except GitError as exc:
        message = (
            exc.message if exc.message.startswith("init failed") else f"init failed: {exc.message}"
        )
        raise GitError(message, details=exc.details) from exc
    return InitReport(str(root), created_repo, created, commit_sha)


def is_memhtml_repo(root: Path) -> bool:
    """True when `root` is a git work tree root (initialized by memhtml or by hand)."""
    return (root / ".git").exists()
