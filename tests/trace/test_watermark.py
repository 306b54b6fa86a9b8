"""The watermark decision table (SURFACES-FACTS 1.5), row by row."""

from __future__ import annotations

from memhtml.trace.watermark import Plan, Watermark, plan

PREV = Watermark(size=100, mtime_ns=1_000, byte_off=90, tail_fp="f")


def test_the_decision_table() -> None:
    assert plan(None, 50, 5) == Plan("rescan", 0, "new")
    assert plan(PREV, 100, 1_000) == Plan("skip", 90)
    assert plan(PREV, 99, 2_000) == Plan("rescan", 0, "truncated")
    assert plan(PREV, 150, 999) == Plan("rescan", 0, "rewritten")
    assert plan(Watermark(100, 1_000, 120, "f"), 110, 2_000) == Plan("rescan", 0, "truncated")
    assert plan(PREV, 100, 2_000) == Plan("rescan", 0, "rewritten")
    assert plan(PREV, 150, 2_000) == Plan("tail", 90)
    assert plan(PREV, 150, 1_000) == Plan("tail", 90)  # grew within the same mtime tick
