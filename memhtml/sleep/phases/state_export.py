"""state-export: the state plane's access rows as a committed, diffable sidecar.

`.memhtml/state/access.jsonl` holds one JSON object per `state.access` row,
sorted by path, in the original memhtml's format (SLEEP-FACTS 5.2) so
either tool's `state import` reads the other's: keys `path`, `accessCount`,
`reinforcementCount`, `outcomeScore` (4 decimals, never -0), `lastAccessedAt`,
`lastReinforcedAt`, `updatedAt`, in that order, no spaces, lines joined by
newlines with a trailing one. The bytes are a function of the rows, so an
unchanged plane rewrites nothing and commits nothing.

Where we differ: with the state plane missing or empty, the original wrote an
empty sidecar over the committed one (losing the only copy of the usage
counts a fresh clone has); here an empty plane never shrinks a committed
sidecar to nothing, and no empty file is created.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Final

from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase

SIDECAR: Final = ".memhtml/state/access.jsonl"


def _score(value: Any) -> float:
    rounded = round(float(value or 0.0), 4)
    return 0.0 if rounded == 0 else rounded


def render_rows(rows: list[tuple[Any, ...]]) -> bytes:
    """The sidecar's bytes for `state.access` rows (path order is the caller's)."""
    lines = [
        json.dumps(
            {
                "path": path,
                "accessCount": int(access or 0),
                "reinforcementCount": int(reinforced or 0),
                "outcomeScore": _score(outcome),
                "lastAccessedAt": last_access,
                "lastReinforcedAt": last_reinforced,
                "updatedAt": updated or "",
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for path, access, reinforced, outcome, last_access, last_reinforced, updated in rows
    ]
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


class StateExport(BasePhase):
    """Write the access sidecar when its bytes change."""

    name = "state-export"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Render the rows; stage the sidecar when it differs from the branch's."""
        try:
            rows = ctx.conn.execute(
                "SELECT path, access_count, reinforcement_count, outcome_score,"
                " last_accessed_at, last_reinforced_at, updated_at FROM state.access"
                " ORDER BY path"
            ).fetchall()
        except sqlite3.OperationalError as exc:
            return PhaseOutcome(status="skipped", detail=f"no state plane attached: {exc}")
        data = render_rows(rows)
        current = ctx.view.read(SIDECAR) if ctx.view.exists(SIDECAR) else None
        counts = {"rows": len(rows), "bytes": len(data), "written": 0}
        out = PhaseOutcome(
            counts=counts, subject=f"export {len(rows)} access rows to the committed sidecar"
        )
        if not rows and current:
            out.detail = (
                "the state plane is empty; the committed sidecar is kept (state import restores it)"
            )
            return out
        if data == (current or b"") or (not rows and current is None):
            return out
        counts["written"] = 1
        if not ctx.dry_run:
            ctx.view.write(SIDECAR, data)
            out.touched.append(Touched(SIDECAR, "created" if current is None else "rewritten"))
        return out


PHASE = StateExport()
