"""Reading a memory root's history for what a single tree cannot show."""

from __future__ import annotations

from typing import Any, Final

from memhtml.html import parse_memory
from memhtml.store.git import Git

_MARK: Final = "\x01"


def _identity(data: bytes | None) -> tuple[str | None, str | None]:
    """What tells one memory from another across a path's life: its birth and its text."""
    if data is None:
        return None, None
    doc = parse_memory(data)
    return doc.created, doc.content_hash


def path_reuse(git: Git, prefixes: tuple[str, ...]) -> list[dict[str, Any]]:
    """Paths that history handed to a different memory after their first one left.

    One `git log` walks HEAD's history oldest first; a path added again after
    it was deleted or moved away is a candidate. It is a reuse when the
    returning file is another memory: its `memhtml-created` stamp or its
    article differs from the one that left (a restore of the same memory, say
    a reverted archive, keeps both).
    """
    head = git.head()
    if head is None:
        return []
    out = git.run(
        "log",
        "--reverse",
        "--no-renames",
        "--name-status",
        "-z",
        f"--format={_MARK}%H",
        head,
        "--",
        *prefixes,
    )
    left_at: dict[str, str] = {}  # path -> the commit that deleted it
    candidates: list[tuple[str, str, str]] = []  # (path, deleting commit, adding commit)
    commit = ""
    fields = out.split(b"\x00")
    i = 0
    while i < len(fields):
        item = fields[i].decode("utf-8", "surrogateescape").lstrip("\n")
        i += 1
        if not item:
            continue
        if item.startswith(_MARK):
            commit = item[1:].strip()
            continue
        status, path = item, fields[i].decode("utf-8", "surrogateescape") if i < len(fields) else ""
        i += 1
        if status.startswith("D"):
            left_at[path] = commit
        elif status.startswith("A") and path in left_at:
            candidates.append((path, left_at.pop(path), commit))
    if not candidates:
        return []
    names = [n for p, gone, back in candidates for n in (f"{gone}^:{p}", f"{back}:{p}")]
    blobs = git.cat_objects(names)
    reused = []
    for path, gone, back in candidates:
        before = _identity(blobs.get(f"{gone}^:{path}", ("", None))[1])
        after = _identity(blobs.get(f"{back}:{path}", ("", None))[1])
        if before != after:
            reused.append(
                {
                    "path": path,
                    "left_at": gone,
                    "reused_at": back,
                    "first_created": before[0],
                    "reused_created": after[0],
                }
            )
    return reused


def renames(git: Git, prefixes: tuple[str, ...]) -> dict[str, str]:
    """Where each path HEAD's history moved went (old -> new, the latest move of each path).

    One `git log` with rename detection: what `doctor --fix` consults when the
    index cannot explain a link's target, for memories moved by hand with
    `git mv` rather than archived or corrected.
    """
    head = git.head()
    if head is None:
        return {}
    out = git.run(
        "log", "-M", "--diff-filter=R", "--name-status", "-z", "--format=", head, "--", *prefixes
    )
    fields = [f.decode("utf-8", "surrogateescape") for f in out.split(b"\x00")]
    moved: dict[str, str] = {}
    i = 0
    while i + 2 < len(fields):
        status = fields[i].strip()
        if status.startswith("R"):
            old, new = fields[i + 1], fields[i + 2]
            moved.setdefault(old, new)  # newest first: keep the latest move
            i += 3
        else:
            i += 1
    return moved
