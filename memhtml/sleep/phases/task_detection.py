"""task-detection (needs a model): not built yet; without a model it says so.

The phase reads recent memories for commitments and follow-ups nobody closed
and opens detected tasks for a person to decide (SLEEP-FACTS 2.13). It needs
the model seam, which comes with its own issue.
Until then, and whenever no model is bound (`MEMHTML_LLM=off`, the
default), it reports `skipped` with the reason: never a fake success, never
an empty "ok" that a reader would take for "nothing to do".
"""

from __future__ import annotations

from memhtml.sleep.phases._shared import ModelPhase


class TaskDetection(ModelPhase):
    """A model phase: an honest skip until the model seam exists."""

    name = "task-detection"


PHASE = TaskDetection()
