"""trace-consolidation (needs a model): not built yet; without a model it says so.

The phase hands unread session transcripts to the consolidator and lands
each distilled memory as its own commit, then watermarks the sessions
through the pending ledger (SLEEP-FACTS 2.12). It needs the model seam,
which comes with its own issue.
Until then, and whenever no model is bound (`MEMHTML_LLM=off`, the
default), it reports `skipped` with the reason: never a fake success, never
an empty "ok" that a reader would take for "nothing to do".
"""

from __future__ import annotations

from memhtml.sleep.phases._shared import ModelPhase


class TraceConsolidation(ModelPhase):
    """A model phase: an honest skip until the model seam exists."""

    name = "trace-consolidation"


PHASE = TraceConsolidation()
