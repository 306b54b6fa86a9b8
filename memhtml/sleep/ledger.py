"""The pending ledger: a run's effects git cannot carry, applied only by a successful merge.

A phase returns marks (`{"kind": ..., ...}`); the engine appends them, one JSON
object a line with sorted keys, to `.memhtml/sleep/<run-id>.pending.jsonl` in
the phase's own commit, adding `run` and `phase`. Nothing reaches the state
plane during a run, so deleting the branch discards them. `sleep merge` applies
each line once (`state.sleep_marks_applied` remembers which), through the
dispatcher below; a kind it does not know stays pending and is counted as such.

Kinds applied here:

* `entity-corroboration` `{entity_type, alias, canonical}`: counts a fuzzy
  entity merge proposed this night (once per run date) in
  `state.entity_corroboration`; a later run reads the count and merges when
  corroborated.
* `entity-promotion` `{entity_type, alias, canonical}`: the merge was made;
  the row is marked promoted.
* `edge-promotion` `{src, rel, dst, strength?}`: a mined (derived) edge joins
  main's index (`derived = 1`, provenance `sleep`) and is counted in
  `state.edge_corroboration`.
* `edge-detection` `{src, rel, dst}`: a model judged the pair this night (edge-typing's
  contradictions); counted once per run date in `state.edge_corroboration`, which
  a later night reads to decide whether the judgement is corroborated. Nothing
  joins the index.
* `consolidation-watermark` `{name, value}`: where an incremental consolidation
  got to, in `state.sleep_watermarks`.
* `usage-move` `{src, dst}`: a memory the run moved (archived, folded, re-filed);
  its usage rows in `state.access` follow it to `dst` (the engine writes one for
  every move a commit makes, whatever the phase). Main's index catching up with
  the merge moves them too where git sees the rename; the mark makes it so where
  git does not (a rewrite too large for rename detection, or past its limit),
  and a row already moved is left as it is.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from memhtml.contracts.errors import InvalidMemoryError
from memhtml.contracts.vocab import REL_CLASS, normalize_rel
from memhtml.index.db import write_transaction


def encode(marks: Iterable[Mapping[str, Any]]) -> bytes:
    """Ledger lines (sorted keys, UTF-8, one object a line)."""
    return b"".join(
        json.dumps(dict(m), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        + b"\n"
        for m in marks
    )


def check_mark(mark: Any, phase: str) -> dict[str, Any]:
    """A mark as it will be written (ValueError when it is not a JSON object with a kind)."""
    if not isinstance(mark, Mapping) or not isinstance(mark.get("kind"), str) or not mark["kind"]:
        raise ValueError(f"phase {phase} returned a mark without a kind: {mark!r}")
    out = dict(mark)
    json.dumps(out)  # raises on what JSON cannot carry
    return out


def decode(data: bytes) -> list[dict[str, Any]]:
    """The marks of a ledger file (InvalidMemoryError on a line that is not a mark)."""
    marks: list[dict[str, Any]] = []
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            mark = json.loads(line)
        except ValueError as exc:
            raise InvalidMemoryError(f"pending ledger line {n} is not JSON: {exc}") from exc
        if not isinstance(mark, dict) or not isinstance(mark.get("kind"), str):
            raise InvalidMemoryError(f"pending ledger line {n} is not a mark with a kind")
        marks.append(mark)
    return marks


@dataclass
class LedgerReport:
    """What applying a run's ledger did."""

    applied: int = 0
    already: int = 0
    pending: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    pending_kinds: dict[str, int] = field(default_factory=dict)
    refused: list[dict[str, Any]] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "applied": self.applied,
            "already_applied": self.already,
            "pending": self.pending,
            "by_kind": self.by_kind,
            "pending_kinds": self.pending_kinds,
            "refused": self.refused,
        }


Handler = Callable[[sqlite3.Connection, Mapping[str, Any], str, str], None]


def _text(mark: Mapping[str, Any], *names: str) -> str:
    for name in names:
        value = mark.get(name)
        if isinstance(value, str) and value:
            return value
    raise ValueError(f"mark {mark.get('kind')} lacks {names[0]}")


def _entity_corroboration(
    conn: sqlite3.Connection, mark: Mapping[str, Any], at: str, _run: str
) -> None:
    etype = _text(mark, "entity_type", "type")
    alias, canonical = _text(mark, "alias"), _text(mark, "canonical")
    conn.execute(
        "INSERT INTO state.entity_corroboration"
        " (entity_type, alias, canonical, count, first_seen, last_seen) VALUES (?, ?, ?, 1, ?, ?)"
        " ON CONFLICT (entity_type, alias, canonical) DO UPDATE SET"
        " count = count + (CASE WHEN last_seen < excluded.last_seen THEN 1 ELSE 0 END),"
        " last_seen = max(last_seen, excluded.last_seen)",
        (etype, alias, canonical, at, at),
    )


def _entity_promotion(
    conn: sqlite3.Connection, mark: Mapping[str, Any], at: str, _run: str
) -> None:
    etype = _text(mark, "entity_type", "type")
    alias, canonical = _text(mark, "alias"), _text(mark, "canonical")
    conn.execute(
        "INSERT INTO state.entity_corroboration"
        " (entity_type, alias, canonical, count, first_seen, last_seen, promoted)"
        " VALUES (?, ?, ?, 1, ?, ?, 1)"
        " ON CONFLICT (entity_type, alias, canonical) DO UPDATE SET promoted = 1,"
        " last_seen = max(last_seen, excluded.last_seen)",
        (etype, alias, canonical, at, at),
    )


def _edge_of(mark: Mapping[str, Any]) -> tuple[str, str, str]:
    src, dst = _text(mark, "src", "src_path"), _text(mark, "dst", "dst_path")
    rel = normalize_rel(_text(mark, "rel"))
    if rel is None or src == dst:
        raise ValueError(f"{mark.get('kind')} {src} -{mark.get('rel')}-> {dst} is not a valid edge")
    return src, rel, dst


def _count_edge(conn: sqlite3.Connection, src: str, rel: str, dst: str, at: str) -> None:
    conn.execute(
        "INSERT INTO state.edge_corroboration"
        " (src_path, dst_path, rel, count, first_seen, last_seen) VALUES (?, ?, ?, 1, ?, ?)"
        " ON CONFLICT (src_path, rel, dst_path) DO UPDATE SET"
        " count = count + (CASE WHEN last_seen < excluded.last_seen THEN 1 ELSE 0 END),"
        " last_seen = max(last_seen, excluded.last_seen)",
        (src, dst, rel, at, at),
    )


def _edge_detection(conn: sqlite3.Connection, mark: Mapping[str, Any], at: str, _run: str) -> None:
    _count_edge(conn, *_edge_of(mark), at)


def _edge_promotion(conn: sqlite3.Connection, mark: Mapping[str, Any], at: str, _run: str) -> None:
    src, rel, dst = _edge_of(mark)
    _count_edge(conn, src, rel, dst, at)
    strength = mark.get("strength")
    # The edge joins the index only between memories it holds (a rebuild keeps derived rows).
    conn.execute(
        "INSERT OR IGNORE INTO edges"
        " (src_path, dst_path, rel, edge_class, derived, strength, provenance, created_at)"
        " SELECT ?, ?, ?, ?, 1, ?, 'sleep', ?"
        " WHERE EXISTS (SELECT 1 FROM files WHERE path = ?)"
        " AND EXISTS (SELECT 1 FROM files WHERE path = ?)",
        (
            src,
            dst,
            rel,
            REL_CLASS[rel],
            float(strength) if isinstance(strength, int | float) else None,
            at,
            src,
            dst,
        ),
    )


def _watermark(conn: sqlite3.Connection, mark: Mapping[str, Any], at: str, run_id: str) -> None:
    name, value = _text(mark, "name", "source"), mark.get("value")
    if value is None:
        raise ValueError("consolidation-watermark lacks value")
    conn.execute(
        "INSERT INTO state.sleep_watermarks (name, value, run_id, updated_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (name) DO UPDATE SET value = excluded.value, run_id = excluded.run_id,"
        " updated_at = excluded.updated_at",
        (name, value if isinstance(value, str) else json.dumps(value), run_id, at),
    )


def _usage_move(conn: sqlite3.Connection, mark: Mapping[str, Any], _at: str, _run: str) -> None:
    from memhtml.index.writer import move_access

    src, dst = _text(mark, "src"), _text(mark, "dst")
    if src == dst:
        raise ValueError(f"usage-move {src} -> {dst} moves nothing")
    move_access(conn, src, dst)


def usage_moves(changes: Iterable[Any]) -> list[dict[str, Any]]:
    """One `usage-move` mark per memory a change set moves (`FileChange.moved_from`)."""
    from memhtml.index.indexer import indexable

    return [
        {"kind": "usage-move", "src": c.moved_from, "dst": c.path}
        for c in changes
        if c.moved_from is not None
        and c.content is not None
        and c.moved_from != c.path
        and indexable(c.moved_from)
    ]


HANDLERS: Final[dict[str, Handler]] = {
    "entity-corroboration": _entity_corroboration,
    "entity-promotion": _entity_promotion,
    "edge-promotion": _edge_promotion,
    "edge-detection": _edge_detection,
    "consolidation-watermark": _watermark,
    "usage-move": _usage_move,
}


def apply_marks(
    conn: sqlite3.Connection, run_id: str, marks: Sequence[Mapping[str, Any]], at: str, now: str
) -> LedgerReport:
    """Apply every mark not applied before, in one transaction on main's connection.

    A mark of a kind this build does not know stays pending (counted); a mark
    its handler refuses (a missing field) is reported and left unapplied.
    """
    report = LedgerReport()
    with write_transaction(conn):
        done = {
            int(r[0])
            for r in conn.execute(
                "SELECT seq FROM state.sleep_marks_applied WHERE run_id = ?", (run_id,)
            )
        }
        for seq, mark in enumerate(marks, start=1):
            kind = str(mark.get("kind"))
            if seq in done:
                report.already += 1
                continue
            handler = HANDLERS.get(kind)
            if handler is None:
                report.pending += 1
                report.pending_kinds[kind] = report.pending_kinds.get(kind, 0) + 1
                continue
            try:
                conn.execute("SAVEPOINT mark")
                handler(conn, mark, at, run_id)
                conn.execute(
                    "INSERT INTO state.sleep_marks_applied (run_id, seq, kind, applied_at)"
                    " VALUES (?, ?, ?, ?)",
                    (run_id, seq, kind, now),
                )
                conn.execute("RELEASE mark")
            except (ValueError, sqlite3.IntegrityError) as exc:
                conn.execute("ROLLBACK TO mark")
                conn.execute("RELEASE mark")
                report.pending += 1
                report.refused.append({"seq": seq, "kind": kind, "error": str(exc)})
                continue
            report.applied += 1
            report.by_kind[kind] = report.by_kind.get(kind, 0) + 1
    return report
