"""edge-typing (needs a model): not built yet; without a model it says so.

The phase types mined pairs (caused_by, supports, contradicts, ...) with one
model verdict each; a contradiction is written only after two nights'
detections (SLEEP-FACTS 2.6). It needs the model seam, which comes with its
own issue.
Until then, and whenever no model is bound (`MEMHTML_LLM=off`, the
default), it reports `skipped` with the reason: never a fake success, never
an empty "ok" that a reader would take for "nothing to do".
"""

from __future__ import annotations

from memhtml.sleep.phases._shared import ModelPhase


class EdgeTyping(ModelPhase):
    """A model phase: an honest skip until the model seam exists."""

    name = "edge-typing"


PHASE = EdgeTyping()
