"""`sleep merge RUN --refuse ID,...`: the night again from its base, without what a person refused.

Why a rebuild, not a patch: a night is a pure function of its base tree, its date, the
state plane it found and the model's answers, and a later decision often rests on an
earlier one (a link to the person record a phase created, a fold that chose its
survivor because another copy had folded first, a task quoting a canonical). Taking
the refused commits' lines out of the branch cannot know which later lines still
hold; running the phases again with those decisions refused can:

* the rebuild starts at the run's base, with main's index caught up to that base and
  the state plane the night found (`state.base.db`, kept when the night started);
* the model is not asked again: a `Replay` answers each question the night asked with
  the night's answer (memhtml.sleep.replay), and refuses any other;
* a decision is made only when the reviewed night made it (its id is among the
  branch's changes) and it was not refused; a derived change (a sidecar, the site)
  is remade from what is there;
* the changes the reviewed night made that the rebuild did not are *left out*, each
  with the refused (or left-out) change it depended on, or the file it shares with one;
* the refusals themselves, one file each (memhtml.sleep.refusals), are committed with
  the report, so they land in the same step as everything else.

The rebuild commits on `refs/memhtml/sleep-rebuild/<run-id>` in its own scratch folder;
the run's branch and record are untouched until the merge lands it, and a refused
gate or a kill leaves nothing a later merge does not discard first.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from memhtml.contracts.errors import UnknownChangeError
from memhtml.sleep import refusals, runs
from memhtml.sleep.changes import Change, decode
from memhtml.store.branch import BlobReader, CommitTree, move_ref, ref_sha

if TYPE_CHECKING:
    from memhtml.ops.corpus import Corpus
    from memhtml.sleep.night import Registry
    from memhtml.sleep.runindex import RunIndex
    from memhtml.store.git import Git

REF_PREFIX: Final = "refs/memhtml/sleep-rebuild/"
FOLDER: Final = "rebuild"


def changes_at(git: Git, commit: str, run_id: str) -> list[Change]:
    """The changes a run's manifest holds at `commit`."""
    data = git.show_blob(commit, runs.changes_path(run_id))
    return decode(data)[0] if data else []


def split_ids(raw: str | Sequence[str] | None) -> list[str]:
    """`ID[,ID...]` (or several such) as a list, in order, each once."""
    if raw is None:
        return []
    items = [raw] if isinstance(raw, str) else list(raw)
    out = [p.strip() for item in items for p in str(item).split(",") if p.strip()]
    return list(dict.fromkeys(out))


def check_refused(
    corpus: Corpus, run_id: str, original: Sequence[Change], ids: Sequence[str]
) -> list[Change]:
    """The changes `ids` name; UnknownChangeError for an id the run does not hold (naming
    the run that does, when another one does), or one that cannot be refused."""
    by_id = {c.id: c for c in original}
    out: list[Change] = []
    for cid in ids:
        change = by_id.get(cid)
        if change is None:
            owner = _owner(corpus, cid, run_id)
            where = f"; it is a change of run {owner}" if owner else ""
            raise UnknownChangeError(
                f"{cid} is not a change of sleep run {run_id}{where}; main unchanged",
                suggestions=[f"memhtml sleep review {run_id}  (lists the run's change ids)"],
                details={"id": cid, "run_id": run_id, "belongs_to": owner},
            )
        if change.derived:
            raise UnknownChangeError(
                f"{cid} ({change.summary}) follows whatever lands and cannot be refused;"
                " main unchanged",
                details={"id": cid, "run_id": run_id, "derived": True},
            )
        out.append(change)
    return out


def _owner(corpus: Corpus, cid: str, run_id: str) -> str | None:
    """Another run whose branch (or landed history) holds change `cid`."""
    git = corpus.git
    for other in reversed(runs.run_ids(git, corpus.root)):
        if other == run_id:
            continue
        tip = runs.ref_sha(git, runs.ref_of(other))
        if tip is None:
            record = runs.load_record(corpus.root, other)
            tip = record.head if record is not None else None
        if tip is None or git.resolve_commit(tip) is None:
            continue
        if any(c.id == cid for c in changes_at(git, tip, other)):
            return other
    return None


@dataclass
class Rebuilt:
    """A night rebuilt without the refused changes, on a ref of its own."""

    tip: str
    results: list[dict[str, Any]]
    refused: list[Change]
    left_out: list[dict[str, Any]]
    landed: list[str]  # ids of the changes the rebuilt night holds
    index: RunIndex | None
    ref: str
    folder: Path
    replayed: dict[str, int] = field(default_factory=dict)

    def close(self, git: Git) -> None:
        """Drop the rebuild's index, ref and folder (what landed is in main's history)."""
        if self.index is not None:
            self.index.close()
            self.index = None
        discard(git, self.ref, self.folder)


def discard(git: Git, ref: str, folder: Path) -> None:
    """Remove a rebuild's ref and scratch (a kill's leftovers included)."""
    held = ref_sha(git, ref)
    if held is not None:
        git.run("update-ref", "-d", ref, held, check=False)
    shutil.rmtree(folder, ignore_errors=True)


def left_out(
    original: Sequence[Change], refused: set[str], produced: set[str]
) -> list[dict[str, Any]]:
    """The reviewed night's changes the rebuild did not make, each with what it rested on."""
    causes: dict[str, Change] = {c.id: c for c in original if c.id in refused}
    out: list[dict[str, Any]] = []
    for change in original:
        if change.derived or change.id in refused or change.id in produced:
            continue
        because = [d for d in change.depends_on if d in causes]
        why: str
        if because:
            why = "it rests on " + ", ".join(
                f"{d} ({'refused' if d in refused else 'left out'})" for d in because
            )
        else:
            shared = [
                (c.id, sorted(change.uses & c.uses)[0])
                for c in causes.values()
                if change.uses & c.uses
            ]
            if shared:
                because = [cid for cid, _ in shared]
                cid, path = shared[0]
                why = f"it shares {path} with {cid}, and without {cid} the night did not make it"
            else:
                why = "the night without the refused changes did not make it (its inputs differ)"
        out.append(
            {
                "id": change.id,
                "phase": change.phase,
                "kind": change.kind,
                "summary": change.summary,
                "because": because,
                "why": why,
            }
        )
        causes[change.id] = change
    return out


def rebuild(
    corpus: Corpus,
    record: runs.RunRecord,
    original: Sequence[Change],
    refused: Sequence[Change],
    *,
    registry: Registry | None = None,
    progress: bool = False,
) -> Rebuilt:
    """Run the night of `record` again without `refused` (see the module doc)."""
    from memhtml.llm import CallBudget, ModelCaller
    from memhtml.sleep.night import Night
    from memhtml.sleep.phases import load_phase
    from memhtml.sleep.replay import Replay, answers_path
    from memhtml.sleep.runindex import BASE_STATE, RunIndex

    git = corpus.git
    scratch = runs.scratch_dir(corpus.root, record.run_id)
    folder = scratch / FOLDER
    ref = REF_PREFIX + record.run_id
    discard(git, ref, folder)
    refused_ids = {c.id for c in refused}
    reviewed = {c.id for c in original}

    def allow(cid: str, derived: bool) -> str | None:
        if derived:
            return None
        if cid in refused_ids:
            return "refused at this merge"
        if cid not in reviewed:
            return "not in the night that was reviewed (a decision the refusals made possible)"
        return None

    with corpus.lock.hold():
        corpus.recover()
        corpus.sync(worktree=False)
        base_state = scratch / BASE_STATE
        index = RunIndex.copy_base(corpus, folder, base_state if base_state.is_file() else None)
    night: Night | None = None
    try:
        with BlobReader(git) as reader:
            index.catch_up_to(record.base, CommitTree.load(git, record.base, reader))
        _embed(corpus, index)
        move_ref(git, ref, record.base, None, f"memhtml(sleep): rebuild run {record.run_id}")
        answers = answers_path(scratch)
        replay = Replay(answers) if answers.is_file() else None
        caller = ModelCaller(replay, CallBudget(None), retries=0, backoff_s=0) if replay else None
        shadow = dataclasses.replace(
            record, status="rebuild", head=record.base, results=[], pid=None, max_llm_calls=None
        )
        night = Night(
            corpus,
            shadow,
            dry_run=False,
            registry=registry,
            llm=caller,
            progress=progress,
            loader=load_phase,
            allow=allow,
            ref=ref,
            folder=folder,
            persist=False,
        )
        night.index = index
        left: list[dict[str, Any]] = []
        stamp = corpus.clock()

        def before_report(_results: list[dict[str, Any]]) -> None:
            produced = {c.id for c in night.committed_changes()} if night else set()
            left[:] = left_out(original, refused_ids, produced)
            assert night is not None
            night.refusals = {"refused": [c.to_data() for c in refused], "left_out": left}
            night.report_files = {
                refusals.refusal_path(c.id): refusals.encode(c, record.run_id, stamp)
                for c in refused
            }

        night.before_report = before_report
        night.open_tip(record.base)
        results = night.execute(record.phases, {})
        tip = night.tip
        landed = [c.id for c in night.committed_changes()]
        night.index = None  # kept open for the gate; the night releases its reader only
    except BaseException:
        if night is not None:
            night.close()
        else:
            index.close()
        discard(git, ref, folder)
        raise
    night.close()
    return Rebuilt(
        tip=tip,
        results=results,
        refused=list(refused),
        left_out=left,
        landed=landed,
        index=index,
        ref=ref,
        folder=folder,
        replayed={"asked": replay.asked, "not_asked_before": replay.missing} if replay else {},
    )


def _embed(corpus: Corpus, index: RunIndex) -> None:
    """Vectors for what catching the copy up to the base brought back (already held mostly)."""
    embedder = corpus.embedder
    if embedder is None:
        return
    from memhtml.index.embedding import embed_missing, space_matches

    if space_matches(index.conn, embedder):
        embed_missing(index.conn, embedder, index.folder, clock=corpus.clock())
