"""A path is an identity: which paths the write doors may never hand to a new memory.

A citation of a memory is its path. If an archived or moved memory's path were
given to an unrelated new fact, every old citation (links in other memories,
notes, commit messages) would silently resolve to the wrong fact, and
supersedence chains could loop. So a path any memory ever held stays retired.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Final

from memhtml.contracts.paths import live_path_of

_EVER_HELD: Final = """
SELECT 1 FROM retired_paths WHERE path = :p
UNION ALL SELECT 1 FROM files WHERE path = :p
UNION ALL SELECT 1 FROM worktree_overlay WHERE path = :p
UNION ALL SELECT 1 FROM files WHERE origin_path = :p AND archived = 1
UNION ALL SELECT 1 FROM files WHERE superseded_by = :p
UNION ALL SELECT 1 FROM edges WHERE dst_path = :p AND derived = 0
LIMIT 1
"""


def path_ever_held(conn: sqlite3.Connection, path: str) -> bool:
    """True when `path` is or was a memory's identity, as far as the index knows.

    Sources: paths HEAD's history deleted or moved away (`retired_paths`), paths
    HEAD holds (even when the working tree deleted them), paths the working tree
    touched, origins of archived memories, supersedence targets, and the targets
    of authored links (a dangling link must not come to point at a new fact).
    """
    return conn.execute(_EVER_HELD, {"p": path}).fetchone() is not None


@dataclass
class Chain:
    """Where a path led: each hop (from, to, via), the last path reached, and if it is live."""

    hops: list[dict[str, str]] = field(default_factory=list)
    resolved: str | None = None
    live: bool = False
    known: bool = False  # the index ever held the path or a memory that came from it


def follow(conn: sqlite3.Connection, path: str) -> Chain:
    """Follow archive moves and supersedence from `path` to the live memory, or as far as it goes.

    A path that no longer holds a file leads to the archive copy that came from
    it; an archived memory leads to what superseded it. Cycles (possible only
    in a corpus that reused paths by hand) stop the walk.
    """
    chain = Chain()
    current = path
    seen: set[str] = set()
    while current not in seen:
        seen.add(current)
        row = conn.execute(
            "SELECT archived, superseded_by FROM files WHERE path = ?", (current,)
        ).fetchone()
        if row is None:
            moved = conn.execute(
                "SELECT path FROM files WHERE origin_path = ? AND archived = 1"
                " ORDER BY archived_at DESC, path DESC LIMIT 1",
                (live_path_of(current),),
            ).fetchone()
            if moved is None:
                break
            chain.hops.append({"from": current, "to": str(moved[0]), "via": "archived"})
            current = str(moved[0])
            continue
        chain.known = True
        archived, superseded_by = row
        chain.resolved = current
        if not archived:
            chain.live = True
            return chain
        successor = superseded_by or _supersede_successor(conn, current)
        if successor is None:
            return chain
        chain.hops.append({"from": current, "to": str(successor), "via": "superseded"})
        current = str(successor)
    chain.known = chain.known or bool(chain.hops)
    if chain.resolved is None and chain.hops:
        chain.resolved = chain.hops[-1]["to"]
    return chain


def _supersede_successor(conn: sqlite3.Connection, path: str) -> str | None:
    row = conn.execute(
        "SELECT src_path FROM edges WHERE dst_path = ? AND rel = 'supersedes' AND derived = 0"
        " ORDER BY created_at DESC, src_path LIMIT 1",
        (path,),
    ).fetchone()
    return None if row is None else str(row[0])
