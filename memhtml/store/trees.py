"""Git tree objects in Python: reading, editing and naming them without git's index.

`Git.commit_paths` builds a write's tree from HEAD's trees (memhtml.store.git):
these are the format's pieces it needs, pure functions over bytes. A tree
object is its entries (`<mode> <name>\\0<20-byte id>`) sorted by name, a
tree's name compared as if it ended in '/'; its id is the SHA-1 of
`tree <size>\\0` and that body.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Final

Entry = tuple[bytes, bytes]  # a tree entry: (mode, 20-byte object id)
TREE_MODE: Final = b"40000"
GITLINK_MODE: Final = b"160000"
KIND: Final = {TREE_MODE: b"tree", GITLINK_MODE: b"commit"}


def tree_object_id(entries: Mapping[bytes, Entry]) -> bytes:
    """Git's id of the tree holding `entries` (name -> (mode, id)): its entries sorted by
    name, a tree's name compared as if it ended in '/'."""
    names = sorted(entries, key=lambda n: n + b"/" if entries[n][0] == TREE_MODE else n)
    body = b"".join(b"%s %s\x00%s" % (entries[n][0], n, entries[n][1]) for n in names)
    return hashlib.sha1(b"tree %d\x00" % len(body) + body, usedforsecurity=False).digest()


def tree_entries(data: bytes | None) -> dict[bytes, Entry]:
    """The entries of a raw tree object (None: no tree, no entries)."""
    entries: dict[bytes, Entry] = {}
    pos, end = 0, len(data or b"")
    while data is not None and pos < end:
        space = data.index(b" ", pos)
        nul = data.index(b"\x00", space)
        entries[data[space + 1 : nul]] = (data[pos:space], data[nul + 1 : nul + 21])
        pos = nul + 21
    return entries


def read_trees(out: bytes, count: int) -> list[bytes | None] | None:
    """`count` answers of `cat-file --batch`: each tree's bytes, None for a missing name
    (a directory `base` does not have); None when one names something other than a tree."""
    trees: list[bytes | None] = []
    pos = 0
    for _ in range(count):
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split(b" ")
        pos = nl + 1
        if header[-1] == b"missing":
            trees.append(None)
            continue
        if len(header) != 3 or header[1] != b"tree":
            return None
        size = int(header[2])
        trees.append(out[pos : pos + size])
        pos += size + 1
    return trees


def ancestors(path: str) -> list[str]:
    """The directories holding `path`, the root ('') first: 'a/b/c.html' -> ['', 'a', 'a/b']."""
    parts = path.split("/")[:-1]
    return ["", *("/".join(parts[: i + 1]) for i in range(len(parts)))]


def depth(directory: str) -> int:
    """How deep a directory is: the root ('') 0, 'a' 1, 'a/b' 2."""
    return directory.count("/") + 1 if directory else 0


def filemode_on_in(config: Path) -> bool:
    """True when the `[core]` section of a git config file sets `filemode` to true (and the
    file includes no other file, which could say otherwise)."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    section, value = "", None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0].strip()
        if line.startswith("["):
            section = line[1:].partition("]")[0].strip().lower()
            if section.startswith(("include", "includeif")):
                return False
        elif section == "core" and "=" in line:
            key, _, val = line.partition("=")
            if key.strip().lower() == "filemode":
                value = val.strip().lower()
    return value in ("true", "yes", "on", "1")
