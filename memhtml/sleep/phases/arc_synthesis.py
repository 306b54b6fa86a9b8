"""arc-synthesis (needs a model): not built yet; without a model it says so.

The phase writes and updates the behavioural principles under areas/arcs/
from the best-retained memories, one commit per arc (SLEEP-FACTS 2.8). It
needs the model seam, which comes with its own issue.
Until then, and whenever no model is bound (`MEMHTML_LLM=off`, the
default), it reports `skipped` with the reason: never a fake success, never
an empty "ok" that a reader would take for "nothing to do".
"""

from __future__ import annotations

from memhtml.sleep.phases._shared import ModelPhase


class ArcSynthesis(ModelPhase):
    """A model phase: an honest skip until the model seam exists."""

    name = "arc-synthesis"


PHASE = ArcSynthesis()
