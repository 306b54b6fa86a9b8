"""Scaffolding a memory root: `memhtml init`.

Idempotent: an existing repository gets only the pieces it lacks, and a
commit only when something new was added.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import GitError
from memhtml.store import attributes
from memhtml.store.files import write_atomic

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
README_HTML: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Memory</title>
</head>
<body>
<h1>Memory</h1>
<p>This repository is an agent's long-term memory, kept by memhtml: one fact per
HTML file under <code>projects/</code>, <code>areas/</code>, <code>resources/</code>
and <code>archive/</code>. Every change is a commit; nothing is deleted, only
moved into <code>archive/</code>. This page is not itself a memory.</p>
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


def init_repo(root: str | os.PathLike[str]) -> InitReport:
    """Create or complete the memory root at `root` (a str or a path; `~` is expanded)."""
    import git  # GitPython: init and config are cold paths

    root = Path(root).expanduser().absolute()
    root.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    try:
        try:
            repo = git.Repo(root)
            created_repo = False
            if Path(repo.working_tree_dir or "").resolve() != root.resolve():
                repo = git.Repo.init(root, initial_branch="main")
                created_repo = True
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            repo = git.Repo.init(root, initial_branch="main")
            created_repo = True
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
        with repo.config_writer() as cfg:
            cfg.set_value('merge "memhtml"', "name", "memhtml head-aware merge")
            cfg.set_value('merge "memhtml"', "driver", merge_driver_command())
            cfg.set_value('merge "ours"', "driver", "true")
            reader = repo.config_reader()
            if not reader.has_option("user", "email"):
                # A fresh machine has no identity; commits must still land.
                try:
                    git.Git(str(root)).var("GIT_COMMITTER_IDENT")
                except git.GitCommandError:
                    cfg.set_value("user", "name", "memhtml")
                    cfg.set_value("user", "email", "memhtml@localhost")
        commit_sha: str | None = None
        if created:
            repo.git.add("--", *created)
            has_head = repo.head.is_valid()
            staged = repo.git.diff("--cached", "--name-only", "--", *created) if has_head else "x"
            if staged:
                repo.git.commit("-m", "memhtml(init): scaffold the memory root", "--", *created)
                commit_sha = repo.head.commit.hexsha
    except git.GitCommandError as exc:
        raise GitError(f"init failed: {exc.stderr.strip() if exc.stderr else exc}") from exc
    return InitReport(str(root), created_repo, created, commit_sha)


def is_memhtml_repo(root: Path) -> bool:
    """True when `root` is a git work tree root (initialized by memhtml or by hand)."""
    return (root / ".git").exists()
