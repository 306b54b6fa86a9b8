"""`memhtml doctor --fix`: repair what a corpus can lose its health to, in one commit.

What it repairs, each reported:

* what a killed command left: an interrupted batch's uncommitted files, temp
  files of atomic writes, a stale `.git/index.lock` (memhtml.store.recovery);
* authored links whose target is gone: rewritten along the target's resolve
  chain (to the replacement of a corrected memory, to the archive copy of an
  archived one), or along history's renames for a memory moved by hand with
  `git mv`; a link whose target nothing explains is left and reported;
* usage rows (the state plane) whose memory moved: moved to the memory's new
  path, so salience is not lost and the rows are not orphans.

The link rewrites are head-only edits (content hashes unchanged), committed as
one commit; a source file with uncommitted edits is left alone and reported.
`repair_dangling` is shared with sleep's integrity phase, which runs it over
the sleep branch and also drops the links nothing explains.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memhtml.html import add_link, remove_link
from memhtml.index.db import write_transaction
from memhtml.index.identity import follow
from memhtml.index.writer import move_access
from memhtml.store.git import commit_subject
from memhtml.store.history import renames
from memhtml.store.recovery import sweep_temp_files

if TYPE_CHECKING:
    import sqlite3

    from memhtml.ops.corpus import Corpus
    from memhtml.ops.tree import TreeView

PREFIXES = ("projects/", "areas/", "resources/", "archive/")

DANGLING_SQL = (
    "SELECT e.src_path, e.rel, e.dst_path FROM edges e WHERE e.derived = 0 AND NOT EXISTS"
    " (SELECT 1 FROM files f WHERE f.path = e.dst_path) ORDER BY e.src_path, e.rel, e.dst_path"
)
ORPHAN_ACCESS_SQL = (
    "SELECT a.path FROM state.access a WHERE NOT EXISTS"
    " (SELECT 1 FROM files f WHERE f.path = a.path) ORDER BY a.path"
)


def chain_destination(
    conn: sqlite3.Connection,
    path: str,
    *,
    first_hop: bool = False,
    moves: Callable[[], Mapping[str, str]] | None = None,
) -> str | None:
    """Where a link to a vanished `path` should point now, or None when nothing says.

    The index's resolve chain first (archive moves, supersedence: the live end,
    or with `first_hop` only the memory's own first move); then, when `moves`
    is given, history's renames (a memory moved by hand with `git mv`).
    """
    chain = follow(conn, path)
    if chain.hops:
        return chain.hops[0]["to"] if first_hop else chain.resolved
    if moves is None:
        return None
    renamed = moves()
    seen = {path}
    while path in renamed and renamed[path] not in seen:
        path = renamed[path]
        seen.add(path)
    if path in seen and len(seen) == 1:
        return None
    if conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone():
        return path if first_hop else (follow(conn, path).resolved or path)
    return None


@dataclass
class DanglingRepair:
    """What `repair_dangling` did to authored links whose target is gone."""

    relinked: list[dict[str, str]] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)
    left: list[dict[str, str]] = field(default_factory=list)


def repair_dangling(
    conn: sqlite3.Connection,
    view: TreeView,
    destination: Callable[[str], str | None],
    *,
    is_dirty: Callable[[str], bool] = lambda _path: False,
    drop_unexplained: bool = False,
    stage: bool = True,
) -> DanglingRepair:
    """Stage a rewrite of every dangling authored link in `view`; head-only edits.

    Shared by `doctor --fix` and sleep's integrity phase. A link is rewritten
    to `destination(target)`. One whose target nothing explains (or that would
    point at its own source) is left and reported, or with `drop_unexplained`
    removed, unless its target is still a file in the tree that the index
    could not project (unparseable, or a duplicate of another memory): that
    link is not dangling, only unindexed. A source with uncommitted edits is
    never touched. With `stage` False nothing is written to `view` (a dry run).
    """
    out = DanglingRepair()
    for src, rel, dst in conn.execute(DANGLING_SQL).fetchall():
        entry = {"src_path": src, "rel": rel, "from": dst}
        if drop_unexplained and view.exists(dst):
            out.left.append({**entry, "reason": "the target is a file the index could not project"})
            continue
        target = destination(dst)
        if target is None or target == src:
            if drop_unexplained and not is_dirty(src):
                if stage:
                    text = view.read(src).decode("utf-8")
                    view.write(src, remove_link(text, rel, dst).encode("utf-8"))
                out.dropped.append(entry)
                continue
            out.left.append({**entry, "reason": "nothing in the index explains the target"})
            continue
        if is_dirty(src):
            out.left.append({**entry, "to": target, "reason": "source has uncommitted edits"})
            continue
        if stage:
            text = view.read(src).decode("utf-8")
            text = add_link(remove_link(text, rel, dst), rel, target)
            view.write(src, text.encode("utf-8"))
        out.relinked.append({**entry, "to": target})
    return out


def fix_corpus(corpus: Corpus) -> dict[str, Any]:
    """Repair the corpus under the repository lock; returns every repair made and left."""
    from memhtml.ops.tree import TreeView

    with corpus.lock.hold():
        recovered = corpus.recover()
        recovered["temp_files_removed"] = sorted(
            set(recovered["temp_files_removed"]) | set(sweep_temp_files(corpus.root))
        )
        corpus.sync(worktree=True)
        conn = corpus.conn
        dirty = corpus.indexer.dirty_paths()
        view = TreeView(corpus.root)
        moves: dict[str, str] | None = None  # hand moves from history, read when needed

        def history() -> dict[str, str]:
            nonlocal moves
            if moves is None:
                moves = renames(corpus.git, PREFIXES)
            return moves

        def destination(path: str, first_hop: bool = False) -> str | None:
            return chain_destination(conn, path, first_hop=first_hop, moves=history)

        repaired = repair_dangling(conn, view, destination, is_dirty=lambda p: p in dirty)
        relinked, links_left = repaired.relinked, repaired.left
        commit_sha = None
        changes = view.changes()
        if changes:
            lines = [
                commit_subject("doctor", f"repair {len(relinked)} dangling links"),
                "",
                *(f"{r['src_path']} {r['rel']} {r['from']} -> {r['to']}" for r in relinked[:200]),
                "",
                "Memhtml-Op: doctor-fix",
            ]
            commit_sha, _, _ = corpus.commit_changes(
                changes, "\n".join(lines) + "\n", embedder=corpus.embedder
            )
        access_moved: list[dict[str, str]] = []
        access_left: list[str] = []
        with write_transaction(conn):
            for (path,) in conn.execute(ORPHAN_ACCESS_SQL).fetchall():
                # The rows follow the memory itself (its first move), not its successor.
                target = destination(path, first_hop=True)
                if target is not None and move_access(conn, path, target):
                    access_moved.append({"from": path, "to": target})
                else:
                    access_left.append(path)
        return {
            "mode": "fix",
            **recovered,
            "relinked": relinked,
            "links_left": links_left,
            "access_moved": access_moved,
            "access_left": access_left,
            "commit_sha": commit_sha,
        }
