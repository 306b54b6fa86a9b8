"""What a sleep phase's commit says: its message (subject, indented body, trailers), the
parts it lands separately, and the records of what it touched."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from memhtml.domain.secrets import redact
from memhtml.sleep import runs
from memhtml.sleep.phase import Part, PhaseOutcome, Touched
from memhtml.store.git import commit_subject

if TYPE_CHECKING:
    from memhtml.store.branch import CommitTree
    from memhtml.store.files import FileChange


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
    # The subject and body quote what phases read (claims, session evidence): a credential
    # among them never reaches the history (memhtml.domain.secrets).
    lines = [redact(line) for line in lines]
    lines += [
        f"{runs.RUN_TRAILER}: {run_id}",
        f"{runs.PHASE_TRAILER}: {name}",
        f"{runs.COUNTS_TRAILER}: {counts}",
    ]
    return "\n".join(lines) + "\n"


def split_parts(
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


def complete_touched(
    outcome: PhaseOutcome, changes: Sequence[FileChange], base: CommitTree, run_id: str
) -> None:
    """Add a Touched record for every changed file the phase did not describe itself."""
    from memhtml.contracts.paths import is_archived_path
    from memhtml.sleep.phase import TouchKind

    described = {t.path for t in outcome.touched}
    for change in changes:
        if change.path in described or change.path in (
            runs.ledger_path(run_id),
            runs.changes_path(run_id),
        ):
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


def outcome_counts(outcome: PhaseOutcome) -> dict[str, int]:
    """Counts as the trailer carries them (TypeError/ValueError on a count that is no number)."""
    out: dict[str, int] = {}
    for key, value in outcome.counts.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"count {key!r} is {value!r}, not a number")
        out[str(key)] = int(value)
    return out


def touched_record(item: Any) -> dict[str, Any]:
    """A Touched record as data."""
    if isinstance(item, Touched):
        return asdict(item)
    raise TypeError(f"touched entries are Touched records, not {type(item).__name__}")
