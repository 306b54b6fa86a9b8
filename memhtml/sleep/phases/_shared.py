"""What several phases share: the base phase, reads of the run index, and the Planner moves.

Nothing here commits or writes the state plane. Edits go through the
Planner bound to the phase's view, so a sleep archive keeps the graph whole
exactly as the write doors do (inbound links follow the memory).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import MemhtmlError
from memhtml.contracts.paths import path_to_href
from memhtml.contracts.vocab import PEOPLE_DIR
from memhtml.html import MemoryDocument, add_link, parse_memory, remove_link, set_meta
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched

if TYPE_CHECKING:
    import numpy.typing as npt

    from memhtml.ops.writes import Planner

NO_MODEL: Final = "no model: MEMHTML_LLM=off"
BODY_LINES: Final = 100  # commit-body lines a phase lists (the counts are always whole)
# Links a merged-away copy's assertions do not hand to its survivor: supersedence
# and session provenance belong to the version they were about (as in `correct`).
NOT_CARRIED: Final = frozenset({"supersedes", "from_session"})
DUPLICATE_REASON: Final = "duplicate content of "


class BasePhase:
    """A deterministic phase; subclasses set the name and implement `run`."""

    name: str = ""
    needs_model: bool = False
    commits: bool = True
    deep_only: bool = False

    def run(self, ctx: SleepContext) -> PhaseOutcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """By default the dry run's counts (cheap for this phase)."""
        from dataclasses import replace

        outcome = self.run(replace(ctx, dry_run=True))
        return {"counts": dict(outcome.counts), "unknown": {}}


# -- reads of the run index ------------------------------------------------------------------


def scalar(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
    """The first column of the first row (None when there is none)."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def unparseable(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Files the index could not project (not duplicates): (path, reason), path order."""
    return [
        (str(p), str(r))
        for p, r in conn.execute(
            "SELECT path, reason FROM skipped_files WHERE reason NOT LIKE ? ORDER BY path",
            (DUPLICATE_REASON + "%",),
        )
    ]


def access_rows(conn: sqlite3.Connection) -> dict[str, tuple[int, int, float, str | None]]:
    """state.access by path: (access_count, reinforcement_count, outcome_score,
    last_accessed_at); empty when the state plane is not attached."""
    try:
        return {
            str(p): (int(a or 0), int(r or 0), float(o or 0.0), last)
            for p, a, r, o, last in conn.execute(
                "SELECT path, access_count, reinforcement_count, outcome_score,"
                " last_accessed_at FROM state.access"
            )
        }
    except sqlite3.OperationalError:
        return {}


def first_chunk_vectors(
    conn: sqlite3.Connection, where: str, params: Sequence[Any] = ()
) -> tuple[list[str], npt.NDArray[Any] | None]:
    """Paths (sorted) of files matching `where` (over `files f`) that have a first-chunk
    vector of the index's model, and those vectors as one matrix (None when none)."""
    import numpy as np

    from memhtml.domain.vectors import vector_from_blob

    model = scalar(conn, "SELECT embed_model FROM index_state WHERE id = 1")
    if model is None:
        return [], None
    rows = conn.execute(
        "SELECT f.path, e.vector FROM files f"
        " JOIN chunks c ON c.path = f.path AND c.ordinal = 0"
        " JOIN embeddings e ON e.chunk_id = c.chunk_id AND e.model = ?"
        f" WHERE {where} ORDER BY f.path",
        (model, *params),
    ).fetchall()
    if not rows:
        return [], None
    return [str(r[0]) for r in rows], np.stack([vector_from_blob(r[1]) for r in rows])


def is_person_record(path: str) -> bool:
    """A `resources/people/` reference record (reached by key, never merged or evicted)."""
    return path.startswith(PEOPLE_DIR + "/")


def read_doc(ctx: SleepContext, path: str) -> MemoryDocument | None:
    """The parse of `path` in the phase's view; None when absent or not a valid memory."""
    if not ctx.view.exists(path):
        return None
    doc = parse_memory(ctx.view.read(path))
    return doc if doc.ok else None


# -- edits through the Planner -----------------------------------------------------------------


@dataclass
class Moved:
    """One archive or move a phase planned: where it went and the links that followed it."""

    path: str
    to: str
    relinked: list[dict[str, str]]
    left: list[dict[str, str]]


def archive(ctx: SleepContext, path: str, reason: str) -> Moved | None:
    """Archive `path` through the Planner (stamps, `git mv`, inbound links relinked).

    None when the Planner refuses (the file vanished or no longer parses): the
    phase counts it and goes on; nothing is half-done, since the Planner
    refuses before it stages anything.
    """
    from memhtml.contracts.ops import ArchiveOp

    try:
        out = ctx.planner.archive(ArchiveOp(op="archive", path=path, reason=reason))
    except MemhtmlError:
        return None
    destination = out["archive_path"]
    relinked = out["relinked"] + _relink_moved_sources(ctx, path, lambda _rel: destination)
    _remember_relinks(ctx.planner, relinked)
    return Moved(path, destination, relinked, out["links_left"])


def _relink_moved_sources(
    ctx: SleepContext, path: str, target_for: Callable[[str], str]
) -> list[dict[str, str]]:
    """Relink the links to `path` held by sources this phase already moved.

    The Planner relinks a source at the path the index knows; a source this
    same batch already archived or moved sits at its new path, which the
    Planner does not look for (an `apply` batch archiving both ends has the
    same gap). Without this a night that evicts two linked memories would
    leave a dangling link for integrity to find.
    """
    gone = [(src, rel) for src, rel in ctx.planner.inbound(path) if src in ctx.planner.vacated]
    if not gone:
        return []
    moved = {old: new for new, old in ctx.view._moves.items()}
    done: list[dict[str, str]] = []
    for src, rel in gone:
        new_src = moved.get(src)
        if new_src is None or not ctx.view.exists(new_src):
            continue
        target = target_for(rel)
        text = ctx.view.read(new_src).decode("utf-8")
        edited = remove_link(text, rel, path)
        if target != new_src:
            edited = add_link(edited, rel, target)
        if edited != text:
            ctx.view.write(new_src, edited.encode("utf-8"))
            done.append({"src_path": new_src, "rel": rel, "from": path, "to": target})
    return done


def _remember_relinks(planner: Planner, relinked: Iterable[dict[str, str]]) -> None:
    # Links rewritten in this batch point at their new target; a later move of that
    # target in the same batch must find them (the index learns them at commit).
    planner.batch_links.extend((r["src_path"], r["rel"], r["to"]) for r in relinked)


def merge_into(ctx: SleepContext, loser: str, survivor: str) -> Moved | None:
    """Fold `loser` into `survivor`: the loser is archived with `memhtml-superseded-by`
    naming the survivor; the survivor gains `supersedes` to the archived copy and the
    loser's own authored links; links to the loser now name the survivor (a
    `supersedes` link, being about that version, follows it into the archive).

    The edits mirror `Planner.correct`, whose survivor is a new replacement; here
    it is the older copy, already in the corpus. None when either file is gone
    or no longer a valid memory.
    """
    planner = ctx.planner
    try:
        planner._live_target(loser)
        planner._live_target(survivor)
    except MemhtmlError:
        return None
    loser_doc = parse_memory(ctx.view.read(loser))
    text = ctx.view.read(loser).decode("utf-8")
    destination, text = planner._archive_bytes(loser, text, None)
    text = set_meta(text, "memhtml-superseded-by", path_to_href(survivor))
    ctx.view.move(loser, destination, text.encode("utf-8"))
    planner.vacated.add(loser)
    keep = ctx.view.read(survivor).decode("utf-8")
    keep = add_link(keep, "supersedes", destination)
    for link in loser_doc.links:
        if link.rel in NOT_CARRIED or link.path in (survivor, loser):
            continue
        keep = add_link(keep, link.rel, link.path)
        planner.batch_links.append((survivor, link.rel, link.path))
    ctx.view.write(survivor, keep.encode("utf-8"))
    planner.batch_links.append((survivor, "supersedes", destination))

    def target_for(rel: str) -> str:
        return destination if rel == "supersedes" else survivor

    relinked, left = planner._relink_inbound(loser, target_for)
    relinked += _relink_moved_sources(ctx, loser, target_for)
    _remember_relinks(planner, relinked)
    return Moved(loser, destination, relinked, left)


def move_to(ctx: SleepContext, path: str, folder: str) -> Moved | None:
    """Move a live memory into `folder` (same file name, a free path), links following it."""
    planner = ctx.planner
    try:
        planner._live_target(path)
    except MemhtmlError:
        return None
    name = path.rsplit("/", 1)[-1]
    try:
        target = planner._free_path(f"{folder}/{name}")
    except MemhtmlError:
        return None
    ctx.view.move(path, target, ctx.view.read(path))
    planner.vacated.add(path)
    relinked, left = planner._relink_inbound(path, lambda _rel: target)
    relinked += _relink_moved_sources(ctx, path, lambda _rel: target)
    _remember_relinks(planner, relinked)
    return Moved(path, target, relinked, left)


def relink_touches(ctx: SleepContext, moves: Iterable[Moved]) -> list[Touched]:
    """The sources whose links a phase rewrote and that are still where they were, as
    `rewritten` touches (a source the phase moved afterwards is listed by its move)."""
    seen = dict.fromkeys(r["src_path"] for m in moves for r in m.relinked)
    return [Touched(p, "rewritten") for p in seen if ctx.view.exists(p)]


_KIND_RANK: Final = {"created": 0, "merged": 1, "archived": 2, "moved": 3, "rewritten": 4}


def unique_touches(touched: Iterable[Touched]) -> list[Touched]:
    """One touch per path, in first-seen order: what happened to it, not that its links were
    rewritten on the way (a canonical created tonight and relinked is `created`)."""
    best: dict[str, Touched] = {}
    for t in touched:
        held = best.get(t.path)
        if held is None or _KIND_RANK[t.kind] < _KIND_RANK[held.kind]:
            best[t.path] = t
    return list(best.values())


def stamp(ctx: SleepContext, path: str, edit: Callable[[str], str]) -> bool:
    """Apply a head edit to `path` in the view; True when the bytes changed."""
    before = ctx.view.read(path)
    after = edit(before.decode("utf-8")).encode("utf-8")
    if after == before:
        return False
    ctx.view.write(path, after)
    return True


def listed(lines: Sequence[str], limit: int = BODY_LINES) -> list[str]:
    """At most `limit` body lines, with a last line saying how many were left out."""
    if len(lines) <= limit:
        return list(lines)
    return [*lines[:limit], f"... and {len(lines) - limit} more"]
