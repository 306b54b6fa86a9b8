"""The write-time checks of a batch: frame conflicts, likely restatements, last-wins.

`apply --detect-conflicts` / MCP `detect_conflicts`: every write op whose
claim has a frame key (`memhtml.domain.frame`) is compared with the active
memories of that frame and with the batch's earlier writes; one whose value
conflicts (`memhtml.domain.conflicts`) carries `conflict` (the first: an
active memory by path order, else the first earlier op of the batch) and
`conflicts` (all of them), each naming the other side's path and claim. The
write is made anyway; `--strict` holds it instead (ERR_CONFLICT, so an atomic
batch commits nothing).

`apply --consolidate last-wins` / MCP `consolidate`: before planning, a later
write of a frame whose value conflicts with an earlier write's takes that
write's place (the earlier content is never written; the later op reports
`consolidated_into` the slot's index). After a slot's write is planned, every
active memory of its frame with a conflicting value is superseded by it in
the same commit (`Planner.supersede`: archived, linked both ways, validity
handed over), so the corpus holds one current value per frame.

`apply --detect-near-duplicates` / MCP `detect_near_duplicates`: after the
commit, each new memory lists the active memories it likely restates
(`memhtml.domain.conflicts.restates`): one frame with a compatible value, or
vectors at least `RESTATEMENT_COSINE` alike with no anti-merge guard firing.
Report only; an exact duplicate is still `deduped` by the write door.

The store lookup of a frame finds its active occupants through the FTS
index (a phrase query on the frame's words, then the exact frame of each
hit's gist), so no column or migration is needed; a lookup that fails is a
warning and the batch's own ops are still compared.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from memhtml.contracts.errors import ConflictError, InvalidFlagError, MemhtmlError
from memhtml.contracts.ops import WriteOp
from memhtml.domain.conflicts import asserts, claims_conflict, restates
from memhtml.domain.frame import split_frame
from memhtml.ops.new_memory import split_claim

if TYPE_CHECKING:
    from memhtml.ops.batch import AnyOp
    from memhtml.ops.corpus import Corpus
    from memhtml.ops.writes import Planner

CONSOLIDATE_MODES: Final = ("last-wins",)
NEAR_DUPLICATE_CANDIDATES: Final = 8  # nearest memories by vector judged per new memory
MAX_LISTED: Final = 5  # near-duplicates listed per op


@dataclass(frozen=True)
class WriteChecks:
    """Which checks a batch runs (all off: the plain write door)."""

    detect_conflicts: bool = False
    detect_near_duplicates: bool = False
    consolidate: Literal["last-wins"] | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        if self.consolidate is not None and self.consolidate not in CONSOLIDATE_MODES:
            raise InvalidFlagError(
                f"consolidate {self.consolidate!r} is not one of {', '.join(CONSOLIDATE_MODES)}"
            )
        if self.strict and self.consolidate is not None:
            raise InvalidFlagError(
                "--strict holds conflicting writes and --consolidate supersedes with them;"
                " give one",
                suggestions=["memhtml help apply"],
            )

    @property
    def active(self) -> bool:
        """True when any check runs."""
        return bool(
            self.detect_conflicts or self.detect_near_duplicates or self.consolidate or self.strict
        )

    @property
    def frames(self) -> bool:
        """True when write ops need their frames compared."""
        return bool(self.detect_conflicts or self.consolidate or self.strict)


def claim_of(op: WriteOp) -> str:
    """The claim a write op's memory will carry ("" for caller-owned article HTML)."""
    if op.article_html is not None:
        return ""
    if op.claim is not None and op.claim.strip():
        return op.claim.strip()
    return split_claim(op.body or ())[0]


def _keyed(op: AnyOp) -> tuple[str, tuple[str, str]] | None:
    """(claim, (frame key, value)) of a fact-writing op; None for tasks and unkeyed claims."""
    if not isinstance(op, WriteOp) or op.type == "task":
        return None
    claim = claim_of(op)
    parts = split_frame(claim) if claim and asserts(claim) else None
    return None if parts is None else (claim, parts)


def _phrase(key: str) -> str:
    return '"' + key.replace('"', '""') + '"'


@dataclass(frozen=True)
class Occupant:
    """An active memory of a frame."""

    path: str
    claim: str


@dataclass
class _Planned:
    index: int
    path: str | None
    claim: str
    key: str


@dataclass
class BatchChecks:
    """The checks for one batch, planned op by op under the write door's lock."""

    corpus: Corpus
    checks: WriteChecks
    ops: Sequence[AnyOp]
    replacement: dict[int, WriteOp] = field(default_factory=dict)  # slot -> the op it writes
    source: dict[int, int] = field(default_factory=dict)  # slot -> that op's index
    losers: dict[int, int] = field(default_factory=dict)  # op index -> slot index
    warnings: list[str] = field(default_factory=list)
    _planned: list[_Planned] = field(default_factory=list)
    _occupants: dict[str, list[Occupant]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.checks.consolidate == "last-wins":
            self._last_wins()

    # -- last-wins inside the batch ---------------------------------------------------
    def _last_wins(self) -> None:
        """A later write whose value conflicts with an earlier one of its frame takes its slot."""
        slots: dict[str, list[int]] = {}  # frame key -> live slots, in order
        content: dict[int, tuple[WriteOp, str]] = {}
        for i, op in enumerate(self.ops):
            keyed = _keyed(op)
            if keyed is None:
                continue
            assert isinstance(op, WriteOp)
            claim, (key, _) = keyed
            beaten = [s for s in slots.get(key, []) if claims_conflict(claim, content[s][1])]
            if not beaten:
                slots.setdefault(key, []).append(i)
                content[i] = (op, claim)
                continue
            slot, *dropped = beaten
            content[slot] = (op, claim)
            self.replacement[slot] = op
            self.source[slot] = i
            self.losers[i] = slot
            for other in dropped:  # earlier writes the winner also contradicts
                self.losers[other] = slot
                self.replacement.pop(other, None)
                self.source.pop(other, None)
                slots[key].remove(other)
                for j, into in self.losers.items():
                    if into == other:
                        self.losers[j] = slot

    def loser_result(self, index: int) -> dict[str, Any]:
        """The result of an op whose content another op's write replaced."""
        op = self.ops[index]
        return {
            "index": index,
            "op": op.op,
            "ok": True,
            "skipped": False,
            "changed": False,
            "consolidated_into": self.losers[index],
        }

    def settle_losers(self, results: list[dict[str, Any]]) -> None:
        """A loser whose slot failed or was skipped is itself skipped (nothing it said landed)."""
        by_index = {r["index"]: r for r in results}
        for i, slot in self.losers.items():
            won = by_index.get(slot)
            if won is None or not won.get("ok") or won.get("skipped"):
                by_index[i].clear()
                by_index[i].update({"index": i, "op": self.ops[i].op, "ok": False, "skipped": True})

    # -- the store's side ---------------------------------------------------------------
    def occupants(self, key: str) -> list[Occupant]:
        """The active non-task memories whose claim has frame `key`, by path."""
        if key in self._occupants:
            return self._occupants[key]
        found: list[Occupant] = []
        try:
            rows = self.corpus.conn.execute(
                "SELECT f.path, f.gist FROM files_fts JOIN files f ON f.id = files_fts.rowid"
                " WHERE files_fts MATCH ? AND f.archived = 0 AND f.memory_type <> 'task'"
                " ORDER BY f.path",
                (_phrase(key),),
            ).fetchall()
        except sqlite3.Error as exc:
            self.warnings.append(f"frame lookup for {key!r} failed ({exc}); batch ops only")
            rows = []
        for path, gist in rows:
            parts = split_frame(str(gist))
            if parts is not None and parts[0] == key:
                found.append(Occupant(str(path), str(gist)))
        self._occupants[key] = found
        return found

    # -- planning one op -----------------------------------------------------------------
    def plan(
        self, planner: Planner, op: AnyOp, index: int, plain: Callable[[AnyOp], dict[str, Any]]
    ) -> dict[str, Any]:
        """Plan op `index` (its slot's content when last-wins replaced it) with the checks.

        A slot that writes a later op's content says which (`content_from`).
        """
        if index in self.replacement:
            payload = self._plan_keyed(planner, self.replacement[index], index, plain)
            return {**payload, "content_from": self.source[index]}
        return self._plan_keyed(planner, op, index, plain)

    def _plan_keyed(
        self, planner: Planner, op: AnyOp, index: int, plain: Callable[[AnyOp], dict[str, Any]]
    ) -> dict[str, Any]:
        keyed = _keyed(op) if self.checks.frames else None
        if keyed is None:
            return plain(op)
        claim, (key, _) = keyed
        live = [
            o
            for o in self.occupants(key)
            if o.path not in planner.vacated and planner.view.exists(o.path)
        ]
        beaten = [o for o in live if claims_conflict(claim, o.claim)]
        stored = [
            {"path": o.path, "batch_index": None, "claim": o.claim, "frame_key": key}
            for o in beaten
        ]
        earlier = [
            {"path": p.path, "batch_index": p.index, "claim": p.claim, "frame_key": key}
            for p in self._planned
            if p.key == key and claims_conflict(claim, p.claim)
        ]
        found = stored + earlier
        if self.checks.strict and found:
            first = found[0]
            where = first["path"] or f"op index {first['batch_index']}"
            raise ConflictError(
                f"the write conflicts with {where} ({first['claim']!r}); held (--strict)",
                suggestions=[
                    "correct the existing memory instead: memhtml correct <path>",
                    "or drop --strict to write it and keep the report",
                ],
                details={"conflict": first, "conflicts": found},
            )
        payload = plain(op)
        if self.checks.detect_conflicts:
            payload["conflict"] = found[0] if found else None
            payload["conflicts"] = found
        if self.checks.consolidate and beaten:
            payload.update(self._supersede(planner, payload["path"], [o.path for o in beaten]))
        self._planned.append(_Planned(index, payload.get("path"), claim, key))
        return payload

    def _supersede(self, planner: Planner, winner: str, losers: Sequence[str]) -> dict[str, Any]:
        done: list[dict[str, Any]] = []
        left: list[dict[str, str]] = []
        for loser in losers:
            if loser == winner:  # deduped onto the occupant itself: nothing to supersede
                continue
            try:
                done.append(planner.supersede(winner, loser))
            except MemhtmlError as exc:  # e.g. the occupant has uncommitted edits
                left.append({"path": loser, "code": exc.code, "error": exc.message})
        out: dict[str, Any] = {
            "superseded_path": done[0]["archive_path"] if done else None,
            "superseded": [d["archive_path"] for d in done],
        }
        if left:
            out["supersede_left"] = left
        return out

    # -- after the commit: likely restatements -----------------------------------------
    def near_duplicates(self, results: Sequence[dict[str, Any]]) -> int:
        """Attach `near_duplicates` to every write that created a memory; returns how many
        have at least one."""
        written = [
            r for r in results if r.get("ok") and r.get("op") == "write" and r.get("changed")
        ]
        if not written:
            return 0
        conn = self.corpus.conn
        vectors = self._vector_source()
        with_any = 0
        for result in written:
            path = result["path"]
            row = conn.execute(
                "SELECT gist, content_hash FROM files WHERE path = ? AND memory_type <> 'task'",
                (path,),
            ).fetchone()
            if row is None:
                continue
            claim, chash = str(row[0]), str(row[1])
            found = self._restated(path, claim, chash, vectors)
            result["near_duplicates"] = found[:MAX_LISTED]
            with_any += bool(found)
        return with_any

    def _vector_source(self) -> Any:
        """(matrix, norms) when the vector space is usable, else None (frames only)."""
        from memhtml.index.embedding import space_matches

        embedder = self.corpus.embedder
        if embedder is None or not space_matches(self.corpus.conn, embedder):
            self.warnings.append("near-duplicates judged by frames only (no usable vectors)")
            return None
        matrix = self.corpus.vector_matrix()
        if matrix is None or matrix.rows == 0:
            return None
        return matrix, lambda: self.corpus.vector_norms(matrix)  # only an exact scan needs them

    def _restated(self, path: str, claim: str, chash: str, vectors: Any) -> list[dict[str, Any]]:
        from memhtml.domain.vectors import cosine_similarity

        conn = self.corpus.conn
        candidates: dict[str, str] = {}  # path -> gist
        parts = split_frame(claim)
        if parts is not None:
            self._occupants.pop(parts[0], None)  # the commit changed the frame's occupants
            candidates.update({o.path: o.claim for o in self.occupants(parts[0])})
        vecs: dict[str, Any] = {}
        if vectors is not None:
            from memhtml.index.scope import Scope
            from memhtml.ops.ann import plan
            from memhtml.ops.query import _content_vectors

            mine = _content_vectors(self.corpus, [chash]).get(chash)
            if mine is not None:
                matrix, norms = vectors
                want = NEAR_DUPLICATE_CANDIDATES + 1
                # the search's own scan: the graph past the threshold, the exact scan below
                near = plan(self.corpus, matrix, Scope(), want, exact=False).run(
                    matrix, mine, want, norms
                )
                hashes = [h for h, _ in near if h != chash]
                if hashes:
                    marks = ",".join("?" for _ in hashes)
                    for p, g in conn.execute(
                        f"SELECT path, gist FROM files WHERE content_hash IN ({marks})"
                        " AND archived = 0 AND memory_type <> 'task' ORDER BY path",
                        hashes,
                    ):
                        candidates.setdefault(str(p), str(g))
                vecs = _content_vectors(self.corpus, [chash, *hashes])
        hashes_of: dict[str, str] = {}
        if vecs and candidates:
            marks = ",".join("?" for _ in candidates)
            hashes_of = {
                str(p): str(h)
                for p, h in conn.execute(
                    f"SELECT path, content_hash FROM files WHERE path IN ({marks})",
                    list(candidates),
                )
            }
        out: list[dict[str, Any]] = []
        mine_vec = vecs.get(chash)
        for other, gist in sorted(candidates.items()):
            if other == path:
                continue
            theirs = vecs.get(hashes_of.get(other, ""))
            if not restates(claim, gist, mine_vec, theirs):
                continue
            entry: dict[str, Any] = {"path": other, "claim": gist}
            if mine_vec is not None and theirs is not None:
                entry["cosine"] = round(cosine_similarity(mine_vec, theirs), 4)
            out.append(entry)
        out.sort(key=lambda e: (-e.get("cosine", 1.0), e["path"]))
        return out

    def report(self, results: Sequence[dict[str, Any]], near: int | None) -> dict[str, Any]:
        """The batch-level `checks` block of `batch.applied`."""
        out: dict[str, Any] = {
            "detect_conflicts": self.checks.detect_conflicts,
            "detect_near_duplicates": self.checks.detect_near_duplicates,
            "consolidate": self.checks.consolidate,
            "strict": self.checks.strict,
            "conflicts": sum(1 for r in results if r.get("conflict")),
            "consolidated": len(self.losers),
            "superseded": sum(len(r.get("superseded") or ()) for r in results),
        }
        if near is not None:
            out["near_duplicates"] = near
        if self.warnings:
            out["warnings"] = list(dict.fromkeys(self.warnings))
        return out
