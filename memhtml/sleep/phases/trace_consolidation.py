"""trace-consolidation (needs a model and the trace plane): not built yet; it says so.

The phase hands unread session transcripts to the model and lands each
distilled memory as its own commit, then watermarks the sessions through the
pending ledger (SLEEP-FACTS 2.12). It comes with the transcript issue. Until
then it reports `skipped` with the reason: never a fake success, never an
empty "ok" that a reader would take for "nothing to do".
"""

from __future__ import annotations

from typing import Any

from memhtml.sleep.phase import PhaseOutcome, SleepContext
from memhtml.sleep.phases._model import ModelPhase

NOT_BUILT = "the trace plane is not built yet: no transcripts to consolidate"


class TraceConsolidation(ModelPhase):
    """A model phase: an honest skip until the trace plane exists."""

    name = "trace-consolidation"

    def judge(self, ctx: SleepContext) -> PhaseOutcome:
        """Skipped, with the reason."""
        return PhaseOutcome(status="skipped", detail=NOT_BUILT)

    def plan(self, ctx: SleepContext) -> dict[str, Any]:
        """Nothing to count yet."""
        return {"counts": {}, "unknown": {"work": NOT_BUILT}}


PHASE = TraceConsolidation()
