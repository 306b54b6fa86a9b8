"""The reading half of a pass: decide per file, parse what changed, hand events to the writer.

This half opens each file, re-plans it from the stat of the open file,
checks a tail's fingerprint, and folds its new lines into batches of turns;
the writer (memhtml.trace.scan) stores each batch and indexes its text, one
transaction per file. Nothing here touches the database. (Running this half
in a thread ahead of the writer was measured and dropped: the writer's
SQLite calls each wait for the GIL the parser holds, and a pass got no
faster on two cores.)

Events, per file, in order: `Skip`, or `Fail`, or `Begin`, any `Batch`es,
then `End` (or a `Fail` with `after_begin` when an I/O error cut the read:
the writer rolls the file back).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memhtml.trace.discover import TraceFile
from memhtml.trace.parser import fingerprint, read_folded
from memhtml.trace.records import FileFacts, Problem, Skipped, Turn, merge_facts
from memhtml.trace.store import FileRow
from memhtml.trace.watermark import REWRITTEN, Plan, plan

BATCH: Final = 512  # lines per batch (one executemany, one FTS insert)


@dataclass(frozen=True, slots=True)
class Skip:
    """Unchanged since the last pass; `pending` bytes of an unfinished last line wait."""

    tf: TraceFile
    pending: int


@dataclass(frozen=True, slots=True)
class Fail:
    """Could not be read: vanished (its rows go), unreadable or undecodable (they stay)."""

    tf: TraceFile
    path: str
    reason: str
    detail: str
    after_begin: bool = False


@dataclass(frozen=True, slots=True)
class Begin:
    """A read starts: from the first byte (`base` None) or from `base`'s watermark."""

    tf: TraceFile
    step: Plan
    size: int
    mtime_ns: int
    base: FileRow | None


@dataclass(slots=True)
class Batch:
    """Up to BATCH lines, folded."""

    turns: list[Turn] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    prompts: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class End:
    """The read finished: where it stopped, the file's facts, the new fingerprint."""

    consumed: int
    lines: int
    pending: int
    fp: str
    facts: FileFacts


Event = Skip | Fail | Begin | Batch | End


def read_events(
    files: Iterable[TraceFile], known: Mapping[str, FileRow], *, chunk: int, max_line: int
) -> Generator[Event, None, None]:
    """Every file's events, in file order."""
    for tf in files:
        yield from _file_events(tf, known.get(str(tf.path)), chunk, max_line)


def _file_events(tf: TraceFile, prev: FileRow | None, chunk: int, max_line: int) -> Iterator[Event]:
    path = str(tf.path)
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = path.encode("utf-8", "replace").decode()
        yield Fail(tf, shown, "undecodable_name", "the file name is not UTF-8")
        return
    step = plan(prev.watermark if prev else None, tf.size, tf.mtime_ns)
    if step.action == "skip":
        yield Skip(tf, tf.size - step.start)
        return
    try:
        fh = tf.path.open("rb")
    except FileNotFoundError:
        yield Fail(tf, path, "vanished", "the file disappeared before it could be read")
        return
    except OSError as exc:
        yield Fail(tf, path, "unreadable", exc.strerror or str(exc))
        return
    begun = False
    with fh:
        try:
            st = os.fstat(fh.fileno())  # the size and mtime this read stands for
            step = plan(prev.watermark if prev else None, st.st_size, st.st_mtime_ns)
            if step.action == "skip":
                yield Skip(tf, st.st_size - step.start)
                return
            if step.action == "tail" and prev and fingerprint(fh, step.start) != prev.tail_fp:
                step = Plan("rescan", 0, REWRITTEN)
            base = prev if step.action == "tail" else None
            yield Begin(tf, step, st.st_size, st.st_mtime_ns, base)
            begun = True
            yield from _parse(
                tf, fh, step, size=st.st_size, base=base, chunk=chunk, max_line=max_line
            )
        except OSError as exc:  # an I/O error mid-read: the writer rolls the file back
            yield Fail(tf, path, "unreadable", exc.strerror or str(exc), after_begin=begun)


def _parse(
    tf: TraceFile,
    fh: Any,
    step: Plan,
    *,
    size: int,
    base: FileRow | None,
    chunk: int,
    max_line: int,
) -> Iterator[Event]:
    facts = base.facts if base else FileFacts()
    fh.seek(step.start)
    reader, folded = read_folded(
        fh,
        step.start,
        base.lines if base else 0,
        agent_id=tf.agent_id,
        chunk=chunk,
        max_line=max_line,
        stop=size,
    )
    batch = Batch()
    n = 0
    for item in folded:
        n += 1
        if item is None:
            batch.counts["blank"] += 1
        elif isinstance(item, Problem):
            batch.counts["dropped"] += 1
            batch.problems.append(item)
        elif isinstance(item, Skipped):
            batch.counts["records"] += 1
            batch.counts["skipped_type"] += 1
        else:
            turn, more = item
            batch.counts["records"] += 1
            if more is not None and more != facts:
                facts = merge_facts(facts, more)
            if turn is not None:
                if turn.role == "raw":
                    batch.counts["unknown_type"] += 1
                if turn.prompt_id:
                    batch.prompts.add(turn.prompt_id)
                batch.turns.append(turn)
        if n >= BATCH:
            yield batch
            batch, n = Batch(), 0
    if n:
        yield batch
    yield End(
        reader.consumed, reader.lines, reader.pending, fingerprint(fh, reader.consumed), facts
    )
