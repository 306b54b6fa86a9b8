"""state-export: the state plane's durable rows as committed, diffable sidecars.

The rendering and the write rules are `memhtml.ops.state_io.plan_sidecars`,
which `memhtml state export` also calls, so the night and the command write
the same bytes: `.memhtml/state/access.jsonl` in the original memhtml's
format (SLEEP-FACTS 5.2; either tool's `state import` reads the other's) and
`.memhtml/state/corroboration.jsonl` (ours: sleep's corroboration counters).
An unchanged plane rewrites nothing and commits nothing, and an empty plane
never shrinks a committed sidecar to nothing (the original wrote an empty
file over it, losing the only copy of the usage counts a fresh clone has).
"""

from __future__ import annotations

import sqlite3
from typing import Final

from memhtml.ops.state_io import ACCESS_SIDECAR, plan_sidecars
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase

SIDECAR: Final = ACCESS_SIDECAR


class StateExport(BasePhase):
    """Write the sidecars whose bytes change."""

    name = "state-export"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Render the rows; stage each sidecar that differs from the branch's."""
        view = ctx.view
        try:
            plans = plan_sidecars(ctx.conn, lambda p: view.read(p) if view.exists(p) else None)
        except sqlite3.OperationalError as exc:
            return PhaseOutcome(status="skipped", detail=f"no state plane attached: {exc}")
        access = plans[0]
        counts = {"rows": access.rows, "bytes": len(access.data), "written": 0}
        out = PhaseOutcome(
            counts=counts, subject=f"export {access.rows} access rows to the committed sidecar"
        )
        if access.kept:
            out.detail = (
                "the state plane is empty; the committed sidecar is kept (state import restores it)"
            )
        for plan in plans:
            if not plan.write:
                continue
            counts["written"] += 1
            if not ctx.dry_run:
                created = not view.exists(plan.path)
                view.write(plan.path, plan.data)
                out.touched.append(Touched(plan.path, "created" if created else "rewritten"))
        return out


PHASE = StateExport()
