"""One indexing pass: discover the transcripts, read what changed, fold it into the plane.

Files are read one after another, each in one transaction (its turns, its
problems, its watermark and its session's row), so a pass killed midway
leaves every file either wholly before or wholly after, and the next pass
carries on. A file unchanged since the last pass (size and mtime equal) costs
one stat; a grown one is read from its watermark; a truncated or rewritten
one is read whole (memhtml.trace.watermark). A file gone since the last pass
is forgotten, so the plane stays a projection of what is on disk; a root that
does not exist is reported and forgets nothing (an unmounted disk is not a
deletion of every transcript). Bad input (an unreadable file, a vanished
one, invalid lines) is reported with its reason, never raised.

The reading half is memhtml.trace.reading; this module is the writer and
the report.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memhtml.trace.discover import discover, projects_dir
from memhtml.trace.parser import CHUNK_BYTES, MAX_LINE_BYTES
from memhtml.trace.reading import Batch, Begin, End, Event, Fail, Skip, read_events
from memhtml.trace.store import FileRow, TraceStore
from memhtml.trace.watermark import NEW

PROBLEMS_LISTED: Final = 100  # problems a report names one by one (all are counted)

OnFile = Callable[[int, int], None]


@dataclass
class ScanReport:
    """What a pass saw and did (the `trace.report` data)."""

    trace_root: str
    projects_dir: str
    root_exists: bool = True
    files_seen: int = 0
    skipped: int = 0  # unchanged since the last pass: one stat, nothing read
    tailed: int = 0  # grown: only the appended bytes read
    rescanned: int = 0  # read from the first byte (rescan_reasons says why)
    removed: int = 0  # gone from disk: forgotten
    failed: int = 0  # could not be read this time (problems says why)
    rescan_reasons: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0
    appended_bytes: int = 0  # of bytes_read, those read by tails
    turns_written: int = 0
    prompts_written: int = 0
    lines: Counter[str] = field(default_factory=Counter)
    problems: list[dict[str, Any]] = field(default_factory=list)
    problem_counts: Counter[str] = field(default_factory=Counter)
    sessions: set[str] = field(default_factory=set)
    reset: str | None = None
    elapsed_ms: float = 0.0

    def problem(self, file: str, reason: str, detail: str, **where: int) -> None:
        """Count a problem, and list it while the list is short."""
        self.problem_counts[reason] += 1
        if len(self.problems) < PROBLEMS_LISTED:
            self.problems.append({"file": file, **where, "reason": reason, "detail": detail})

    def to_data(self) -> dict[str, Any]:
        """The envelope payload: the original's counters (snake_case) and ours."""
        seconds = self.elapsed_ms / 1000
        return {
            "trace_root": self.trace_root,
            "projects_dir": self.projects_dir,
            "root_exists": self.root_exists,
            "files_seen": self.files_seen,
            "scanned": self.tailed + self.rescanned,
            "skipped": self.skipped,
            "tailed": self.tailed,
            "rescanned": self.rescanned,
            "rescan_reasons": dict(sorted(self.rescan_reasons.items())),
            "removed": self.removed,
            "failed": self.failed,
            "bytes_read": self.bytes_read,
            "appended_bytes": self.appended_bytes,
            "sessions_written": len(self.sessions),
            "turns_written": self.turns_written,
            "prompts_written": self.prompts_written,
            "tails_merged": self.tailed,
            "lines": dict(sorted(self.lines.items())),
            "problem_counts": dict(sorted(self.problem_counts.items())),
            "problems": self.problems,
            "reset": self.reset,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "mb_per_s": round(self.bytes_read / 1e6 / seconds, 1) if seconds > 0 else None,
        }


def scan(
    store: TraceStore,
    root: Path,
    *,
    now: str,
    on_file: OnFile | None = None,
    chunk: int = CHUNK_BYTES,
    max_line: int = MAX_LINE_BYTES,
) -> ScanReport:
    """Bring the plane in step with the transcripts under `root` (see the module docstring)."""
    started = time.perf_counter()
    report = ScanReport(str(root), str(projects_dir(root)), reset=store.reset)
    if not root.is_dir():
        report.root_exists = False
        report.problem(str(root), "root_missing", "the transcript root is not a directory")
        report.elapsed_ms = (time.perf_counter() - started) * 1000
        return report
    files, unlisted = discover(root)
    for folder, detail in unlisted:
        report.problem(folder, "unreadable", detail)
    known = store.files()
    report.files_seen = len(files)
    writer = _Writer(store, report, known, now=now, on_file=on_file, total=len(files))
    events = read_events(files, known, chunk=chunk, max_line=max_line)
    try:
        for event in events:
            writer.take(event)
    finally:
        events.close()  # closes the file being read, whatever happened
        writer.abandon()
    seen = {str(tf.path) for tf in files}
    blind = tuple(folder + os.sep for folder, _ in unlisted)  # listing failed: not gone
    for path, row in sorted(known.items()):
        if path not in seen and not path.startswith(blind):
            writer.forget(path, row.session_id)
            report.removed += 1
    with store.transaction():
        store.set_meta("trace_root", str(root))
        store.set_meta("scanned_at", now)
    report.elapsed_ms = (time.perf_counter() - started) * 1000
    return report


@dataclass
class _Open:
    """The file being written: its Begin event and what its batches added so far."""

    begin: Begin
    turns: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    problems: list[Any] = field(default_factory=list)
    prompts: set[str] = field(default_factory=set)


class _Writer:
    """Applies the reading thread's events to the plane, one transaction per file read."""

    def __init__(
        self,
        store: TraceStore,
        report: ScanReport,
        known: dict[str, FileRow],
        *,
        now: str,
        on_file: OnFile | None,
        total: int,
    ) -> None:
        self.store = store
        self.report = report
        self.known = known
        self.now = now
        self.on_file = on_file
        self.total = total
        self.done = 0
        self.open: _Open | None = None

    def _next_file(self) -> None:
        self.done += 1
        if self.on_file is not None:
            self.on_file(self.done, self.total)

    def take(self, event: Event) -> None:
        """Apply one event."""
        if isinstance(event, Skip):
            self.report.skipped += 1
            self.incomplete(str(event.tf.path), event.pending)
            self._next_file()
        elif isinstance(event, Fail):
            self._fail(event)
        elif isinstance(event, Begin):
            self._begin(event)
        elif isinstance(event, Batch):
            self._batch(event)
        else:
            self._end(event)

    def abandon(self) -> None:
        """Roll back a file whose read never ended (the pass was interrupted, or failed)."""
        self.open = None
        if self.store.conn.in_transaction:
            self.store.conn.execute("ROLLBACK")

    def forget(self, path: str, session_id: str) -> None:
        """A file gone from disk: its rows go, its session is recomputed."""
        with self.store.transaction():
            self.store.delete_file(path)
            self.store.refresh_session(session_id)
        self.report.sessions.add(session_id)

    def incomplete(self, path: str, pending: int) -> None:
        """A last line without its newline: being written, or cut by a crash; read once it ends."""
        if pending > 0:
            self.report.problem(
                path,
                "incomplete_last_line",
                f"{pending:,} bytes after the last newline, not read yet",
            )

    def _fail(self, event: Fail) -> None:
        if event.after_begin:
            self.abandon()
        self.report.failed += 1
        self.report.problem(event.path, event.reason, event.detail)
        prev = self.known.get(event.path)
        if event.reason == "vanished" and prev is not None:
            self.forget(event.path, prev.session_id)
        self._next_file()

    def _begin(self, event: Begin) -> None:
        tf, base = event.tf, event.base
        path = str(tf.path)
        self.store.conn.execute("BEGIN IMMEDIATE")
        self.open = _Open(event)
        if base is None and path in self.known:
            self.store.clear_file(path)
        # The row first (its turns reference it); its watermark is rewritten at the end.
        self.store.put_file(self._row(event, event.step.start, "", base.lines if base else 0))

    def _batch(self, batch: Batch) -> None:
        assert self.open is not None
        tf = self.open.begin.tf
        if batch.turns:
            self.store.add_turns(str(tf.path), tf.session_id, batch.turns)
            self.store.index_text(str(tf.path), batch.turns[0].line_no)
        self.store.add_problems(str(tf.path), batch.problems)
        self.open.turns += len(batch.turns)
        self.open.counts.update(batch.counts)
        self.open.problems += batch.problems
        self.open.prompts |= batch.prompts

    def _end(self, end: End) -> None:
        assert self.open is not None
        got, begin = self.open, self.open.begin
        tf, base = begin.tf, begin.base
        self.store.put_file(
            self._row(begin, end.consumed, end.fp, end.lines, counts=got.counts, end=end)
        )
        self.store.refresh_session(tf.session_id)
        self.store.conn.execute("COMMIT")
        self.open = None
        path, report = str(tf.path), self.report
        got.counts["read"] = end.lines - (base.lines if base else 0)
        report.lines.update(got.counts)
        report.turns_written += got.turns
        for p in got.problems:
            report.problem(path, p.reason, p.detail, line_no=p.line_no, byte_at=p.byte_at)
        report.bytes_read += end.consumed - begin.step.start
        report.prompts_written += len(got.prompts)
        report.sessions.add(tf.session_id)
        if begin.step.action == "tail":
            report.tailed += 1
            report.appended_bytes += end.consumed - begin.step.start
        else:
            report.rescanned += 1
            report.rescan_reasons[begin.step.reason or NEW] += 1
        self.incomplete(path, end.pending)
        self._next_file()

    def _row(
        self,
        begin: Begin,
        byte_off: int,
        fp: str,
        lines: int,
        *,
        counts: Counter[str] | None = None,
        end: End | None = None,
    ) -> FileRow:
        tf, base = begin.tf, begin.base
        total = Counter[str]()
        if base is not None:
            total.update(
                records=base.records,
                dropped=base.dropped,
                skipped_type=base.skipped_type,
                unknown_type=base.unknown_type,
            )
        total.update(counts or {})
        facts = end.facts if end is not None else (base.facts if base else None)
        return FileRow(
            file_path=str(tf.path),
            session_id=tf.session_id,
            kind=tf.kind,
            agent_id=tf.agent_id,
            slug=tf.slug,
            size=begin.size,
            mtime_ns=begin.mtime_ns,
            byte_off=byte_off,
            tail_fp=fp,
            lines=lines,
            records=total["records"],
            dropped=total["dropped"],
            skipped_type=total["skipped_type"],
            unknown_type=total["unknown_type"],
            cwd=facts.cwd if facts else None,
            git_branch=facts.git_branch if facts else None,
            entrypoint=facts.entrypoint if facts else None,
            version=facts.version if facts else None,
            ai_title=facts.ai_title if facts else None,
            scanned_at=self.now,
        )
