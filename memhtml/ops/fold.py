"""Folding and moving memories inside one planned batch, with the graph kept whole.

A memory folded into another (a duplicate into its older copy, members into
a canonical) or archived or moved is staged through the write doors' Planner
on a tree view, so inbound links follow it exactly as `archive` and `correct`
do. The callers are the sleep phases (dedup-merge, compress, retention,
placement) and `sync` (a fact two clones wrote independently folds into one
after the merge). Nothing here commits: the caller commits the view's changes
as one commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from memhtml.contracts.errors import MemhtmlError
from memhtml.contracts.paths import path_to_href
from memhtml.html import add_link, parse_memory, remove_link, set_meta

if TYPE_CHECKING:
    from memhtml.ops.tree import TreeView
    from memhtml.ops.writes import Planner

# Links a merged-away copy's assertions do not hand to its survivor: supersedence
# and session provenance belong to the version they were about (as in `correct`).
NOT_CARRIED: Final = frozenset({"supersedes", "from_session"})


class Staging(Protocol):
    """Where a batch stages its edits: a Planner and the tree view it plans against."""

    @property
    def planner(self) -> Planner: ...

    @property
    def view(self) -> TreeView: ...


@dataclass
class Batch:
    """A Planner and its view, as a write door holds them (a `Staging`)."""

    planner: Planner
    view: TreeView


@dataclass
class Moved:
    """One archive or move a phase planned: where it went and the links that followed it."""

    path: str
    to: str
    relinked: list[dict[str, str]]
    left: list[dict[str, str]]


def archive(ctx: Staging, path: str, reason: str) -> Moved | None:
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
    ctx: Staging, path: str, target_for: Callable[[str], str]
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


def merge_into(ctx: Staging, loser: str, survivor: str) -> Moved | None:
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


def move_to(ctx: Staging, path: str, folder: str) -> Moved | None:
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
