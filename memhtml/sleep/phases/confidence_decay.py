"""confidence-decay: an un-reinforced memory's confidence drifts towards 0.2, one step a night.

For every active memory (arcs included, as in the original; tasks and the
`resources/people/` records left out: a person's identity is a reference,
not a claim that ages) that no one ever reinforced
(`state.access.reinforcement_count` is 0 or there is no row),
`memhtml-confidence` (1.0 when absent) takes one step of
`memhtml.domain.decay.decay_confidence`; a change under 0.005 is not written
(SLEEP-FACTS 2.7). The edit is a head-only splice of two lines:
`memhtml-confidence` and `memhtml-updated`.

One step a night, and only once a night: a memory is eligible only when its
`memhtml-updated` is before the run instant, and the decay stamps
`memhtml-updated` with the run instant (as the original does). So a second
run on the same night decays nothing (sleep is idempotent), and a memory
written today is not decayed tonight. Because `memhtml-updated` moves,
retention-triage measures a memory's age from `memhtml-created`, not from
its last update (where the original's retention read a decayed memory as
freshly updated every night).
"""

from __future__ import annotations

from typing import Final

from memhtml.contracts.errors import MemhtmlError
from memhtml.domain.decay import (
    DEFAULT_CONFIDENCE,
    decay_confidence,
    render_confidence,
    worth_writing,
)
from memhtml.html import set_meta
from memhtml.sleep.phase import PhaseOutcome, SleepContext, Touched
from memhtml.sleep.phases._shared import BasePhase, access_rows, is_person_record, stamp

COUNTS: Final = (
    "active",
    "reinforced",
    "skipped_type",
    "not_due",
    "eligible",
    "below_gate",
    "decayed",
    "failed",
)


class ConfidenceDecay(BasePhase):
    """Decay the confidence of memories nobody reinforced."""

    name = "confidence-decay"

    def run(self, ctx: SleepContext) -> PhaseOutcome:
        """Stamp the decayed confidence (and the run instant as updated) in the view."""
        counts = dict.fromkeys(COUNTS, 0)
        out = PhaseOutcome(counts=counts)
        access = access_rows(ctx.conn)
        rows = ctx.conn.execute(
            "SELECT path, memory_type, confidence, updated_at FROM files"
            " WHERE archived = 0 ORDER BY path"
        ).fetchall()
        for done, (path, memory_type, confidence, updated) in enumerate(rows, start=1):
            ctx.progress(done, len(rows))
            counts["active"] += 1
            if memory_type == "task" or is_person_record(path):
                counts["skipped_type"] += 1
                continue
            if access.get(path, (0, 0, 0.0, None))[1] > 0:
                counts["reinforced"] += 1
                continue
            if not str(updated) < ctx.at:
                counts["not_due"] += 1
                continue
            counts["eligible"] += 1
            before = DEFAULT_CONFIDENCE if confidence is None else float(confidence)
            after = decay_confidence(before)
            if not worth_writing(before, after):
                counts["below_gate"] += 1
                continue
            counts["decayed"] += 1
            if ctx.dry_run:
                continue

            def edit(text: str, value: float = after) -> str:
                text = set_meta(text, "memhtml-confidence", render_confidence(value))
                return set_meta(text, "memhtml-updated", ctx.at)

            from memhtml.sleep.changes import content_hash

            shown = render_confidence(before), render_confidence(after)
            change = ctx.changes.propose(
                "decay",
                {
                    "path": path,
                    "hash": content_hash(ctx.conn, ctx.view, path),
                    "confidence": shown[0],
                    "updated": str(updated),
                },
                summary=f"decay {path} confidence {shown[0]} -> {shown[1]}",
                reason={
                    "confidence": f"{shown[0]} -> {shown[1]}",
                    "last_updated": str(updated),
                    "reinforcements": 0,
                    "why": "not reinforced since it was last updated",
                },
            )
            if change is None:  # a person refused this decay
                counts["decayed"] -= 1
                counts["refused"] = counts.get("refused", 0) + 1
                continue
            try:
                stamped = stamp(ctx, path, edit)
                ctx.changes.done(change, ok=stamped)
                if stamped:
                    out.touched.append(Touched(path, "rewritten"))
            except MemhtmlError:
                ctx.changes.done(change, ok=False)
                counts["decayed"] -= 1
                counts["failed"] += 1
        out.subject = f"decay confidence on {counts['decayed']} un-reinforced memories"
        return out


PHASE = ConfidenceDecay()
