"""compress (needs a model): not built yet; without a model it says so.

The phase folds a community's compress-band memories into one synthesized
canonical, archiving the absorbed ones with supersedes (SLEEP-FACTS 2.10).
It needs the model seam, which comes with its own issue.
Until then, and whenever no model is bound (`MEMHTML_LLM=off`, the
default), it reports `skipped` with the reason: never a fake success, never
an empty "ok" that a reader would take for "nothing to do".
"""

from __future__ import annotations

from memhtml.sleep.phases._shared import ModelPhase


class Compress(ModelPhase):
    """A model phase: an honest skip until the model seam exists."""

    name = "compress"


PHASE = Compress()
