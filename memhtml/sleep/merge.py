"""`sleep merge RUN`: main moves only through the gate, and the ledger only with main.

Under the sleep lock and the repository lock: refuse (typed errors, main
unchanged) a run that does not exist, a HEAD on another branch, a dirty tree,
a branch whose changed files no longer parse (a hand edit), a pending ledger
that is not JSON lines, and a gate regression: the fixture gate (fake mode,
code regressions) and the corpus gate over the branch (memhtml.sleep.gate).
Then build what lands without touching the working tree: the tip when main has
not moved, else a merge commit from `git merge-tree --write-tree` (the merge
drivers run; a conflict is refused) whose changed memory files must parse.
Land it in one step (memhtml.store.land: the write doors' journal, atomic
files, one compare-and-swap of HEAD's branch), the run record saying
`merging` meanwhile; catch main's index up, apply the pending ledger to the
state plane, each line once, and record the run merged. A merge a kill cut
short is finished or undone by the next sleep command or `doctor --fix`
(`settle_merges`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import (
    DiscriminationFailedError,
    GitError,
    InvalidMemoryError,
    UnknownChangeError,
    WriteConflictError,
)
from memhtml.sleep import ledger, runs
from memhtml.store.branch import BlobReader, CommitTree, current_branch

if TYPE_CHECKING:
    from memhtml.eval.gate import GateReport
    from memhtml.ops.corpus import Corpus
    from memhtml.sleep.gate import CorpusGateReport
    from memhtml.sleep.night import Registry
    from memhtml.sleep.rebuild import Rebuilt
    from memhtml.sleep.runindex import RunIndex
    from memhtml.store.git import Git

FixtureGate = Callable[[], "GateReport"]
MAX_LISTED = 20


def validate_branch(git: Git, reader: BlobReader, base: str, tip: str) -> list[dict[str, Any]]:
    """Every memory file the branch changed must parse clean: the problems found."""
    return _parse_problems(reader, tip, [e.path for e in git.diff(base, tip) if e.status != "D"])


def validate_merged(
    git: Git, reader: BlobReader, head: str, tip: str, merged: str
) -> list[dict[str, Any]]:
    """The files a merge commit holds as neither side had them (what the merge drivers
    wrote) must parse clean too; the others were checked on their own side."""
    from memhtml.store.land import tree_changes

    ours = {c.path for c in tree_changes(git, head, merged) if c.blob is not None}
    theirs = {c.path for c in tree_changes(git, tip, merged) if c.blob is not None}
    return _parse_problems(reader, merged, sorted(ours & theirs))


def _parse_problems(reader: BlobReader, commit: str, paths: list[str]) -> list[dict[str, Any]]:
    from memhtml.html import parse_memory
    from memhtml.index.indexer import indexable

    wanted = [p for p in paths if indexable(p)]
    blobs = reader.read_many(f"{commit}:{p}" for p in wanted)
    problems: list[dict[str, Any]] = []
    for path in wanted:
        got = blobs.get(f"{commit}:{path}")
        doc = parse_memory(got[1]) if got is not None else None
        if doc is None or not doc.ok:
            violations = [v.message for v in doc.violations[:3]] if doc is not None else ["missing"]
            problems.append({"path": path, "violations": violations})
    return problems


def _fixture_gate() -> GateReport:
    from memhtml.eval.gate import run_gate

    return run_gate("fake")


def branch_index(corpus: Corpus, run_id: str, tip: str, reader: BlobReader) -> RunIndex:
    """The run index at the tip: the run's own when it is there, else main's copy caught up."""
    from memhtml.sleep.runindex import RunIndex

    folder = runs.scratch_dir(corpus.root, run_id)
    corpus.sync(worktree=False)  # a copy, when one is needed, starts from main caught up
    index = RunIndex.open_or_copy(corpus, folder)
    index.catch_up_to(tip, CommitTree.load(corpus.git, tip, reader))
    embedder = corpus.embedder
    if embedder is not None:
        from memhtml.index.embedding import embed_missing, space_matches

        if space_matches(index.conn, embedder):
            embed_missing(index.conn, embedder, index.folder, clock=corpus.clock())
    return index


def branch_gate(
    corpus: Corpus,
    record: runs.RunRecord,
    tip: str,
    reader: BlobReader,
    given: RunIndex | None = None,
) -> CorpusGateReport:
    """The corpus gate's verdict over `tip` (it refuses nothing itself), on `given` (an
    index already at `tip`: a rebuilt night's) or the run's own index caught up."""
    from memhtml.contracts.paths import is_archived_path
    from memhtml.index.indexer import PREFIXES
    from memhtml.sleep.gate import corpus_gate
    from memhtml.sleep.runindex import BranchCorpus

    index = given if given is not None else branch_index(corpus, record.run_id, tip, reader)
    try:
        diff = corpus.git.diff(record.base, tip)
        touched = {p for d in diff for p in (d.path, d.old_path) if p}
        moved = {
            d.old_path: d.path
            for d in diff
            if d.status == "R" and d.old_path and not is_archived_path(d.path)
        }
        base_paths = {e.path for e in corpus.git.ls_tree(record.base, PREFIXES)}
        return corpus_gate(corpus, BranchCorpus(corpus, index), base_paths, touched, moved)
    finally:
        if given is None:
            index.close()


def run_gates(
    corpus: Corpus,
    record: runs.RunRecord,
    tip: str,
    reader: BlobReader,
    fixture_gate: FixtureGate | None,
    *,
    index: RunIndex | None = None,
) -> dict[str, Any]:
    """Both gates; DiscriminationFailedError (with the evidence) when either refuses."""
    fixture = (fixture_gate or _fixture_gate)()
    data: dict[str, Any] = {"skipped": False, "fixture": _fixture_summary(fixture)}
    if not fixture.passed and not fixture.skipped:
        raise DiscriminationFailedError(
            f"the discrimination gate failed ({fixture.reason or 'a probe inverted'});"
            f" sleep/{record.run_id} was not merged",
            suggestions=["memhtml eval discriminate --mode fake"],
            details={"gate": data},
        )
    report = branch_gate(corpus, record, tip, reader, index)
    data["corpus"] = report.to_data()
    if not report.passed:
        first = report.regressions[0]
        raise DiscriminationFailedError(
            f"sleep/{record.run_id} would lose a fact: {first['a']} / {first['b']}"
            f" ({first['kind']}): {first['why']}; {len(report.regressions)} regression(s),"
            " main unchanged",
            suggestions=[
                f"memhtml sleep review {record.run_id}",
                f"git branch -D sleep/{record.run_id}  (discard the run)",
            ],
            details={"gate": data},
        )
    return data


def _fixture_summary(report: GateReport) -> dict[str, Any]:
    full = report.to_data()
    keys = ("mode", "passed", "skipped", "reason", "probes", "mrr", "inversions", "duration_s")
    return {k: full.get(k) for k in keys}


def result_commit(corpus: Corpus, record: runs.RunRecord, tip: str, head: str) -> tuple[str, str]:
    """The commit main will move to and how: the tip itself when main has not moved
    (`fast-forward`), else a merge commit built with plumbing (`merge`) -- the merge
    drivers run, nothing of the working tree or git's index is read or written. A
    conflict is WriteConflictError with the paths, main unchanged."""
    from memhtml.store.land import commit_tree, merge_tree

    git = corpus.git
    if git.is_ancestor(head, tip):
        return tip, "fast-forward"
    tree, conflicted = merge_tree(git, head, tip)
    if conflicted:
        raise WriteConflictError(
            f"main moved since the run and merging sleep/{record.run_id} conflicts"
            f" ({len(conflicted)} file(s)); main unchanged",
            suggestions=[
                f"memhtml sleep review {record.run_id}",
                "discard the run and sleep again on the new main",
            ],
            details={"conflicts": conflicted[:MAX_LISTED]},
        )
    message = f"memhtml(sleep): merge run {record.run_id}\n\n{runs.RUN_TRAILER}: {record.run_id}\n"
    return commit_tree(git, tree, [head, tip], message), "merge"


def _land(
    corpus: Corpus,
    record: runs.RunRecord,
    head: str,
    target: str,
    mode: str,
    *,
    rebuilt: Rebuilt | None = None,
    reviewed: str | None = None,
) -> None:
    """Move main to `target` in one step (memhtml.store.land), the run record saying
    `merging` meanwhile so whoever comes next can finish or undo what a kill cut short."""
    import os

    from memhtml.store.land import land

    prior = (record.status, record.head, record.refused, record.left_out, record.reviewed_head)
    record.status, record.merge_commit, record.merge_from = "merging", target, head
    if rebuilt is not None:
        record.head, record.reviewed_head = rebuilt.tip, reviewed
        record.refused = [c.id for c in rebuilt.refused]
        record.left_out = list(rebuilt.left_out)
    record.pid = os.getpid()
    runs.save_record(corpus.root, record)
    subject = (
        f"memhtml(sleep): fast-forward to run {record.run_id}"
        if mode == "fast-forward"
        else f"memhtml(sleep): merge run {record.run_id}"
    )
    try:
        land(corpus.git, corpus.root, head, target, subject)
    except BaseException:
        if corpus.git.head() == head:  # it did not land: the run waits for review as before
            record.status, record.head, record.refused, record.left_out = prior[:4]
            record.reviewed_head = prior[4]
            record.merge_commit, record.merge_from = None, None
            record.pid = None
            runs.save_record(corpus.root, record)
        raise


def _finish(corpus: Corpus, record: runs.RunRecord, ledger_at: str) -> tuple[Any, Any, str]:
    """After main moved: main's index catches up, the ledger (as committed at `ledger_at`)
    is applied, the record says merged; (index report, ledger report, HEAD)."""
    git = corpus.git
    new_head = git.head()
    assert new_head is not None
    index = corpus.sync(worktree=False)
    applied = ledger.apply_marks(
        corpus.conn,
        record.run_id,
        _read_ledger(git, ledger_at, record.run_id),
        record.at,
        corpus.clock(),
    )
    record.status = "merged"
    record.merged_at = corpus.clock()
    record.merge_commit = new_head
    record.merge_from = None
    record.pid = None
    runs.save_record(corpus.root, record)
    # What landed is in main's history and the record keeps the base and the tips: the
    # branch, a rebuild's ref and the scratch go (`git branch` lists waiting nights only).
    runs.delete_branch(git, record.run_id)
    from memhtml.sleep.rebuild import FOLDER, REF_PREFIX, discard

    discard(git, REF_PREFIX + record.run_id, runs.scratch_dir(corpus.root, record.run_id) / FOLDER)
    runs.drop_run_index(corpus.root, record.run_id)
    return index, applied, new_head


def settle_merges(corpus: Corpus) -> list[dict[str, Any]]:
    """Finish or undo merges a kill cut short (the caller holds the sleep lock).

    A run whose record says `merging` and whose process is gone: when its merge commit
    is in main's history the merge landed, and what came after it (main's index, the
    ledger, the record) is done now; otherwise main never moved and the run goes back
    to waiting for review. The working tree was settled by the batch journal first.
    """
    git = corpus.git
    settled: list[dict[str, Any]] = []
    for run_id in runs.run_ids(git, corpus.root):
        record = runs.load_record(corpus.root, run_id)
        if record is None or record.status != "merging":
            continue
        if record.pid not in (None, os.getpid()) and runs.pid_alive(record.pid):
            continue
        with corpus.lock.hold():
            corpus.recover()
            head = git.head()
            landed = (
                record.merge_commit is not None
                and head is not None
                and git.resolve_commit(record.merge_commit) is not None
                and git.is_ancestor(record.merge_commit, head)
            )
            if landed:
                assert record.merge_commit is not None
                _, applied, _ = _finish(corpus, record, record.merge_commit)
                settled.append(
                    {"run_id": run_id, "outcome": "finished", "marks_applied": applied.applied}
                )
            else:
                failed = any(r.get("status") == "failed" for r in record.results)
                record.status = "failed" if failed else "review"
                record.merge_commit = record.merge_from = None
                record.pid = None
                runs.save_record(corpus.root, record)
                settled.append({"run_id": run_id, "outcome": "undone", "marks_applied": 0})
    return settled


class StaleReviewError(WriteConflictError):
    """The branch moved since the review it is merged from was served (ERR_WRITE_CONFLICT)."""


def _check_target(corpus: Corpus, record: runs.RunRecord, run_id: str) -> None:
    """HEAD on the branch the run was taken from, and a clean tree (the caller holds the
    repository lock)."""
    git = corpus.git
    current = current_branch(git)
    target = record.target or current
    if current is None or current != target:
        raise GitError(
            f"HEAD is on {current or 'a detached commit'}; sleep/{run_id} merges into {target}",
            suggestions=[f"git checkout {(target or 'main').removeprefix('refs/heads/')}"],
        )
    dirty = sorted({e.path for e in git.status(())})
    if dirty:
        from memhtml.ops.dirty import dirty_tree_error

        raise dirty_tree_error(git.root, dirty, needs="a sleep merge needs a clean tree")


def merge(
    corpus: Corpus,
    run_id: str,
    *,
    skip_gate: bool = False,
    fixture_gate: FixtureGate | None = None,
    refuse: str | Sequence[str] | None = None,
    expect_tip: str | None = None,
    registry: Registry | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Gate, move main in one step, apply the ledger, update the index: the `sleep.merge`
    payload.

    `refuse` names changes (`sleep review` ids) to leave out: the night is rebuilt from
    its base without them (memhtml.sleep.rebuild), changes resting on them are left out
    too and reported, the gates run on the rebuilt night, and each refusal is committed
    with it as a standing dismissal. `expect_tip` (the review page's) refuses a branch
    that moved since.
    """
    from memhtml.sleep.rebuild import changes_at, check_refused, rebuild, split_ids

    git = corpus.git
    wanted = split_ids(refuse)
    with runs.sleep_lock(corpus.root):
        settle_merges(corpus)
        record, tip = runs.find_run(git, corpus.root, run_id)
        if expect_tip is not None and expect_tip != tip:
            raise StaleReviewError(
                f"sleep/{run_id} moved since this review was made ({expect_tip[:12]} ->"
                f" {tip[:12]}); main unchanged",
                suggestions=[f"memhtml sleep review {run_id}  (review what the branch holds now)"],
                details={"expected": expect_tip, "tip": tip},
            )
        rebuilt: Rebuilt | None = None
        if wanted:
            if record.status == "merged":
                raise UnknownChangeError(
                    f"sleep run {run_id} is merged already; there is nothing left to refuse",
                    suggestions=["memhtml sleep lift ID  (lifts a standing refusal)"],
                    details={"run_id": run_id, "ids": wanted},
                )
            refused = check_refused(corpus, run_id, changes_at(git, tip, run_id), wanted)
            with corpus.lock.hold():  # before the rebuild: refuse what would refuse it anyway
                corpus.recover()
                _check_target(corpus, record, run_id)
            original = changes_at(git, tip, run_id)
            rebuilt = rebuild(
                corpus, record, original, refused, registry=registry, progress=progress
            )
        try:
            result = _gate_and_land(
                corpus, record, tip, skip_gate=skip_gate, fixture_gate=fixture_gate, rebuilt=rebuilt
            )
        finally:
            if rebuilt is not None:
                rebuilt.close(git)
    return result


def _gate_and_land(
    corpus: Corpus,
    record: runs.RunRecord,
    tip: str,
    *,
    skip_gate: bool,
    fixture_gate: FixtureGate | None,
    rebuilt: Rebuilt | None,
) -> dict[str, Any]:
    git = corpus.git
    run_id = record.run_id
    landing = rebuilt.tip if rebuilt is not None else tip
    with corpus.lock.hold():
        corpus.recover()
        _check_target(corpus, record, run_id)
        head = git.head()
        assert head is not None
        gate: dict[str, Any] = {"skipped": True}
        with BlobReader(git) as reader:
            if git.is_ancestor(landing, head):
                mode = "already-merged"
            else:
                if not git.is_ancestor(record.base, tip):
                    raise GitError(
                        f"sleep/{run_id} no longer descends from its base {record.base[:12]}"
                        " (rewritten by hand); main unchanged"
                    )
                problems = validate_branch(git, reader, record.base, landing)
                if problems:
                    raise _broken(run_id, problems)
                _read_ledger(git, landing, run_id)  # a torn ledger is refused before main moves
                if not skip_gate:
                    index = rebuilt.index if rebuilt is not None else None
                    gate = run_gates(corpus, record, landing, reader, fixture_gate, index=index)
                commit, mode = result_commit(corpus, record, landing, head)
                if mode == "merge":  # what the merge drivers made must parse too
                    problems = validate_merged(git, reader, head, landing, commit)
                    if problems:
                        raise _broken(run_id, problems)
                _land(corpus, record, head, commit, mode, rebuilt=rebuilt, reviewed=tip)
        if rebuilt is not None and mode != "already-merged":
            record.results = [dict(r) for r in rebuilt.results]
        index, applied, new_head = _finish(corpus, record, landing)
    out: dict[str, Any] = {
        "run_id": run_id,
        "branch": record.branch,
        "merged": True,
        "mode": mode,
        "previous_head": head,
        "head_sha": new_head,
        "skip_gate": skip_gate,
        "gate": gate,
        "marks_applied": applied.applied,
        "marks_pending": applied.pending,
        "ledger": applied.to_data(),
        "index": index.to_data() if index is not None else None,
        "refused": [],
        "left_out": [],
        "rebuilt": rebuilt is not None,
    }
    if rebuilt is not None:
        out["refused"] = [
            {"id": c.id, "phase": c.phase, "kind": c.kind, "summary": c.summary}
            for c in rebuilt.refused
        ]
        out["left_out"] = rebuilt.left_out
        out["landed_changes"] = len(rebuilt.landed)
        out["reviewed_head"] = tip
        out["replayed"] = rebuilt.replayed
    return out


def _broken(run_id: str, problems: list[dict[str, Any]]) -> InvalidMemoryError:
    return InvalidMemoryError(
        f"sleep/{run_id} holds {len(problems)} file(s) that break the format"
        f" (edited by hand?): {problems[0]['path']}: "
        f"{'; '.join(problems[0]['violations'])}; main unchanged",
        suggestions=[f"memhtml doctor <file> on a checkout of sleep/{run_id}"],
        details={"problems": problems[:MAX_LISTED]},
    )


def _read_ledger(git: Git, tip: str, run_id: str) -> list[dict[str, Any]]:
    data = git.show_blob(tip, runs.ledger_path(run_id))
    return ledger.decode(data) if data else []
