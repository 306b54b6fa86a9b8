"""placement-triage (`--deep` only): re-file inbox memories next to their community.

An untagged episodic or semantic memory has no topic of its own and is
written to `areas/inbox/` for sleep or a person to file. For each active
inbox memory (not a task, not an arc), its neighbours are the memories it
links to or is linked from (authored memory links) and its 5 closest
memories by first-chunk vector at cosine >= 0.80. Neighbours outside the
inbox vote with their folder; when at least two of them share a folder and
no other folder has as many votes, the memory moves there
(`memhtml.domain.graph.directory_vote`). The move is a `git mv` in the
phase's view under the same file name (a free path that no memory ever
held), with no byte changed; authored links to the memory are relinked to
its new path by the Planner, as an archive does. Folders that belong to
their own writers never receive a memory: the inbox, `areas/arcs`,
`resources/people`, any `tasks` folder and the archive.

The original had no such phase (the seed's "re-filing inbox singletons" of
the deep cycle); the vote is ours. Idempotent: a moved memory has left the
inbox, and one the vote left in place gets the same vote next time.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from memhtml.contracts.vocab import ARCS_DIR, INBOX_DIR, PEOPLE_DIR
from memhtml.domain.graph import directory_vote
from memhtml.ops.fold import move_to
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase, first_chunk_vectors, listed, relink_touches

NEIGHBOR_FLOOR: Final = 0.80
NEIGHBORS: Final = 5
MIN_VOTES: Final = 2


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0]


def receives(folder: str) -> bool:
    """True when sleep may file a memory into `folder`."""
    closed = (INBOX_DIR, ARCS_DIR, PEOPLE_DIR)
    if any(folder == c or folder.startswith(c + "/") for c in closed):
        return False
    parts = folder.split("/")
    return parts[0] != "archive" and "tasks" not in parts and len(parts) >= 2


def _in_inbox(path: str) -> bool:
    return path.startswith(INBOX_DIR + "/") and not path.startswith(INBOX_DIR + "/tasks/")


def neighbours(ctx: SleepContext, inbox: list[str]) -> dict[str, list[str]]:
    """Each inbox memory's neighbours: authored memory links either way, then its closest."""
    import numpy as np

    wanted = set(inbox)
    found: dict[str, list[str]] = defaultdict(list)
    for src, dst in ctx.conn.execute(
        "SELECT e.src_path, e.dst_path FROM edges e"
        " JOIN files a ON a.path = e.src_path AND a.archived = 0"
        " JOIN files b ON b.path = e.dst_path AND b.archived = 0"
        " WHERE e.edge_class = 'memory' AND e.derived = 0 ORDER BY e.src_path, e.dst_path"
    ):
        if src in wanted:
            found[str(src)].append(str(dst))
        if dst in wanted:
            found[str(dst)].append(str(src))
    keys, matrix = first_chunk_vectors(ctx.conn, "f.archived = 0 AND f.memory_type <> 'task'")
    if matrix is None:
        return found
    at = {p: i for i, p in enumerate(keys)}
    rows = [p for p in inbox if p in at]
    if not rows:
        return found
    norms = np.linalg.norm(matrix, axis=1)
    unit = matrix / np.where(norms > 0, norms, 1.0)[:, None]
    for start in range(0, len(rows), 256):
        chunk = rows[start : start + 256]
        sims = unit[[at[p] for p in chunk]] @ unit.T
        for r, path in enumerate(chunk):
            sims[r, at[path]] = -np.inf
            order = np.lexsort((np.arange(len(keys)), -sims[r]))[:NEIGHBORS]
            found[path] += [keys[j] for j in order if sims[r, j] >= NEIGHBOR_FLOOR]
    return found


class PlacementTriage(BasePhase):
    """Move inbox memories to the folder their neighbours share."""

    name = "placement-triage"
    deep_only = True

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Vote per inbox memory, then move the decided ones through the view."""
        if not ctx.deep:
            return PhaseOutcome(status="skipped", detail="runs with --deep only")
        inbox = [
            str(p)
            for (p,) in ctx.conn.execute(
                "SELECT path FROM files WHERE archived = 0 AND memory_type NOT IN ('task', 'arc')"
                " AND path LIKE ? ORDER BY path",
                (INBOX_DIR + "/%",),
            )
            if _in_inbox(str(p))
        ]
        counts = dict.fromkeys(("inbox", "undecided", "moved", "failed", "relinked"), 0)
        counts["inbox"] = len(inbox)
        out = PhaseOutcome(counts=counts)
        around = neighbours(ctx, inbox)
        lines: list[str] = []
        moves = []
        for done, path in enumerate(inbox, start=1):
            ctx.progress(done, len(inbox))
            votes = [
                _folder(n) for n in dict.fromkeys(around.get(path, [])) if receives(_folder(n))
            ]
            folder = directory_vote(votes, MIN_VOTES)
            if folder is None:
                counts["undecided"] += 1
                continue
            if ctx.dry_run:
                counts["moved"] += 1
                continue
            moved = move_to(ctx, path, folder)
            if moved is None:
                counts["failed"] += 1
                continue
            counts["moved"] += 1
            moves.append(moved)
            out.touched.append(Touched(moved.to, "moved", from_path=path))
            lines.append(f"move {path} -> {moved.to} ({votes.count(folder)} neighbours there)")
        counts["relinked"] = sum(len(m.relinked) for m in moves)
        out.touched += relink_touches(ctx, moves)
        out.subject = f"re-file {counts['moved']} inbox memories next to their neighbours"
        out.body = listed(lines)
        return out


PHASE = PlacementTriage()
