"""The sleep engine: walk the phases on `sleep/<run-id>`, one commit per committing phase.

    run:    sleep lock -> [repository lock: recover, preflight gates, catch main's
            index up, pick the run id, create the branch at HEAD, copy the
            index] -> for each phase: context over the tip -> phase.run ->
            one commit (trailers: run, phase, counts; ledger marks in the same
            commit) -> reproject exactly those paths into the run index
    resume: the same loop over the phases whose commits are missing

Main never moves and the user's working tree is never read or written after
preflight: the branch is built with plumbing (memhtml.store.branch). A phase
that raises is recorded `failed` and the night goes on; only preflight stops
it. A SIGKILL at any point leaves main as it was: the branch ref moves by
compare-and-swap after each commit's objects exist, and `resume` reads the
`Memhtml-Phase` trailers to know what is done.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import GitError, InvalidFlagError
from memhtml.sleep import refusals, replay, runs
from memhtml.sleep.merge import settle_merges
from memhtml.sleep.night import Night, Registry
from memhtml.sleep.phase import PHASE_ORDER
from memhtml.sleep.phases import load_phase
from memhtml.sleep.phases import preflight as preflight_phase
from memhtml.sleep.runindex import RunIndex
from memhtml.store.branch import (
    current_branch,
    log_range,
    move_ref,
)

if TYPE_CHECKING:
    from memhtml.llm.base import ModelCaller
    from memhtml.ops.corpus import Corpus

ALWAYS: frozenset[str] = frozenset({"preflight", "report"})


def bind_llm(llm: Any, max_llm_calls: int | None) -> ModelCaller | None:
    """The run's model seam: one caller and one call budget shared by every phase.

    `llm` is a name (`off`, `fake`, `bedrock`, `openai`), a ready model, a
    ready `ModelCaller` (used as it is, its budget included), or None: then
    `MEMHTML_LLM` decides, and unset is `off` (no model; model phases skip).
    """
    from memhtml.llm import CallBudget, ModelCaller, get_model

    if isinstance(llm, ModelCaller):
        return llm
    model = get_model(llm) if llm is None or isinstance(llm, str) else llm
    if model is None:
        return None
    return ModelCaller(model, CallBudget(max_llm_calls))


def parse_phases(raw: str | Sequence[str] | None) -> list[str]:
    """The selected phases in run order (preflight and report always run).

    An unknown name is a usage error listing the names.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return list(PHASE_ORDER)
    names = raw.split(",") if isinstance(raw, str) else list(raw)
    wanted = {n.strip() for n in names if n and n.strip()}
    unknown = sorted(wanted - set(PHASE_ORDER))
    if unknown:
        raise InvalidFlagError(
            f"unknown sleep phase(s): {', '.join(unknown)}. One of: {', '.join(PHASE_ORDER)}",
            suggestions=["memhtml sleep plan lists every phase"],
        )
    return [p for p in PHASE_ORDER if p in wanted | ALWAYS]


def _summary(
    record: runs.RunRecord,
    results: list[dict[str, Any]],
    *,
    dry_run: bool,
    started: float,
    llm: ModelCaller | None,
) -> dict[str, Any]:
    failed = [r["phase"] for r in results if r["status"] == "failed"]
    # A night whose every model call failed ran its model phases on nothing: it is said,
    # not reported as a quiet ok (the deterministic phases' work stands).
    degraded = None
    if llm is not None and llm.answered == 0 and llm.failed > 0:
        degraded = (
            f"every model call failed ({llm.failed}; last: {llm.last_failure}): the model"
            " phases decided nothing"
        )
    return {
        "degraded": degraded is not None,
        "degraded_reason": degraded,
        "run_id": record.run_id,
        "branch": None if dry_run else record.branch,
        "base_sha": record.base,
        "head_sha": record.head or record.base,
        "date": record.date,
        "at": record.at,
        "dry_run": dry_run,
        "deep": record.deep,
        "max_llm_calls": record.max_llm_calls,
        "status": "dry-run" if dry_run else record.status,
        "phases": [
            {k: v for k, v in r.items() if k != "touched"}
            | {"touched": len(r.get("touched") or [])}
            for r in results
        ],
        "failed_phases": failed,
        "commits": [r["commit_sha"] for r in results if r.get("commit_sha")],
        "llm_calls": sum(int(r.get("llm_calls") or 0) for r in results),
        "llm_capped": sum(int(r.get("llm_capped") or 0) for r in results),
        "llm_model": None if llm is None else llm.model_id,
        "marks": sum(int(r.get("marks") or 0) for r in results),
        "report_path": None if dry_run else runs.report_path(record.run_id),
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
    }


def _prepare_under_lock(corpus: Corpus) -> dict[str, int]:
    corpus.recover()
    return preflight_phase.prepare(corpus)


def run(
    corpus: Corpus,
    *,
    date: str | None = None,
    phases: str | Sequence[str] | None = None,
    dry_run: bool = False,
    deep: bool = False,
    max_llm_calls: int | None = None,
    registry: Registry | None = None,
    llm: Any = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """One night: the `sleep.report` payload (`status` failed when a phase failed).

    `registry` supplies phase objects by name ahead of `memhtml.sleep.phases`
    (tests, and phases not installed yet); `llm` is the model seam: a name, a
    model, a caller, or None for `MEMHTML_LLM` (unset: off), see `bind_llm`.
    """
    import sys

    started = time.perf_counter()
    selected = parse_phases(phases)
    if max_llm_calls is not None and max_llm_calls < 0:
        raise InvalidFlagError("--max-llm-calls must be at least 0")
    run_date = runs.parse_date(date) if date else corpus.clock()[:10]
    show = sys.stderr.isatty() if progress is None else progress
    caller = bind_llm(llm, max_llm_calls)  # an unknown name fails before anything is made
    if dry_run:
        return _dry_run(
            corpus,
            run_date=run_date,
            selected=selected,
            deep=deep,
            max_llm_calls=max_llm_calls,
            registry=registry,
            llm=caller,
            show=show,
            started=started,
        )
    with runs.sleep_lock(corpus.root):
        git = corpus.git
        settle_merges(corpus)  # a merge a kill cut short is finished or undone first
        waiting = unfinished_runs(corpus)  # said with the new night's result
        with corpus.lock.hold():
            prepared = _prepare_under_lock(corpus)
            target = current_branch(git)
            head = git.head()
            if target is None or head is None:
                raise GitError(
                    "HEAD is detached or unborn; check out the branch sleep should curate",
                    suggestions=["git checkout main"],
                )
            run_id = runs.new_run_id(git, corpus.root, run_date, head)
            runs.discard_stale_scratch(corpus.root, git, run_id)
            runs.prune_scratch(corpus.root, git)
            folder = runs.scratch_dir(corpus.root, run_id)
            record = runs.RunRecord(
                run_id=run_id,
                base=head,
                target=target,
                date=run_date,
                at=runs.instant_of(run_date),
                phases=selected,
                deep=deep,
                max_llm_calls=max_llm_calls,
                pid=os.getpid(),
                started_at=corpus.clock(),
                head=head,
            )
            runs.save_record(corpus.root, record)
            move_ref(git, runs.ref_of(run_id), head, None, f"memhtml(sleep): start run {run_id}")
            index = RunIndex.copy_main(corpus, folder)
            index.keep_base_state()  # what a refusing merge rebuilds the night from
        with replay.recording(caller, folder):
            results = _walk(
                corpus,
                record,
                index,
                prepared=prepared,
                todo=selected,
                registry=registry,
                llm=caller,
                show=show,
            )
        out = _finish(corpus, record, results, started, caller)
        return {**out, "unfinished_runs": waiting}


def unfinished_runs(corpus: Corpus) -> list[dict[str, Any]]:
    """Earlier nights a kill or a failure left unfinished, each with the command that
    finishes it (a new night does not: it starts from main, beside them)."""
    git = corpus.git
    out: list[dict[str, Any]] = []
    for run_id in runs.run_ids(git, corpus.root):
        tip = runs.ref_sha(git, runs.ref_of(run_id))
        record = runs.load_record(corpus.root, run_id)
        if record is None or tip is None:
            continue
        shown = runs.shown_status(record, tip)
        if shown in ("interrupted", "failed"):
            out.append(
                {
                    "run_id": run_id,
                    "status": shown,
                    "resume": f"memhtml sleep resume {run_id}",
                    "discard": f"git branch -D sleep/{run_id}",
                }
            )
    return out


def _walk(
    corpus: Corpus,
    record: runs.RunRecord,
    index: RunIndex,
    *,
    prepared: dict[str, int],
    todo: Sequence[str],
    registry: Registry | None,
    llm: ModelCaller | None,
    show: bool,
    earlier: Mapping[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Walk `todo` from the record's head (a resume: after catching the run index up to it)."""
    night = Night(
        corpus,
        record,
        dry_run=record.status == "dry-run",
        registry=registry,
        llm=llm,
        progress=show,
        loader=load_phase,
    )
    night.index = index
    night.prepared = prepared
    tip = record.head or record.base
    git = corpus.git
    paths = [e.path for e in git.ls_tree(record.base, [refusals.REFUSED_DIR + "/"])]
    held = refusals.standing(paths, lambda p: git.show_blob(record.base, p))
    night.allow = refusals.allow_unless_refused(held) if held else None
    try:
        night.open_tip(tip)
        if earlier is not None:
            night.follow_tip()  # a resume: from the commit the index holds, else a fresh copy
        return night.execute(todo, earlier or {})
    except Exception as exc:
        if record.status != "dry-run":
            _abandon(corpus, record, exc)
        raise
    finally:
        night.close()


def _abandon(corpus: Corpus, record: runs.RunRecord, exc: Exception) -> None:
    """A fault outside any phase stopped the night: the record says so, and why (a SIGTERM
    or SIGINT leaves it running, so status reads it as interrupted)."""
    from memhtml.contracts.errors import MemhtmlError

    record.status = "failed"
    record.error = f"{type(exc).__name__}: {exc.message if isinstance(exc, MemhtmlError) else exc}"
    record.ended_at = corpus.clock()
    record.pid = None
    runs.save_record(corpus.root, record)


def _finish(
    corpus: Corpus,
    record: runs.RunRecord,
    results: list[dict[str, Any]],
    started: float,
    llm: ModelCaller | None,
) -> dict[str, Any]:
    record.status = "failed" if any(r["status"] == "failed" for r in results) else "review"
    record.error = None
    record.ended_at = corpus.clock()
    record.pid = None
    runs.save_record(corpus.root, record)
    return _summary(record, results, dry_run=False, started=started, llm=llm)


def _dry_run(
    corpus: Corpus,
    *,
    run_date: str,
    selected: list[str],
    deep: bool,
    max_llm_calls: int | None,
    registry: Registry | None,
    llm: ModelCaller | None,
    show: bool,
    started: float,
) -> dict[str, Any]:
    """No branch, nothing written: phases count against HEAD on a throwaway index copy."""
    git = corpus.git
    with corpus.lock.hold():
        prepared = _prepare_under_lock(corpus)
        head = git.head()
        if head is None:
            raise GitError("HEAD is unborn; nothing to curate")
        run_id = runs.new_run_id(git, corpus.root, run_date, head)
        scratch = Path(tempfile.mkdtemp(prefix="memhtml-sleep-dry-"))
        index = RunIndex.copy_main(corpus, scratch)
    record = runs.RunRecord(
        run_id=run_id,
        base=head,
        target=current_branch(git),
        date=run_date,
        at=runs.instant_of(run_date),
        phases=selected,
        deep=deep,
        max_llm_calls=max_llm_calls,
        status="dry-run",
        head=head,
    )
    try:
        results = _walk(
            corpus,
            record,
            index,
            prepared=prepared,
            todo=selected,
            registry=registry,
            llm=llm,
            show=show,
        )
    finally:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    return _summary(record, results, dry_run=True, started=started, llm=llm)


def resume(
    corpus: Corpus,
    run_id: str,
    *,
    registry: Registry | None = None,
    llm: Any = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Run the phases of `run_id` whose commits are missing (and the report again)."""
    import sys

    started = time.perf_counter()
    show = sys.stderr.isatty() if progress is None else progress
    with runs.sleep_lock(corpus.root):
        git = corpus.git
        settle_merges(corpus)
        record, tip = runs.find_run(git, corpus.root, run_id)
        caller = bind_llm(llm, record.max_llm_calls)
        if record.status == "merged":
            raise InvalidFlagError(
                f"sleep run {run_id} was merged; there is nothing to resume",
                suggestions=["memhtml sleep run"],
            )
        done = runs.completed_phases(git, record, tip)
        folder = runs.scratch_dir(corpus.root, run_id)
        with corpus.lock.hold():
            prepared = _prepare_under_lock(corpus)
            index = RunIndex.open_or_copy(corpus, folder)
        record.pid = os.getpid()
        record.status = "running"
        record.head = tip
        earlier = _earlier_results(git, record, done)
        todo = [p for p in record.phases if p not in done or p == "report"]
        with replay.recording(caller, folder):
            results = _walk(
                corpus,
                record,
                index,
                prepared=prepared,
                todo=todo,
                registry=registry,
                llm=caller,
                show=show,
                earlier=earlier,
            )
        return _finish(corpus, record, results, started, caller)


def _earlier_results(
    git: Any, record: runs.RunRecord, done: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    """Results of phases already committed: as recorded, else read back from their trailers."""
    by_sha = {e.sha: e for e in log_range(git, f"{record.base}..{record.head}")} if done else {}
    out: dict[str, dict[str, Any]] = {}
    for phase, sha in done.items():
        kept = record.result(phase)
        if kept is not None and kept.get("commit_sha") == sha:
            out[phase] = dict(kept)
            continue
        entry = by_sha.get(sha)
        out[phase] = {
            "phase": phase,
            "ordinal": PHASE_ORDER.index(phase) + 1,
            "status": "ok",
            "counts": runs.counts_of(entry) if entry is not None else {},
            "detail": "committed by an earlier invocation",
            "commit_sha": sha,
            "llm_calls": 0,
            "marks": 0,
            "touched": [],
            "elapsed_ms": 0.0,
        }
    return out
