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

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import GitError, InvalidFlagError, InvalidMemoryError, MemhtmlError
from memhtml.sleep import ledger, runs
from memhtml.sleep.phase import PHASE_ORDER, Part, Phase, PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases import load
from memhtml.sleep.phases import preflight as preflight_phase
from memhtml.sleep.runindex import RunIndex
from memhtml.store.branch import (
    BlobReader,
    BranchWriter,
    CommitTree,
    current_branch,
    log_range,
    move_ref,
)
from memhtml.store.git import commit_subject

if TYPE_CHECKING:
    from memhtml.embed.base import Embedder
    from memhtml.llm.base import ModelCaller
    from memhtml.ops.corpus import Corpus
    from memhtml.store.files import FileChange

log = logging.getLogger("memhtml.sleep")
ALWAYS: frozenset[str] = frozenset({"preflight", "report"})
Registry = Mapping[str, Phase]


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


def load_phase(name: str, registry: Registry | None) -> Phase | None:
    """The phase object (a registry entry first), or None when its module is not installed."""
    if registry is not None and name in registry:
        return registry[name]
    try:
        return load(name)
    except (ImportError, AttributeError):
        return None


class _Ticker:
    """`sleep k/17 <phase>` and the items within it, on a terminal only (stderr)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None

    def phase(self, k: int, n: int, name: str) -> None:
        self.close()
        if self.enabled:
            from memhtml.progress import Progress

            self._bar = Progress(None, f"sleep {k}/{n} {name}")
            self._bar.advance(0)

    def items(self, done: int, total: int) -> None:
        bar = self._bar
        if bar is not None:
            bar.total = total or None
            bar.advance(max(0, done - bar.done))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _subject(name: str, outcome: PhaseOutcome, files: int) -> str:
    text = outcome.subject.strip()
    if not text:
        shown = [f"{k} {v}" for k, v in outcome.counts.items() if v][:4]
        text = ", ".join(shown) or f"{files} file(s)"
    return commit_subject(f"sleep({name})", text)


def commit_message(run_id: str, name: str, outcome: PhaseOutcome, files: int) -> str:
    """Subject, a body indented two spaces (it can never forge a trailer), the trailers."""
    lines = [_subject(name, outcome, files), ""]
    body = [seg for line in outcome.body for seg in str(line).splitlines()]
    if body:
        lines += [f"  {seg.rstrip()}" if seg.strip() else "" for seg in body]
        lines.append("")
    counts = json.dumps(outcome.counts, sort_keys=True, separators=(",", ":"))
    lines += [
        f"{runs.RUN_TRAILER}: {run_id}",
        f"{runs.PHASE_TRAILER}: {name}",
        f"{runs.COUNTS_TRAILER}: {counts}",
    ]
    return "\n".join(lines) + "\n"


def _split_parts(
    outcome: PhaseOutcome, changes: Sequence[FileChange]
) -> list[tuple[Part, list[FileChange]]]:
    """Each part with the staged changes it names (a move by either end); parts naming
    nothing staged are left out, and a change belongs to the first part naming it."""
    taken: set[int] = set()
    out: list[tuple[Part, list[FileChange]]] = []
    for part in outcome.parts:
        wanted = set(part.paths)
        subset = [
            c
            for c in changes
            if id(c) not in taken and (c.path in wanted or (c.moved_from or "") in wanted)
        ]
        if subset:
            taken.update(id(c) for c in subset)
            out.append((part, subset))
    return out


def _complete_touched(
    outcome: PhaseOutcome, changes: Sequence[FileChange], base: CommitTree, run_id: str
) -> None:
    """Add a Touched record for every changed file the phase did not describe itself."""
    from memhtml.contracts.paths import is_archived_path
    from memhtml.sleep.phase import TouchKind

    described = {t.path for t in outcome.touched}
    for change in changes:
        if change.path in described or change.path == runs.ledger_path(run_id):
            continue
        if change.content is None:
            continue  # the source of a move, or a removal (sleep removes nothing by itself)
        kind: TouchKind
        if change.moved_from is not None:
            kind = "archived" if is_archived_path(change.path) else "moved"
            outcome.touched.append(Touched(change.path, kind, change.moved_from))
        else:
            kind = "rewritten" if base.has(change.path) else "created"
            outcome.touched.append(Touched(change.path, kind))


def _outcome_counts(outcome: PhaseOutcome) -> dict[str, int]:
    """Counts as the trailer carries them (TypeError/ValueError on a count that is no number)."""
    out: dict[str, int] = {}
    for key, value in outcome.counts.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"count {key!r} is {value!r}, not a number")
        out[str(key)] = int(value)
    return out


def _touched(item: Any) -> dict[str, Any]:
    """A Touched record as data."""
    if isinstance(item, Touched):
        return asdict(item)
    raise TypeError(f"touched entries are Touched records, not {type(item).__name__}")


class Night:
    """One invocation of a run (or a resume): the branch tip, its index, the phases."""

    def __init__(
        self,
        corpus: Corpus,
        record: runs.RunRecord,
        *,
        dry_run: bool,
        registry: Registry | None,
        llm: ModelCaller | None,
        progress: bool,
    ) -> None:
        self.corpus = corpus
        self.record = record
        self.dry_run = dry_run
        self.registry = registry
        self.llm: ModelCaller | None = llm
        self.ticker = _Ticker(progress)
        self.reader = BlobReader(corpus.git)
        self.index: RunIndex | None = None
        self.tree: CommitTree | None = None
        self.tip = record.base
        self.budget = record.max_llm_calls
        self.writer = BranchWriter(
            corpus.git, runs.ref_of(record.run_id), runs.scratch_dir(corpus.root, record.run_id)
        )
        self.prepared: dict[str, int] = {}
        self.embedder: Embedder | None = None
        self.commit_ms = 0.0

    # -- setup -----------------------------------------------------------------
    def open_tip(self, tip: str) -> None:
        """The tree of `tip` and the embedder the run index can use."""
        from memhtml.index.embedding import space_matches

        self.tip = tip
        self.tree = CommitTree.load(self.corpus.git, tip, self.reader)
        embedder = self.corpus.embedder
        if (
            self.index is not None
            and embedder is not None
            and space_matches(self.index.conn, embedder)
        ):
            self.embedder = embedder

    def close(self) -> None:
        """Release the git reader and the run index."""
        self.ticker.close()
        self.reader.close()
        if self.index is not None:
            self.index.close()
            self.index = None

    # -- one phase ---------------------------------------------------------------
    def context(self, phase_name: str, results: list[dict[str, Any]]) -> SleepContext:
        """What a phase may read and where it stages its edits."""
        from memhtml.index.identity import path_ever_held
        from memhtml.ops.tree import TreeView
        from memhtml.ops.writes import Planner

        assert self.index is not None and self.tree is not None
        conn = self.index.conn
        view = TreeView(self.corpus.root, base=self.tree)
        record = self.record

        def active_path_for_hash(content_hash: str) -> str | None:
            row = conn.execute(
                "SELECT path FROM files WHERE content_hash = ? AND archived = 0"
                " AND memory_type <> 'task' ORDER BY path LIMIT 1",
                (content_hash,),
            ).fetchone()
            return None if row is None else str(row[0])

        def inbound(path: str) -> list[tuple[str, str]]:
            return [
                (str(src), str(rel))
                for src, rel in conn.execute(
                    "SELECT src_path, rel FROM edges WHERE dst_path = ? AND derived = 0"
                    " ORDER BY src_path, rel",
                    (path,),
                )
            ]

        planner = Planner(
            view=view,
            now=record.at,
            year=int(record.date[:4]),
            active_path_for_hash=active_path_for_hash,
            is_dirty=lambda _path: False,
            ever_held=lambda p: path_ever_held(conn, p),
            inbound=inbound,
        )
        return SleepContext(
            run_id=record.run_id,
            date=record.date,
            at=record.at,
            deep=record.deep,
            dry_run=self.dry_run,
            conn=conn,
            view=view,
            planner=planner,
            embedder=self.embedder,
            llm=self.llm,
            progress=self.ticker.items,
            results=[dict(r) for r in results],
            base_sha=record.base,
            max_llm_calls=self.budget,
        )

    def run_phase(self, name: str, results: list[dict[str, Any]]) -> dict[str, Any]:
        """Run one phase, commit what it staged; its result (never raises for a phase's fault)."""
        started = time.perf_counter()
        self.commit_ms = 0.0
        phase = load_phase(name, self.registry)
        ctx: SleepContext | None = None
        commit: str | None = None
        marks: list[dict[str, Any]] = []
        counts: dict[str, int] = {}
        touched: list[dict[str, Any]] = []
        spent = (self.llm.budget.used, self.llm.budget.capped) if self.llm is not None else (0, 0)
        if phase is None:
            outcome = PhaseOutcome(
                status="skipped", detail=f"phase not installed ({name} has no module yet)"
            )
        elif phase.deep_only and not self.record.deep:
            outcome = PhaseOutcome(status="skipped", detail="runs only with --deep")
        elif phase.needs_model and self.llm is None:
            outcome = PhaseOutcome(
                status="skipped", detail="no model bound (MEMHTML_LLM=off): nothing was judged"
            )
        elif phase.needs_model and self.budget is not None and self.budget <= 0:
            outcome = PhaseOutcome(status="skipped", detail="the run's model-call budget is spent")
        else:
            ctx = self.context(name, results)
            before = self.tip
            try:
                outcome = phase.run(ctx)
                if name == "preflight":
                    outcome.counts = {**self.prepared, **outcome.counts}
                counts = _outcome_counts(outcome)  # a phase's malformed outcome is its failure
                outcome.counts = counts
                if outcome.status == "ok" and not self.dry_run:
                    marks = [ledger.check_mark(m, name) for m in outcome.marks]
                    commit = self.commit(name, ctx, outcome, marks)
                touched = [_touched(t) for t in outcome.touched]
            except Exception as exc:  # a phase's fault is recorded; the night goes on
                log.warning("sleep.%s failed: %s: %s", name, type(exc).__name__, exc)
                log.debug("sleep.%s traceback", name, exc_info=True)
                detail = exc.message if isinstance(exc, MemhtmlError) else str(exc)
                outcome = PhaseOutcome(status="failed", detail=f"{type(exc).__name__}: {detail}")
                marks, counts, touched = [], {}, []
                self.resync()
                commit = self.tip if self.tip != before else None
        used = ctx.llm_calls if ctx is not None else 0
        capped = 0
        if self.llm is not None:
            # Calls through the caller are counted by the shared budget; a phase that also
            # counts by hand is charged the difference, so the two never disagree.
            through = self.llm.budget.used - spent[0]
            self.llm.budget.charge(used - through)
            used = max(used, through)
            capped = self.llm.budget.capped - spent[1]
        if self.budget is not None:
            self.budget = max(0, self.budget - used)
        return {
            "phase": name,
            "ordinal": PHASE_ORDER.index(name) + 1,
            "status": outcome.status,
            "counts": counts,
            "detail": outcome.detail,
            "commit_sha": commit,
            "llm_calls": used,
            "llm_capped": capped,
            "marks": len(marks) if not self.dry_run else len(outcome.marks),
            "touched": touched,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            "commit_ms": round(self.commit_ms, 1),  # validate, commit, reproject, embed
        }

    def _check_changes(self, changes: Sequence[FileChange], ctx: SleepContext) -> dict[bytes, Any]:
        """Every memory a phase writes parses clean; a file the index skipped is never rewritten."""
        from memhtml.index.indexer import indexable
        from memhtml.sleep.parallel import parse_many

        docs: dict[bytes, Any] = {}
        bad: list[str] = []
        memories = [c for c in changes if c.content is not None and indexable(c.path)]
        unparsed = list(
            dict.fromkeys(
                c.content for c in memories if c.content and c.content not in ctx.planner.docs
            )
        )
        parsed = dict(zip(unparsed, parse_many(unparsed), strict=True))
        for change in memories:
            assert change.content is not None
            doc = ctx.planner.docs.get(change.content) or parsed[change.content]
            if not doc.ok:
                first = doc.violations[0].message if doc.violations else "invalid"
                bad.append(f"{change.path} ({first})")
            else:
                docs[change.content] = doc
        if bad:
            raise InvalidMemoryError(
                f"the phase wrote {len(bad)} file(s) that break the format: {', '.join(bad[:5])}"
            )
        touched = sorted(
            {p for c in changes for p in (c.path, c.moved_from) if p is not None and indexable(p)}
        )
        assert self.index is not None
        unparseable: list[str] = []
        for start in range(0, len(touched), 500):
            part = touched[start : start + 500]
            marks_sql = ",".join("?" for _ in part)
            unparseable += [
                str(r[0])
                for r in self.index.conn.execute(
                    f"SELECT path FROM skipped_files WHERE path IN ({marks_sql})"
                    " AND reason NOT LIKE 'duplicate content of %'",
                    part,
                )
            ]
        if unparseable:
            raise InvalidMemoryError(
                f"the phase rewrote {len(unparseable)} unparseable file(s), which sleep never"
                f" touches: {', '.join(unparseable[:5])}"
            )
        return docs

    def commit(
        self, name: str, ctx: SleepContext, outcome: PhaseOutcome, marks: list[dict[str, Any]]
    ) -> str | None:
        """One commit of the phase's staged changes (and ledger marks); None when there are none."""
        assert self.index is not None and self.tree is not None
        started = time.perf_counter()
        try:
            return self._commit(name, ctx, outcome, marks)
        finally:
            self.commit_ms = (time.perf_counter() - started) * 1000

    def _commit(
        self, name: str, ctx: SleepContext, outcome: PhaseOutcome, marks: list[dict[str, Any]]
    ) -> str | None:
        assert self.index is not None and self.tree is not None
        view = ctx.view
        if marks:
            path = runs.ledger_path(self.record.run_id)
            held = view.read(path) if view.exists(path) else b""
            stamped = [{**m, "phase": name, "run": self.record.run_id} for m in marks]
            view.write(path, held + ledger.encode(stamped))
        changes = view.changes()
        if not changes:
            return None
        docs = self._check_changes(changes, ctx)
        _complete_touched(outcome, changes, self.tree, self.record.run_id)
        sha: str | None = None
        for part, subset in _split_parts(outcome, changes):
            own = PhaseOutcome(counts=outcome.counts, subject=part.subject, body=list(part.body))
            sha = self._land(
                subset, commit_message(self.record.run_id, name, own, len(subset)), docs
            )
        taken = {id(c) for _part, subset in _split_parts(outcome, changes) for c in subset}
        rest = [c for c in changes if id(c) not in taken]
        if rest:
            sha = self._land(
                rest, commit_message(self.record.run_id, name, outcome, len(rest)), docs
            )
        return sha

    def _land(self, changes: Sequence[FileChange], message: str, docs: dict[bytes, Any]) -> str:
        """One commit on the branch tip; the run index follows it."""
        assert self.index is not None and self.tree is not None
        parent = self.tip
        sha = self.writer.commit(parent, changes, message)
        tree = self.tree.advance(sha, self.writer.written)
        self.tip, self.tree = sha, tree
        self.record.head = sha
        self.index.apply(parent, sha, changes, tree, docs)
        self.index.embed(self.embedder, [c.path for c in changes if c.content], self.record.at)
        return sha

    def resync(self) -> None:
        """After a failure: the tip is whatever the branch holds; the run index follows it."""
        if self.index is None or self.tree is None:
            return
        if self.index.conn.in_transaction:  # a phase that raised inside its own transaction
            self.index.conn.execute("ROLLBACK")
        if self.dry_run:
            return
        tip = runs.ref_sha(self.corpus.git, runs.ref_of(self.record.run_id)) or self.tip
        if tip != self.tree.commit:
            self.open_tip(tip)
        assert self.tree is not None
        if self.index.watermark() != tip:
            self.index.catch_up_to(tip, self.tree)
        self.record.head = tip
        self.writer.reset()

    # -- the loop -------------------------------------------------------------------
    def execute(
        self, todo: Sequence[str], earlier: Mapping[str, dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Run `todo` in run order; phases in `earlier` keep their recorded results."""
        results: list[dict[str, Any]] = []
        selected = [p for p in PHASE_ORDER if p in set(todo) | set(earlier)]
        for k, name in enumerate(selected, start=1):
            if name in earlier and name not in todo:
                results.append(dict(earlier[name]))
                continue
            self.ticker.phase(k, len(selected), name)
            result = self.run_phase(name, results)
            results.append(result)
            if not self.dry_run:
                self.record.put_result(result)
                runs.save_record(self.corpus.root, self.record)
        self.ticker.close()
        return results


def _summary(
    record: runs.RunRecord,
    results: list[dict[str, Any]],
    *,
    dry_run: bool,
    started: float,
    llm: ModelCaller | None,
) -> dict[str, Any]:
    failed = [r["phase"] for r in results if r["status"] == "failed"]
    return {
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
        night = Night(corpus, record, dry_run=False, registry=registry, llm=caller, progress=show)
        night.index = index
        night.prepared = prepared
        try:
            night.open_tip(head)
            results = night.execute(selected, {})
        finally:
            night.close()
        return _finish(corpus, record, results, started, caller)


def _finish(
    corpus: Corpus,
    record: runs.RunRecord,
    results: list[dict[str, Any]],
    started: float,
    llm: ModelCaller | None,
) -> dict[str, Any]:
    record.status = "failed" if any(r["status"] == "failed" for r in results) else "review"
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
    night = Night(corpus, record, dry_run=True, registry=registry, llm=llm, progress=show)
    night.index = index
    night.prepared = prepared
    try:
        night.open_tip(head)
        results = night.execute(selected, {})
    finally:
        night.close()
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
            index = RunIndex.reopen(corpus, folder)
            held = index.watermark() if index is not None else None
            if index is None or held is None or git.resolve_commit(held) is None:
                if index is not None:
                    index.close()
                index = RunIndex.copy_main(corpus, folder)
        record.pid = os.getpid()
        record.status = "running"
        record.head = tip
        night = Night(corpus, record, dry_run=False, registry=registry, llm=caller, progress=show)
        night.index = index
        night.prepared = prepared
        try:
            night.open_tip(tip)
            assert night.tree is not None
            index.catch_up_to(tip, night.tree)
            earlier = _earlier_results(git, record, done)
            todo = [p for p in record.phases if p not in done or p == "report"]
            results = night.execute(todo, earlier)
        finally:
            night.close()
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


ProgressFn = Callable[[int, int], None]
