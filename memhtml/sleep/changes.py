"""A night's output as changes: one decision each, with a stable id, its files and its reason.

A phase proposes each decision before it stages it and closes it after:

    change = ctx.changes.propose("fold", {"loser": ..., "loser_hash": ...}, summary=..., reason=...)
    if change is None:        # a person refused it (a standing dismissal), or a merge leaves it out
        continue
    moved = merge_into(ctx, loser, survivor)
    ctx.changes.done(change, ok=moved is not None)

Between the two the recorder watches the phase's tree view (`TreeView.observer`), so it
knows exactly which files the decision changed, with their bytes before and after; two
decisions of one phase that edit the same file (two copies folding into one survivor)
each get their own before and after. Edits no decision accounts for (a phase not
instrumented, a test's stand-in) become one change per file, so every edit a night makes
is in exactly one change.

**Identity.** A change's id is `c` and 12 hex of sha256 over its phase, kind and the
decision's inputs (paths, content hashes, keys; never a commit id, a run id or a clock),
so the same decision over the same files has the same id in every `review`, after a
`resume`, in the night a refusing merge rebuilds, and on a later night. A person's
refusal is that id (memhtml.sleep.refusals): a later night does not make the decision
again until an input changes (a new content hash is a new id).

**Dependencies.** A change depends on an earlier one of the night that created a file it
reads or writes, or moved one there or away (a link to a person record created tonight,
a task quoting a canonical compress wrote). `sleep merge --refuse` is exact (it rebuilds
the night without the refused decisions, memhtml.sleep.rebuild); `depends_on` is what a
reviewer is shown beforehand.

**The manifest.** The engine appends each phase's changes and vetoes, one JSON object a
line, to `.memhtml/sleep/<run-id>.changes.jsonl` in the phase's own commit, as it does
the pending ledger: the changes are part of what the branch holds, and a kill between a
commit and its manifest cannot happen. Blobs a decision left in between (a survivor after
the first of two folds) are written to the object store with the commit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from memhtml.store.git import blob_sha

if TYPE_CHECKING:
    import sqlite3

    from memhtml.ops.tree import TreeView

BOOKKEEPING: Final = ".memhtml/sleep/"  # the runs' own files (memhtml.sleep.runs.SLEEP_DIR)
# The state plane's export and other engine files under .memhtml/ follow whatever lands:
# shown, never refused.
DERIVED: Final = ".memhtml/"
ID_PREFIX: Final = "c"
ID_HEX: Final = 12
# Allow(change id, derived) -> None when the decision may be made, else why not.
Allow = Callable[[str, bool], "str | None"]


def change_id(phase: str, kind: str, inputs: Mapping[str, Any]) -> str:
    """`c` + 12 hex of sha256 over (phase, kind, inputs): the same decision, the same id."""
    raw = json.dumps(
        [phase, kind, _plain(inputs)], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return ID_PREFIX + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:ID_HEX]


def is_change_id(text: str) -> bool:
    """True when `text` has the shape of a change id."""
    body = text[len(ID_PREFIX) :]
    return (
        text.startswith(ID_PREFIX)
        and len(body) == ID_HEX
        and all(c in "0123456789abcdef" for c in body)
    )


def _plain(value: Any) -> Any:
    """Inputs as JSON can carry them identically every time (tuples as lists, no floats)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, set | frozenset) else items
    if isinstance(value, float):
        raise TypeError("a change's inputs carry no floats (render them as text)")
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


@dataclass(frozen=True)
class FileEdit:
    """One file a change edited: its blob before and after (None: absent), and where a
    moved file came from."""

    path: str
    before: str | None
    after: str | None
    from_path: str | None = None

    def to_data(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "path": self.path,
            "from_path": self.from_path,
            "before": self.before,
            "after": self.after,
        }

    @classmethod
    def from_data(cls, raw: Mapping[str, Any]) -> FileEdit:
        """From a manifest line."""
        return cls(
            str(raw["path"]),
            raw.get("before"),
            raw.get("after"),
            raw.get("from_path"),
        )

    @property
    def status(self) -> str:
        """created, removed, moved or modified."""
        if self.from_path is not None:
            return "moved"
        if self.before is None:
            return "created"
        if self.after is None:
            return "removed"
        return "modified"


@dataclass
class Change:
    """One decision of a night."""

    id: str
    phase: str
    kind: str
    summary: str
    reason: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)
    files: list[FileEdit] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    derived: bool = False  # follows whatever lands (a sidecar, the site): never refused

    @property
    def outputs(self) -> set[str]:
        """Paths this change brought into being or emptied (created, moved to or from)."""
        out: set[str] = set()
        for f in self.files:
            if f.before is None or f.from_path is not None:
                out.add(f.path)
            if f.from_path is not None:
                out.add(f.from_path)
        return out

    @property
    def uses(self) -> set[str]:
        """Paths the decision read or edited."""
        return set(self.reads) | {p for f in self.files for p in (f.path, f.from_path) if p}

    def to_data(self) -> dict[str, Any]:
        """JSON-ready (a manifest line without its `type`)."""
        return {
            "id": self.id,
            "phase": self.phase,
            "kind": self.kind,
            "summary": self.summary,
            "reason": self.reason,
            "inputs": self.inputs,
            "reads": self.reads,
            "files": [f.to_data() for f in self.files],
            "depends_on": self.depends_on,
            "derived": self.derived,
        }

    @classmethod
    def from_data(cls, raw: Mapping[str, Any]) -> Change:
        """From a manifest line."""
        return cls(
            id=str(raw["id"]),
            phase=str(raw.get("phase") or ""),
            kind=str(raw.get("kind") or "edit"),
            summary=str(raw.get("summary") or ""),
            reason=dict(raw.get("reason") or {}),
            inputs=dict(raw.get("inputs") or {}),
            reads=[str(p) for p in raw.get("reads") or []],
            files=[FileEdit.from_data(f) for f in raw.get("files") or []],
            depends_on=[str(d) for d in raw.get("depends_on") or []],
            derived=bool(raw.get("derived")),
        )


@dataclass
class Veto:
    """A decision considered and not made: the guard or rule that said no, and the numbers."""

    phase: str
    kind: str
    summary: str
    reason: dict[str, Any] = field(default_factory=dict)
    id: str | None = None  # the change it would have been, when a person's refusal stood

    def to_data(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "phase": self.phase,
            "kind": self.kind,
            "summary": self.summary,
            "reason": self.reason,
            "id": self.id,
        }


@dataclass
class _Open:
    change: Change
    before: dict[str, bytes | None]  # path -> its bytes when this change first touched it
    moved: dict[str, str]  # destination -> origin, for moves inside this change


class ChangeLog:
    """The decisions one phase makes, recorded as it stages them.

    Without an engine (a phase run on its own in a test) the log allows every decision
    and records nothing it is not asked to.
    """

    def __init__(
        self,
        phase: str = "",
        allow: Allow | None = None,
        outputs: dict[str, str] | None = None,
    ) -> None:
        self.phase = phase
        self.allow = allow
        # path -> the change of this night that created or moved it (all phases so far)
        self.outputs: dict[str, str] = outputs if outputs is not None else {}
        self.changes: list[Change] = []
        self.vetoes: list[Veto] = []
        self._open: _Open | None = None
        self._view: TreeView | None = None
        self._loose: dict[str, bytes | None] = {}
        self._loose_moves: dict[str, str] = {}
        self._bytes: dict[str, bytes] = {}  # blob sha -> bytes, of every state recorded

    # -- watching the view -------------------------------------------------------------
    def bind(self, view: TreeView) -> None:
        """Watch `view`: every write, delete and move from now on is attributed."""
        self._view = view
        view.observer = self._observe

    def unbind(self) -> None:
        """Stop watching (the engine's own bookkeeping files are no decision)."""
        if self._view is not None:
            self._view.observer = None

    def _current(self, path: str) -> bytes | None:
        view = self._view
        assert view is not None
        return view.read(path) if view.exists(path) else None

    def _observe(self, what: str, path: str, old: str | None) -> None:
        held = self._open.before if self._open is not None else self._loose
        moves = self._open.moved if self._open is not None else self._loose_moves
        if what == "move" and old is not None:
            if old not in held:
                held[old] = self._current(old)
            moves[path] = moves.pop(old, old)
        if path not in held:
            held[path] = self._current(path)

    # -- decisions ---------------------------------------------------------------------
    def withheld(self, kind: str, inputs: Mapping[str, Any], derived: bool = False) -> str | None:
        """Why the decision may not be made (None: it may), asked before a phase plans on it."""
        if self.allow is None:
            return None
        return self.allow(change_id(self.phase, kind, inputs), derived)

    def propose(
        self,
        kind: str,
        inputs: Mapping[str, Any],
        *,
        summary: str,
        reason: Mapping[str, Any] | None = None,
        reads: Iterable[str] = (),
        derived: bool = False,
    ) -> Change | None:
        """Open a decision; None when it may not be made (refused, or left out of a rebuild),
        which is recorded as a veto saying why."""
        cid = change_id(self.phase, kind, inputs)
        if self.allow is not None:
            why = self.allow(cid, derived)
            if why is not None:
                self.vetoes.append(
                    Veto(self.phase, kind, summary, {"why": why, **dict(reason or {})}, cid)
                )
                return None
        if self._open is not None:  # a decision its phase left open ends where the next begins
            self.done(self._open.change)
        change = Change(
            id=cid,
            phase=self.phase,
            kind=kind,
            summary=summary,
            reason=dict(reason or {}),
            inputs=_plain(inputs),
            reads=sorted(set(reads)),
            derived=derived,
        )
        self._open = _Open(change, {}, {})
        return change

    def done(
        self,
        change: Change,
        *,
        ok: bool = True,
        reason: Mapping[str, Any] | None = None,
        summary: str | None = None,
    ) -> bool:
        """Close a decision: its files are what changed since `propose`. With `ok` false (the
        Planner refused it) nothing is recorded. True when the change was recorded."""
        held = self._open
        if held is None or held.change is not change:
            return False
        self._open = None
        if reason:
            change.reason.update(reason)
        if summary:
            change.summary = summary
        if self._view is None:  # not watching a view (a phase run on its own): kept as told
            if ok:
                self.changes.append(change)
            return ok
        files = self._edits(held.before, held.moved) if ok else []
        if not files:
            for path, data in held.before.items():  # anything staged anyway is no one's
                self._loose.setdefault(path, data)
            for new, old in held.moved.items():
                self._loose_moves.setdefault(new, old)
            return False
        change.files = files
        self.changes.append(change)
        return True

    def veto(
        self,
        kind: str,
        summary: str,
        reason: Mapping[str, Any] | None = None,
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        """A decision considered and not made (a guard fired, a rule held it back); with its
        `inputs`, the id the change would have had."""
        cid = change_id(self.phase, kind, inputs) if inputs is not None else None
        self.vetoes.append(Veto(self.phase, kind, summary, dict(reason or {}), cid))

    def _blob(self, data: bytes | None) -> str | None:
        if data is None:
            return None
        sha = blob_sha(data)
        self._bytes[sha] = data
        return sha

    def _edits(
        self, before: Mapping[str, bytes | None], moved: Mapping[str, str]
    ) -> list[FileEdit]:
        origins = {old for new, old in moved.items() if new != old}
        out: list[FileEdit] = []
        for path, was in before.items():
            now = self._current(path)
            origin = moved.get(path)
            if origin is not None and origin != path:
                if now is None:
                    continue  # moved on again inside the same decision: reported there
                prior = before.get(origin)
                out.append(FileEdit(path, self._blob(prior), self._blob(now), from_path=origin))
                continue
            if path in origins and now is None:
                continue  # the source of a move: reported with its destination
            if now == was:
                continue
            out.append(FileEdit(path, self._blob(was), self._blob(now)))
        return out

    # -- the phase's end -------------------------------------------------------------
    def finish(self, kind_of: Mapping[str, str] | None = None) -> None:
        """Close the phase: edits no decision accounts for become one change per file (kind
        from the phase's own Touched records, else `edit`; reverted when not allowed), and
        every change learns what it depends on."""
        if self._open is not None:
            self.done(self._open.change)
        if self._view is None:
            return
        kinds = kind_of or {}
        loose = self._edits(self._loose, self._loose_moves)
        self._loose, self._loose_moves = {}, {}
        for edit in loose:
            if edit.path.startswith(BOOKKEEPING):
                continue  # the run's report, ledger and manifest describe changes; none is one
            kind = kinds.get(edit.path) or "edit"
            inputs = {"path": edit.path, "from": edit.from_path, "before": edit.before}
            cid = change_id(self.phase, kind, inputs)
            derived = edit.path.startswith(DERIVED)
            why = self.allow(cid, derived) if self.allow is not None else None
            if why is not None:
                self._revert(edit)
                self.vetoes.append(Veto(self.phase, kind, _describe(edit), {"why": why}, cid))
                continue
            self.changes.append(
                Change(
                    id=cid,
                    phase=self.phase,
                    kind=kind,
                    summary=_describe(edit),
                    inputs=_plain(inputs),
                    files=[edit],
                    derived=edit.path.startswith(DERIVED),
                )
            )
        self.unbind()
        for change in self.changes:
            if not change.derived:
                deps = {self.outputs[p] for p in change.uses if p in self.outputs}
                change.depends_on = sorted(deps - {change.id})
            for path in change.outputs:
                self.outputs[path] = change.id

    def _revert(self, edit: FileEdit) -> None:
        """Put a file an unallowed loose edit changed back as it was before the phase."""
        view = self._view
        assert view is not None
        before = self._bytes.get(edit.before or "")
        if edit.from_path is not None:
            view.delete(edit.path)
            if before is not None:
                view.write(edit.from_path, before)
        elif before is None:
            view.delete(edit.path)
        else:
            view.write(edit.path, before)

    def intermediate(
        self, final: Mapping[str, bytes | None], tip: Callable[[str], str | None]
    ) -> list[bytes]:
        """Bytes recorded as some change's before or after that neither the tip nor the
        phase's commit holds (a file two decisions edited in turn): stored with the commit,
        so review shows each decision's own diff."""
        held: set[str] = set()
        for data in final.values():
            if data is not None:
                held.add(blob_sha(data))
        needed: dict[str, bytes] = {}
        for change in self.changes:
            for f in change.files:
                origin = f.from_path or f.path
                for sha, where in ((f.before, origin), (f.after, f.path)):
                    if sha is None or sha in held or tip(where) == sha:
                        continue
                    data = self._bytes.get(sha)
                    if data is not None:
                        needed[sha] = data
        return list(needed.values())


def _describe(edit: FileEdit) -> str:
    if edit.from_path is not None:
        return f"move {edit.from_path} to {edit.path}"
    if edit.before is None:
        return f"create {edit.path}"
    if edit.after is None:
        return f"remove {edit.path}"
    return f"edit {edit.path}"


def content_hash(conn: sqlite3.Connection, view: TreeView | None, path: str) -> str:
    """A memory's content hash as a decision sees it: the view's bytes when this phase
    staged them, else the run index's projection (else the bytes, parsed)."""
    if view is None or not view.staged(path):
        row = conn.execute("SELECT content_hash FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None and row[0]:
            return str(row[0])
    if view is None or not view.exists(path):
        return ""
    from memhtml.html import parse_memory

    return parse_memory(view.read(path)).content_hash or ""


# -- the manifest -------------------------------------------------------------------


def encode(changes: Sequence[Change], vetoes: Sequence[Veto]) -> bytes:
    """Manifest lines (sorted keys, UTF-8), secrets redacted from the words (never the ids)."""
    from memhtml.domain.secrets import redact

    lines = [{"type": "change", **c.to_data()} for c in changes]
    lines += [{"type": "veto", **v.to_data()} for v in vetoes]
    return b"".join(
        redact(json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False)).encode(
            "utf-8"
        )
        + b"\n"
        for line in lines
    )


def decode(data: bytes) -> tuple[list[Change], list[Veto]]:
    """The changes and vetoes of a manifest, in the order the night made them (a line that
    is not one is skipped: the manifest describes, the branch is the truth)."""
    changes: list[Change] = []
    vetoes: list[Veto] = []
    for line in data.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if not isinstance(raw, dict):
            continue
        try:
            if raw.get("type") == "change":
                changes.append(Change.from_data(raw))
            elif raw.get("type") == "veto":
                vetoes.append(
                    Veto(
                        str(raw.get("phase") or ""),
                        str(raw.get("kind") or ""),
                        str(raw.get("summary") or ""),
                        dict(raw.get("reason") or {}),
                        raw.get("id"),
                    )
                )
        except (KeyError, TypeError, ValueError):
            continue
    return changes, vetoes


def outputs_of(changes: Iterable[Change]) -> dict[str, str]:
    """path -> the change that last created or moved it (a resumed night's starting map)."""
    out: dict[str, str] = {}
    for change in changes:
        for path in change.outputs:
            out[path] = change.id
    return out
