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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memhtml.html import add_link, remove_link
from memhtml.index.db import write_transaction
from memhtml.index.identity import follow
from memhtml.index.writer import move_access
from memhtml.store.git import commit_subject
from memhtml.store.history import renames
from memhtml.store.recovery import sweep_temp_files

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus

PREFIXES = ("projects/", "areas/", "resources/", "archive/")

DANGLING_SQL = (
    "SELECT e.src_path, e.rel, e.dst_path FROM edges e WHERE e.derived = 0 AND NOT EXISTS"
    " (SELECT 1 FROM files f WHERE f.path = e.dst_path) ORDER BY e.src_path, e.rel, e.dst_path"
)
ORPHAN_ACCESS_SQL = (
    "SELECT a.path FROM state.access a WHERE NOT EXISTS"
    " (SELECT 1 FROM files f WHERE f.path = a.path) ORDER BY a.path"
)


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
        relinked: list[dict[str, str]] = []
        links_left: list[dict[str, str]] = []
        moves: dict[str, str] | None = None  # hand moves from history, read when needed

        def destination(path: str, first_hop: bool = False) -> str | None:
            nonlocal moves
            chain = follow(conn, path)
            if chain.hops:
                return chain.hops[0]["to"] if first_hop else chain.resolved
            if moves is None:
                moves = renames(corpus.git, PREFIXES)
            seen = {path}
            while path in moves and moves[path] not in seen:
                path = moves[path]
                seen.add(path)
            if path in seen and len(seen) == 1:
                return None
            if conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone():
                return path if first_hop else (follow(conn, path).resolved or path)
            return None

        for src, rel, dst in conn.execute(DANGLING_SQL).fetchall():
            entry = {"src_path": src, "rel": rel, "from": dst}
            target = destination(dst)
            if target is None or target == src:
                links_left.append({**entry, "reason": "nothing in the index explains the target"})
                continue
            if src in dirty:
                links_left.append({**entry, "to": target, "reason": "source has uncommitted edits"})
                continue
            text = view.read(src).decode("utf-8")
            text = add_link(remove_link(text, rel, dst), rel, target)
            view.write(src, text.encode("utf-8"))
            relinked.append({**entry, "to": target})
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
