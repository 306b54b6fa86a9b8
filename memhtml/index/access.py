"""The access plane: reads and explicit outcomes move salience; nothing else does.

A search or recall hit never bumps (today's top five would rank higher
tomorrow for having been listed); a sleep phase never bumps. `read` bumps
neutrally; `reinforce` carries an outcome signal into the EWMA. Both respect a
per-path cooldown, so a loop that re-reads one path does not inflate it; the
two cooldowns are separate clocks, so an outcome reported right after the
read that led to it still counts. The local clock decides a cooldown: a row
stamped in the future (by another machine's clock, or a sidecar) does not
cool a path down at all, and the bump restamps it with now.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memhtml.contracts.errors import InvalidFlagError
from memhtml.domain.salience import OUTCOME_EWMA_ALPHA, SIGNALS, cooled_down, ewma
from memhtml.index.db import rollback_quietly


def bump(
    conn: sqlite3.Connection, paths: Sequence[str], signal: str, now: str
) -> tuple[list[str], list[str]]:
    """Record one access (with an outcome signal) per path: (bumped, cooled_down)."""
    if signal not in SIGNALS:
        raise InvalidFlagError(f"signal {signal!r} is not one of {', '.join(SIGNALS)}")
    value = SIGNALS[signal]
    wanted = list(dict.fromkeys(p.strip() for p in paths if p and p.strip()))
    bumped: list[str] = []
    cooled: list[str] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for path in wanted:
            # A read cools down against the last access; an outcome against the last
            # outcome, so search -> read -> reinforce keeps the signal.
            clock_column = "last_reinforced_at" if value else "last_accessed_at"
            row = conn.execute(
                "SELECT access_count, reinforcement_count, outcome_score,"
                f" {clock_column}, unixepoch(?) - unixepoch({clock_column})"
                " FROM state.access WHERE path = ?",
                (now, path),
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO state.access (path, access_count, reinforcement_count,"
                    " outcome_score, last_accessed_at, last_reinforced_at, updated_at)"
                    " VALUES (?, 1, ?, ?, ?, ?, ?)",
                    (path, 1 if value else 0, float(value), now, now if value else None, now),
                )
                bumped.append(path)
                continue
            count, reinforcements, outcome, last, elapsed = row
            if last is not None and not cooled_down(elapsed):
                cooled.append(path)
                continue
            if value:
                conn.execute(
                    "UPDATE state.access SET access_count = ?, reinforcement_count = ?,"
                    " outcome_score = ?, last_accessed_at = ?, last_reinforced_at = ?,"
                    " updated_at = ? WHERE path = ?",
                    (
                        count + 1,
                        reinforcements + 1,
                        ewma(outcome, value, OUTCOME_EWMA_ALPHA),
                        now,
                        now,
                        now,
                        path,
                    ),
                )
            else:
                conn.execute(
                    "UPDATE state.access SET access_count = ?, last_accessed_at = ?,"
                    " updated_at = ? WHERE path = ?",
                    (count + 1, now, now, path),
                )
            bumped.append(path)
        conn.execute("COMMIT")
    except BaseException:
        rollback_quietly(conn)
        raise
    return bumped, cooled


def access_row(conn: sqlite3.Connection, path: str) -> dict[str, object] | None:
    """One path's access statistics, if any."""
    cur = conn.execute("SELECT * FROM state.access WHERE path = ?", (path,))
    row = cur.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cur.description], row, strict=True))
