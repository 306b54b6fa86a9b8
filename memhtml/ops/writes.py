"""Planning the write doors: write, correct, archive, link.

A plan reads and writes only a :class:`TreeView`; nothing reaches the disk or
git until a whole batch has planned cleanly. Each planner method returns the
op's result payload or raises a typed error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import (
    ArchivedMemoryError,
    DirtyTreeError,
    DuplicateContentError,
    InvalidMemoryError,
    InvalidPathError,
    PathNotFoundError,
    WriteConflictError,
)
from memhtml.contracts.ops import ArchiveOp, CorrectOp, LinkOp, WriteOp
from memhtml.contracts.paths import (
    archive_path,
    is_archived_path,
    live_path_of,
    memory_path,
    memory_slug,
    path_to_href,
    placement_dir,
    refuse_generated_name,
    with_ordinal,
)
from memhtml.contracts.vocab import (
    PEOPLE_DIR,
    REL_CLASS,
    TASK_STATUSES,
    normalize_rel,
)
from memhtml.html import MemoryDocument, NewMemory, parse_memory
from memhtml.html import add_link as html_add_link
from memhtml.html import remove_link as html_remove_link
from memhtml.html import set_meta as html_set_meta
from memhtml.ops.new_memory import (
    _invalid,
    _write_op,
    new_memory_for,
    render_chunk,
    rendered,
)
from memhtml.ops.tree import TreeView

if TYPE_CHECKING:
    from memhtml.index.parallel import ParsePool

MAX_ORDINAL = 1000
# Write ops a batch needs before its renders run ahead on worker processes
# (forking and pickling cost less than they save above this), and per task.
RENDER_AHEAD_MIN: Final = 200
RENDER_CHUNK: Final = 100


@functools.lru_cache(maxsize=256)
def _placement(memory_type: str, workspace: str | None, tags: tuple[str, ...]) -> str:
    """placement_dir, remembered: a batch's ops mostly share a few folders."""
    return placement_dir(memory_type, workspace=workspace, tags=tags)


@dataclass
class Planner:
    """Plans ops against a tree view, for one batch under the repository lock."""

    view: TreeView
    now: str
    year: int
    active_path_for_hash: Callable[[str], str | None]
    is_dirty: Callable[[str], bool]
    ever_held: Callable[[str], bool] = lambda _path: False
    inbound: Callable[[str], list[tuple[str, str]]] = lambda _path: []
    claimed_hashes: dict[str, str] = field(default_factory=dict)
    docs: dict[bytes, MemoryDocument] = field(default_factory=dict)  # parses of rendered bytes
    vacated: set[str] = field(default_factory=set)
    # Links this batch authored (src, rel, dst): the index learns them only at commit.
    batch_links: list[tuple[str, str, str]] = field(default_factory=list)
    # Renders started ahead (render_ahead): id(op) -> (the op, its chunk's result, position).
    ahead: dict[int, tuple[WriteOp, Callable[[], list[Any]], int]] = field(default_factory=dict)
    # Memories refused for holding a credential (sleep counts them per phase).
    secrets_refused: int = 0

    # -- helpers ---------------------------------------------------------------
    def _doc(self, path: str) -> MemoryDocument:
        doc = parse_memory(self.view.read(path))
        if not doc.ok:
            raise _invalid(doc, path)
        return doc

    def _free_path(
        self, preferred: str, taken: set[str] | None = None, *, new_identity: bool = True
    ) -> str:
        """The first of preferred, preferred-2, ... that is free.

        A new memory (`new_identity`) never takes a path any memory ever held;
        an archive destination only needs to be unoccupied, since the memory
        that returns to its archive slot is the one that held it.
        """
        for ordinal in range(1, MAX_ORDINAL + 1):
            candidate = with_ordinal(preferred, ordinal)
            if (taken and candidate in taken) or self.view.exists(candidate):
                continue
            if candidate in self.vacated:
                continue
            if new_identity and self.ever_held(candidate):
                continue
            return candidate
        raise WriteConflictError(f"no free path near {preferred} after {MAX_ORDINAL} tries")

    def _duplicate_of(self, content_hash: str) -> str | None:
        holder = self.claimed_hashes.get(content_hash)
        if holder is not None:
            return holder
        existing = self.active_path_for_hash(content_hash)
        if existing is not None and existing not in self.vacated and self.view.exists(existing):
            return existing
        return None

    def _require_clean(self, path: str) -> None:
        if path not in self.view._overlay and self.is_dirty(path):
            import shlex

            from memhtml.ops.dirty import clean_tree_suggestions

            root = self.view.root
            raise DirtyTreeError(
                f"{path} has uncommitted edits; commit them or set them aside first",
                suggestions=[
                    f"see them: git -C {shlex.quote(str(root))} diff -- {shlex.quote(path)}",
                    *clean_tree_suggestions(root, [path]),
                ],
                details={"paths": [path], "count": 1},
            )

    def _render(self, new: NewMemory, what: str) -> tuple[bytes, MemoryDocument]:
        data, doc = rendered(new, what)
        self.docs[data] = doc
        return data, doc

    # -- write -------------------------------------------------------------------
    def new_memory(self, op: WriteOp, *, extra_links: Sequence[tuple[str, str]] = ()) -> NewMemory:
        """The NewMemory an op describes (validated field by field)."""
        return new_memory_for(op, self.now, extra_links=extra_links)

    def render_ahead(self, ops: Sequence[Any], pool: ParsePool) -> None:
        """Start rendering the batch's write ops on `pool`'s worker processes.

        A render depends on the op and the instant only, so a large batch's
        renders (most of its planning time) run on the other cores while this
        process plans; `write` takes each result in its turn. An op planned
        differently (replaced by a write-time check) is rendered as usual.
        """
        if not pool.parallel:
            return
        writes = [op for op in ops if isinstance(op, WriteOp)]
        for start in range(0, len(writes), RENDER_CHUNK):
            chunk = writes[start : start + RENDER_CHUNK]
            job = functools.cache(pool.submit(render_chunk, [(op, self.now) for op in chunk]))
            for k, op in enumerate(chunk):
                self.ahead[id(op)] = (op, job, k)

    def _rendered_write(self, op: WriteOp) -> tuple[bytes, MemoryDocument]:
        entry = self.ahead.pop(id(op), None)
        if entry is not None and entry[0] is op:
            result = entry[1]()[entry[2]]
            if result is not None:
                self.docs[result[0]] = result[1]
                return result
        return self._render(self.new_memory(op), f"memory {op.title!r}")

    def _choose_path(self, op: WriteOp) -> str:
        if op.path:
            path = memory_path(op.path)
            refuse_generated_name(path)
            if is_archived_path(path):
                raise InvalidPathError(f"{path}: new memories are not written into archive/")
            if self.view.exists(path) or path in self.vacated or self.ever_held(path):
                if op.strict_path:
                    raise WriteConflictError(
                        f"{path} is or was another memory's path",
                        suggestions=["drop --strict-path to get a suffix"],
                    )
                return self._free_path(path)
            return path
        folder = _placement(op.type, op.workspace, tuple(op.tag))
        return self._free_path(f"{folder}/{memory_slug(op.title)}.html")

    def refuse_secrets(
        self, data: bytes, doc: MemoryDocument, path: str | None, what: str, allow: bool = False
    ) -> None:
        """SecretFoundError when a memory about to be staged holds a credential (unless `allow`)."""
        from memhtml.contracts.errors import SecretFoundError
        from memhtml.ops.secret_guard import refuse_secrets

        try:
            refuse_secrets(data, doc, path, what=what, allow=allow)
        except SecretFoundError:
            self.secrets_refused += 1
            raise

    def write(self, op: WriteOp) -> dict[str, Any]:
        """Plan one write; a duplicate of an active memory is `deduped` and writes nothing."""
        data, doc = self._rendered_write(op)
        self.refuse_secrets(data, doc, op.path, "write", op.allow_secret)
        if op.type != "task":
            holder = self._duplicate_of(doc.content_hash)
            if holder is not None:
                return {
                    "path": holder,
                    "created": False,
                    "deduped": True,
                    "existing_path": holder,
                    "content_hash": doc.content_hash,
                }
        path = self._choose_path(op)
        self.view.write(path, data)
        self.batch_links.extend((path, link.rel, link.path) for link in doc.links)
        if op.type != "task":
            self.claimed_hashes[doc.content_hash] = path
        return {
            "path": path,
            "created": True,
            "deduped": False,
            "existing_path": None,
            "content_hash": doc.content_hash,
        }

    # -- archive -------------------------------------------------------------------
    def _archive_bytes(self, path: str, text: str, reason: str | None) -> tuple[str, str]:
        text = html_set_meta(text, "memhtml-status", "archived")
        text = html_set_meta(text, "memhtml-updated", self.now)
        text = html_set_meta(text, "memhtml-archived", self.now)
        destination = self._free_path(archive_path(path, self.year), new_identity=False)
        return destination, text

    def _live_target(self, raw: str, *, doing: str = "archive") -> tuple[str, MemoryDocument]:
        path = memory_path(raw)
        if is_archived_path(path):
            raise self._archived(path, doing)
        if not self.view.exists(path):
            raise PathNotFoundError(
                f"no memory at {path}", suggestions=["memhtml list", "memhtml resolve <path>"]
            )
        self._require_clean(path)
        return path, self._doc(path)

    def _archived(self, path: str, doing: str) -> PathNotFoundError | ArchivedMemoryError:
        """The refusal of `doing` on an archived path, naming the live memory it became."""
        if not self.view.exists(path):
            return PathNotFoundError(
                f"no memory at {path}", suggestions=["memhtml list", f"memhtml resolve {path}"]
            )
        live = self._successor(path)
        where = f"; the memory lives on at {live}" if live else ""
        return ArchivedMemoryError(
            f"{path} is archived: an archived version is history and is never changed in"
            f" place{where}",
            details={"path": path, "live_path": live},
            suggestions=(
                [f"memhtml {doing} {live}"] if live else [f"memhtml resolve {path}", "memhtml list"]
            ),
        )

    def _successor(self, path: str) -> str | None:
        """The live memory an archived one's superseded-by chain ends at, if any."""
        seen = {path}
        current = path
        while self.view.exists(current):
            try:
                nxt = parse_memory(self.view.read(current)).superseded_by
            except PathNotFoundError:
                return None
            if nxt is None or nxt in seen:
                return None
            if not is_archived_path(nxt):
                return nxt if self.view.exists(nxt) else None
            seen.add(nxt)
            current = nxt
        return None

    def archive(self, op: ArchiveOp) -> dict[str, Any]:
        """Plan a move into archive/<YYYY>/<path> with the archive stamps."""
        path, _ = self._live_target(op.path)
        text = self.view.read(path).decode("utf-8")
        destination, text = self._archive_bytes(path, text, op.reason)
        self.view.move(path, destination, text.encode("utf-8"))
        self.vacated.add(path)
        relinked, unrelinked = self._relink_inbound(path, lambda _rel: destination)
        return {
            "path": path,
            "archive_path": destination,
            "reason": op.reason,
            "relinked": relinked,
            "links_left": unrelinked,
        }

    # -- task status ---------------------------------------------------------------
    def set_task_status(self, raw: str, status: str) -> dict[str, Any]:
        """Plan a task's status change: a head-only edit, so the content hash stays.

        Only `memhtml-task-status` and `memhtml-updated` change; the same status
        again plans nothing (`unchanged: True`).
        """
        if status not in TASK_STATUSES:
            raise InvalidMemoryError(f"task status {status!r} is not one of {TASK_STATUSES}")
        path, doc = self._live_target(raw, doing="task status")
        if doc.memory_type != "task":
            raise InvalidMemoryError(
                f"{path} is a {doc.memory_type} memory, not a task",
                suggestions=["memhtml task list"],
            )
        previous = doc.task_status
        result = {
            "path": path,
            "task_status": status,
            "previous_status": previous,
            "content_hash": doc.content_hash,
        }
        if previous == status:
            return {**result, "unchanged": True}
        text = self.view.read(path).decode("utf-8")
        text = html_set_meta(text, "memhtml-task-status", status)
        text = html_set_meta(text, "memhtml-updated", self.now)
        self.view.write(path, text.encode("utf-8"))
        return {**result, "unchanged": False}

    # -- correct -------------------------------------------------------------------
    def correct(self, op: CorrectOp) -> dict[str, Any]:
        """Plan a replacement plus the original's archive, linked both ways.

        The replacement keeps the old version's head (memhtml.ops.correction:
        HEAD_FIELDS) and, without a given title, takes its title from the new
        claim when the claim changed.
        """
        from memhtml.ops.correction import LINKS_NOT_CARRIED, carried_head, choose_title

        path, original = self._live_target(op.target_path, doing="correct")
        memory_type = op.type or original.memory_type or "semantic"
        keep = carried_head(
            original,
            memory_type=memory_type,
            now=self.now,
            importance=op.importance,
            confidence=op.confidence,
        )
        write_op = _write_op(
            title=op.title or original.title,
            type=memory_type,
            claim=op.claim,
            body=op.body,
            article_html=op.article_html,
            session_id=op.session_id,
            prompt_id=op.prompt_id,
            turn_uuid=op.turn_uuid,
            **{k: v for k, v in keep.fields.items() if v is not None},
        )
        base = self.new_memory(write_op)
        base = base.replace(metas={**base.metas, **keep.metas}, aliases=keep.aliases)
        _, draft = rendered(base, f"correction of {path}")
        title, title_from = choose_title(op.title, original, draft.gist)
        base = base.replace(title=" ".join(title.split()))
        folder = path.rsplit("/", 1)[0]
        new_path = self._free_path(f"{folder}/{memory_slug(base.title)}.html", taken={path})
        archived_to = self._free_path(archive_path(path, self.year), new_identity=False)
        # The replacement keeps what the original asserted about other memories;
        # supersedence and session provenance belong to the version they were about.
        carried = tuple(
            (link.rel, link.path)
            for link in original.links
            if link.rel not in LINKS_NOT_CARRIED and link.path != new_path
        )
        new = base.replace(links=(("supersedes", archived_to), *dict.fromkeys(carried)))
        data, doc = self._render(new, f"correction of {path}")
        self.refuse_secrets(data, doc, None, f"correction of {path}", op.allow_secret)
        if doc.content_hash == original.content_hash:
            raise InvalidMemoryError(
                f"the correction of {path} says exactly what it says now",
                suggestions=["change the claim or body"],
            )
        if memory_type != "task":
            holder = self._duplicate_of(doc.content_hash)
            if holder is not None and holder != path:
                raise DuplicateContentError(
                    f"{holder} already holds this content",
                    suggestions=[
                        f"memhtml archive {path}",
                        f"memhtml link {holder} supersedes {path}",
                    ],
                )
        old_text = self._superseded_text(path, original, new_path, until=self.now)
        self.view.move(path, archived_to, old_text.encode("utf-8"))
        self.vacated.add(path)
        self.view.write(new_path, data)
        self.batch_links.extend((new_path, link.rel, link.path) for link in doc.links)
        if memory_type != "task":
            self.claimed_hashes[doc.content_hash] = new_path
        # Citations of the old version now name its replacement; a `supersedes`
        # link was about that version, so it follows the version into the archive.
        relinked, unrelinked = self._relink_inbound(
            path, lambda rel: archived_to if rel == "supersedes" else new_path
        )
        return {
            "path": new_path,
            "target_path": path,
            "archive_path": archived_to,
            "superseded": [archived_to],
            "archived": [archived_to],
            "reason": op.reason,
            "title": new.title,
            "title_from": title_from,
            "content_hash": doc.content_hash,
            "relinked": relinked,
            "links_left": unrelinked,
        }

    def _superseded_text(
        self, path: str, original: MemoryDocument, successor: str, *, until: str
    ) -> str:
        """`path`'s text stamped archived and superseded by `successor`, valid until `until`
        (an earlier valid-until it already carries wins)."""
        text = self.view.read(path).decode("utf-8")
        text = html_set_meta(text, "memhtml-status", "archived")
        text = html_set_meta(text, "memhtml-updated", self.now)
        text = html_set_meta(text, "memhtml-archived", self.now)
        text = html_set_meta(text, "memhtml-superseded-by", path_to_href(successor))
        if not original.valid_until or original.valid_until > until:
            text = html_set_meta(text, "memhtml-valid-until", until)
        return text

    # -- supersede (consolidation) ---------------------------------------------------
    def supersede(self, winner: str, loser: str) -> dict[str, Any]:
        """Plan `winner` (already in the view) superseding the live memory `loser`.

        The hand-off `correct` makes, for a memory written by another op: the
        loser moves to archive/<YYYY>/ stamped archived and superseded by the
        winner, valid until the winner's valid-from; the winner links
        `supersedes` to the archive copy and gains a valid-from when it has
        none (its event time, else now). Inbound links follow as in `correct`.
        """
        path, original = self._live_target(loser)
        if path == winner:
            raise InvalidMemoryError(f"{path} cannot supersede itself")
        self._require_clean(winner)
        successor = self._doc(winner)
        valid_from = successor.valid_from or successor.event_at or self.now
        archived_to = self._free_path(archive_path(path, self.year), new_identity=False)
        old_text = self._superseded_text(path, original, winner, until=valid_from)
        self.view.move(path, archived_to, old_text.encode("utf-8"))
        self.vacated.add(path)
        text = self.view.read(winner).decode("utf-8")
        if not successor.valid_from:
            text = html_set_meta(text, "memhtml-valid-from", valid_from)
        text = html_add_link(text, "supersedes", archived_to)
        self.view.write(winner, text.encode("utf-8"))
        self.batch_links.append((winner, "supersedes", archived_to))
        relinked, unrelinked = self._relink_inbound(
            path, lambda rel: archived_to if rel == "supersedes" else winner
        )
        return {
            "target_path": path,
            "archive_path": archived_to,
            "relinked": relinked,
            "links_left": unrelinked,
        }

    # -- inbound links -------------------------------------------------------------
    def _relink_inbound(
        self, path: str, target_for: Callable[[str], str]
    ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
        """Point every authored link at `path` to where the memory went, in the same batch.

        An archive or correct leaves the graph as whole as it found it. A
        source with uncommitted edits is left alone (its owner's work is never
        committed by us) and reported, for `doctor --fix` once it is clean.
        """
        done: list[dict[str, str]] = []
        left: list[dict[str, str]] = []
        pending = [(src, rel) for src, rel, dst in self.batch_links if dst == path]
        for src, rel in dict.fromkeys([*self.inbound(path), *pending]):
            if src == path or src in self.vacated or not self.view.exists(src):
                continue
            target = target_for(rel)
            entry = {"src_path": src, "rel": rel, "from": path, "to": target}
            if src not in self.view._overlay and self.is_dirty(src):
                left.append({**entry, "reason": "source has uncommitted edits"})
                continue
            text = self.view.read(src).decode("utf-8")
            text = html_remove_link(text, rel, path)
            if target != src:
                text = html_add_link(text, rel, target)
            self.view.write(src, text.encode("utf-8"))
            done.append(entry)
        return done, left

    # -- link ----------------------------------------------------------------------
    def link(self, op: LinkOp) -> dict[str, Any]:
        """Plan an authored link in SRC's head; idempotent."""
        rel = normalize_rel(op.rel)
        if rel is None:
            raise InvalidMemoryError(
                f"unknown rel {op.rel!r}", suggestions=["memhtml help link lists the rels"]
            )
        if rel == "from_session":
            raise InvalidMemoryError(
                "from_session is provenance the write doors record from --session-id;"
                " it is never authored",
                suggestions=["memhtml write ... --session-id ID"],
            )
        src, dst = memory_path(op.src), memory_path(op.dst)
        if src == dst:
            raise InvalidMemoryError("a memory cannot link to itself")
        for p in (src, dst):
            if not self.view.exists(p):
                raise PathNotFoundError(f"no memory at {p}", suggestions=["memhtml list"])
        self._require_clean(src)
        src_doc, dst_doc = self._doc(src), self._doc(dst)
        edge_class = REL_CLASS[rel]
        src_task, dst_task = src_doc.memory_type == "task", dst_doc.memory_type == "task"
        if edge_class == "task" and not (src_task and dst_task):
            raise InvalidMemoryError(f"{rel} links a task to a task")
        if edge_class == "memory" and (src_task or dst_task):
            raise InvalidMemoryError(f"{rel} is a memory relation; tasks use blocks/subtask_of")
        if edge_class == "person" and not live_path_of(dst).startswith(PEOPLE_DIR + "/"):
            raise InvalidMemoryError(f"{rel} points at a person file under {PEOPLE_DIR}/")
        if any(link.rel == rel and link.path == dst for link in src_doc.links):
            return {"src_path": src, "rel": rel, "dst_path": dst, "created": False}
        text = self.view.read(src).decode("utf-8")
        self.view.write(src, html_add_link(text, rel, dst).encode("utf-8"))
        self.batch_links.append((src, rel, dst))
        return {"src_path": src, "rel": rel, "dst_path": dst, "created": True}
