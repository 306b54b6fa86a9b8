"""The `sync` command group: one memory shared across machines through git remotes."""

from __future__ import annotations

from typing import Final

from memhtml.surface.spec import Command, Param

H = "memhtml.cli.handlers.sync"

SYNC_COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "sync",
        "Fetch, merge the remote's branch with the merge driver, push; index what changed.",
        "sync.report",
        f"{H}:sync",
        params=(
            Param("remote", "the remote (default: the branch's upstream, else the only one)"),
            Param("no_push", "fetch and integrate only", type="bool", default=False),
            Param(
                "allow_deletions",
                "let the remote delete more memories than allowed (10, or a tenth of this clone's)",
                type="bool",
                default=False,
            ),
            Param(
                "abort",
                "undo an unresolved sync merge (back to where the sync started)",
                type="bool",
                default=False,
            ),
        ),
        errors=(
            "ERR_SYNC_CONFLICT",
            "ERR_REMOTE",
            "ERR_DIRTY_TREE",
            "ERR_GIT",
            "ERR_WRITE_CONFLICT",
        ),
        examples=("memhtml sync", "memhtml sync --remote origin --no-push", "memhtml sync --abort"),
        details=(
            "A fast-forward when possible, else a merge commit (never a rebase). Both sides"
            " changing one memory's article stops with ERR_SYNC_CONFLICT (paths and both claims"
            " in details), the merge left for git; writes are refused until it is resolved or"
            " aborted. A fact written on two clones folds into the older copy. A push the remote"
            " rejected is retried after fetching again, three rounds at most. Every incoming"
            " commit is checked before anything lands: one that brings anything but memory"
            " files and memhtml's scaffold (the local planes, a .gitattributes or .gitignore of"
            " the remote's own, symlinks, executables, oversized files, names with control"
            " characters or backslashes) is ERR_REMOTE with reason `refused`, each path and why"
            " in details; deleting more memories than 10 (or a tenth of this clone's, at least"
            " one) is reason `deletions` until --allow-deletions. A refused sync leaves the"
            " clone unchanged."
        ),
    ),
    Command(
        "remote add",
        "Add a git remote to share this memory through.",
        "remote.added",
        f"{H}:remote_add",
        params=(
            Param("name", "the remote's name", positional=True, required=True),
            Param("url", "its URL or path", positional=True, required=True),
        ),
        errors=("ERR_REMOTE", "ERR_INVALID_FLAG", "ERR_GIT"),
        examples=("memhtml remote add origin git@example.com:team/memory.git",),
    ),
)
