"""The `sync` command group: one memory shared across machines through git remotes."""

from __future__ import annotations

from typing import Final

from memhtml.cli.spec import Command, Param

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
            " rejected is retried after fetching again, three rounds at most."
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
