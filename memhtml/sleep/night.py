"""One invocation of a sleep run (or a resume): the branch tip, its run index, and the
phase loop that commits what each phase staged (see memhtml.sleep.engine for the
entry points and the locks around it)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import InvalidMemoryError, MemhtmlError
from memhtml.sleep import changes as change_log
from memhtml.sleep import ledger, runs
from memhtml.sleep.commits import (
    commit_message,
    complete_touched,
    outcome_counts,
    split_parts,
    touched_record,
)
from memhtml.sleep.phase import PHASE_ORDER, Phase, PhaseOutcome, SleepContext
from memhtml.sleep.runindex import RunIndex
from memhtml.store.branch import BlobReader, BranchWriter, CommitTree
from memhtml.telemetry import span

if TYPE_CHECKING:
    from memhtml.embed.base import Embedder
    from memhtml.llm.base import ModelCaller
    from memhtml.ops.corpus import Corpus
    from memhtml.store.files import FileChange

log = logging.getLogger("memhtml.sleep")
Registry = Mapping[str, Phase]
Loader = Callable[[str, "Registry | None"], "Phase | None"]


class PhaseTicker:
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
        loader: Loader,
        allow: change_log.Allow | None = None,
        ref: str | None = None,
        folder: Path | None = None,
        persist: bool = True,
    ) -> None:
        self.corpus = corpus
        self.record = record
        self.dry_run = dry_run
        self.registry = registry
        self.loader = loader
        self.llm: ModelCaller | None = llm
        self.ticker = PhaseTicker(progress)
        self.reader = BlobReader(corpus.git)
        self.index: RunIndex | None = None
        self.tree: CommitTree | None = None
        self.tip = record.base
        self.budget = record.max_llm_calls
        # A night commits on its branch; a merge that refuses changes rebuilds the night on a
        # ref and in a folder of its own (memhtml.sleep.rebuild), and never saves the record.
        self.ref = ref or runs.ref_of(record.run_id)
        self.persist = persist
        self.writer = BranchWriter(
            corpus.git, self.ref, folder or runs.scratch_dir(corpus.root, record.run_id)
        )
        # Which decisions may be made (None: all; a person's standing refusals say no), the
        # night's created and moved paths by change (what a later change depends on), the
        # vetoes of phases that committed nothing (the report's commit carries them), and
        # files the report's commit adds (a refusing merge's standing refusals).
        self.allow = allow
        self.outputs: dict[str, str] | None = None
        self.pending_vetoes: list[change_log.Veto] = []
        self.report_files: dict[str, bytes] = {}
        self.refusals: dict[str, Any] | None = None
        # Called once before the report phase runs (a rebuild learns what it left out there).
        self.before_report: Callable[[list[dict[str, Any]]], None] | None = None
        self.prepared: dict[str, int] = {}
        self.embedder: Embedder | None = None
        self.commit_ms = 0.0
        # Why the run index cannot follow the branch (None: it does). The phases left are
        # then recorded failed without running; the report still lands.
        self.index_lost: str | None = None

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
        from memhtml.ops.write_door import inbound_links
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

        planner = Planner(
            view=view,
            now=record.at,
            year=int(record.date[:4]),
            active_path_for_hash=active_path_for_hash,
            is_dirty=lambda _path: False,
            ever_held=lambda p: path_ever_held(conn, p),
            inbound=lambda path: inbound_links(conn, path),
        )
        if self.outputs is None:
            self.outputs = change_log.outputs_of(self.committed_changes())
        log = change_log.ChangeLog(phase_name, allow=self.allow, outputs=self.outputs)
        log.bind(view)
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
            changes=log,
            refusals=self.refusals if phase_name == "report" else None,
            decided=self._decided() if phase_name == "report" else None,
        )

    def _decided(self) -> dict[str, Any]:
        """The night's changes and vetoes so far (the report's): the manifest at the tip and
        the vetoes of phases that committed nothing."""
        assert self.tree is not None
        data = self.tree.get(runs.changes_path(self.record.run_id))
        changes, vetoes = change_log.decode(data) if data else ([], [])
        return {"changes": changes, "vetoes": [*vetoes, *self.pending_vetoes]}

    def committed_changes(self) -> list[change_log.Change]:
        """The changes the branch's manifest holds at the tip (a resume's earlier phases)."""
        assert self.tree is not None
        data = self.tree.get(runs.changes_path(self.record.run_id))
        return change_log.decode(data)[0] if data else []

    def run_phase(self, name: str, results: list[dict[str, Any]]) -> dict[str, Any]:
        """Run one phase, commit what it staged; its result (never raises for a phase's fault)."""
        started = time.perf_counter()
        self.commit_ms = 0.0
        phase = self.loader(name, self.registry)
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
        elif self.index_lost is not None and name != "report":
            outcome = PhaseOutcome(
                status="failed",
                detail=f"not run: the run index cannot follow the branch ({self.index_lost});"
                f" `memhtml sleep resume {self.record.run_id}` copies it again",
            )
        else:
            ctx = self.context(name, results)
            before = self.tip
            try:
                outcome = phase.run(ctx)
                if name == "preflight":
                    outcome.counts = {**self.prepared, **outcome.counts}
                counts = outcome_counts(outcome)  # a phase's malformed outcome is its failure
                if ctx.planner.secrets_refused:
                    # Outputs that would have held a credential were skipped, not written.
                    counts["secrets_skipped"] = ctx.planner.secrets_refused
                outcome.counts = counts
                if outcome.status == "ok" and not self.dry_run:
                    marks = [ledger.check_mark(m, name) for m in outcome.marks]
                    commit = self.commit(name, ctx, outcome, marks)
                touched = [touched_record(t) for t in outcome.touched]
            except Exception as exc:  # a phase's fault is recorded; the night goes on
                log.warning("sleep.%s failed: %s: %s", name, type(exc).__name__, exc)
                log.debug("sleep.%s traceback", name, exc_info=True)
                detail = exc.message if isinstance(exc, MemhtmlError) else str(exc)
                outcome = PhaseOutcome(status="failed", detail=f"{type(exc).__name__}: {detail}")
                marks, counts, touched = [], {}, []
                self.resync()
                commit = self.tip if self.tip != before else None
        used = ctx.llm_calls if ctx is not None else 0
        recorded = outcome.status == "ok" and not self.dry_run
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
            "changes": len(ctx.changes.changes) if recorded and ctx is not None else 0,
            "vetoed": len(ctx.changes.vetoes) if recorded and ctx is not None else 0,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
            "commit_ms": round(self.commit_ms, 1),  # validate, commit, reproject, embed
        }

    def _check_changes(self, changes: Sequence[FileChange], ctx: SleepContext) -> dict[bytes, Any]:
        """Every memory a phase writes parses clean; a file the index skipped is never rewritten."""
        from memhtml.index.indexer import indexable
        from memhtml.index.parallel import parse_many

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
        log = ctx.changes
        log.finish({t.path: t.kind for t in outcome.touched})  # the engine's own files are no one's
        if name == "report":
            for path, data in self.report_files.items():
                view.write(path, data)
        marks.extend(ledger.usage_moves(view.changes()))
        if marks:
            path = runs.ledger_path(self.record.run_id)
            held = view.read(path) if view.exists(path) else b""
            stamped = [{**m, "phase": name, "run": self.record.run_id} for m in marks]
            view.write(path, held + ledger.encode(stamped))
        vetoes = log.vetoes
        if name == "report":
            vetoes, self.pending_vetoes = [*self.pending_vetoes, *vetoes], []
        if not view.changes():
            self.pending_vetoes += vetoes  # written with the next commit (the report's)
            return None
        if log.changes or vetoes:
            path = runs.changes_path(self.record.run_id)
            held = view.read(path) if view.exists(path) else b""
            # A resume re-runs a phase that committed nothing: its vetoes are there once.
            kept = set(held.splitlines(keepends=True))
            lines = change_log.encode(log.changes, vetoes).splitlines(keepends=True)
            new = b"".join(line for line in lines if line not in kept)
            if new:
                view.write(path, held + new)
        changes = view.changes()
        tree = self.tree
        extra = log.intermediate({c.path: c.content for c in changes}, tree.entries.get)
        docs = self._check_changes(changes, ctx)
        complete_touched(outcome, changes, self.tree, self.record.run_id)
        sha: str | None = None
        for part, subset in split_parts(outcome, changes):
            own = PhaseOutcome(counts=outcome.counts, subject=part.subject, body=list(part.body))
            sha = self._land(
                subset, commit_message(self.record.run_id, name, own, len(subset)), docs, extra
            )
            extra = []
        taken = {id(c) for _part, subset in split_parts(outcome, changes) for c in subset}
        rest = [c for c in changes if id(c) not in taken]
        if rest:
            sha = self._land(
                rest, commit_message(self.record.run_id, name, outcome, len(rest)), docs, extra
            )
        return sha

    def _land(
        self,
        changes: Sequence[FileChange],
        message: str,
        docs: dict[bytes, Any],
        extra: Sequence[bytes] = (),
    ) -> str:
        """One commit on the branch tip; the run index follows it."""
        assert self.index is not None and self.tree is not None
        parent = self.tip
        sha = self.writer.commit(parent, changes, message, extra_blobs=extra)
        tree = self.tree.advance(sha, self.writer.written)
        self.tip, self.tree = sha, tree
        self.record.head = sha
        if self.index_lost is None:
            self.index.apply(parent, sha, changes, tree, docs)
            self.index.embed(self.embedder, [c.path for c in changes if c.content], self.record.at)
        return sha

    def resync(self) -> None:
        """After a failure: the tip is whatever the branch holds; the run index follows it
        (never raises: an index that cannot follow is copied again, else given up)."""
        if self.index is None or self.tree is None:
            return
        try:
            if self.index.conn.in_transaction:  # a phase that raised inside its own transaction
                self.index.conn.execute("ROLLBACK")
        except Exception:  # the index is copied again below if it is unusable
            log.debug("sleep: rolling back the run index failed", exc_info=True)
        if self.dry_run:
            return
        tip = runs.ref_sha(self.corpus.git, self.ref) or self.tip
        if tip != self.tree.commit:
            self.open_tip(tip)
        self.record.head = tip
        self.writer.reset()
        self.follow_tip()

    def follow_tip(self) -> None:
        """Bring the run index to the tip: caught up from the commit it holds, else a fresh
        copy of main's caught up from there; when neither works the night goes on without
        it (`index_lost`), so a fault here fails the phases left instead of wedging the run."""
        if self.index_lost is not None:
            return
        assert self.index is not None and self.tree is not None
        try:
            if self.index.watermark() != self.tree.commit:
                self.index.catch_up_to(self.tree.commit, self.tree)
            return
        except Exception as exc:  # a fresh copy is the remedy for any fault
            log.warning("sleep: the run index cannot follow the branch (%s); copying it again", exc)
        try:
            self.recopy_index()
        except Exception as exc:  # recorded: the phases left fail saying why
            log.warning("sleep: a fresh run index cannot follow the branch either: %s", exc)
            log.debug("sleep: run index traceback", exc_info=True)
            detail = exc.message if isinstance(exc, MemhtmlError) else str(exc)
            self.index_lost = f"{type(exc).__name__}: {detail}"

    def recopy_index(self) -> None:
        """Replace the run index with a fresh copy of main's, caught up to the tip."""
        assert self.index is not None and self.tree is not None
        folder = self.index.folder
        self.index.close()  # kept (closed) if the copy fails: the report needs no index
        with self.corpus.lock.hold():
            self.corpus.sync(worktree=False)
            self.index = RunIndex.copy_main(self.corpus, folder)
        self.open_tip(self.tree.commit)  # the embedder check reads the new index
        assert self.tree is not None
        self.index.catch_up_to(self.tree.commit, self.tree)

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
            if name == "report" and self.before_report is not None:
                self.before_report(results)
            self.ticker.phase(k, len(selected), name)
            with span("memhtml.sleep.phase", phase=name) as phase_span:
                result = self.run_phase(name, results)
                phase_span.set(status=result.get("status"))
            results.append(result)
            if not self.dry_run and self.persist:
                self.record.put_result(result)
                runs.save_record(self.corpus.root, self.record)
        self.ticker.close()
        return results
