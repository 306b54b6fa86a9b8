"""ERR_DIRTY_TREE with the commands that actually clean the tree.

A command that needs a clean tree (sync, publish, sleep run, sleep merge)
refuses uncommitted edits. What cleans them is git: commit the named files,
or set them aside with `git stash` and bring them back after. `doctor --fix`
cleans only what a killed memhtml command left (an interrupted batch), so it
is suggested only when there is one. The paths are quoted for a shell and the
commands name the root, so a person can paste them from anywhere.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import DirtyTreeError

MAX_NAMED: Final = 20  # paths a message and its commands name; details carry the count


def clean_tree_suggestions(root: Path, paths: Sequence[str]) -> list[str]:
    """Commands that clean `paths` under `root`: commit them, or stash them (and pop after)."""
    from memhtml.store.recovery import interrupted_batch

    named = list(paths[:MAX_NAMED])
    # More than we can name: the commands take every change (git add -A, stash -u).
    spec = " -- " + " ".join(shlex.quote(p) for p in named) if len(paths) <= MAX_NAMED else ""
    where = shlex.quote(str(root))
    out: list[str] = []
    if interrupted_batch(root) is not None:
        out.append("memhtml doctor --fix  (a killed memhtml command left them: it settles them)")
    out += [
        f"keep them: git -C {where} add -A{spec} && git -C {where} commit -m 'edit memories'",
        f"set them aside: git -C {where} stash push --include-untracked{spec}"
        f"  (git -C {where} stash pop brings them back)",
    ]
    return out


def dirty_tree_error(root: Path, paths: Sequence[str], *, needs: str) -> DirtyTreeError:
    """ERR_DIRTY_TREE for a command that `needs` a clean tree (`sync needs a clean tree`)."""
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return DirtyTreeError(
        f"{len(paths)} uncommitted change(s) in the working tree ({shown}); {needs}",
        suggestions=clean_tree_suggestions(root, paths),
        details={"paths": list(paths[:MAX_NAMED]), "count": len(paths)},
    )
