"""The per-file watermark and the decision it drives: skip, read the tail, or re-read whole.

A transcript only ever grows while its session runs, so a scan reads what
was appended since the last one: the stored watermark is the file's size and
mtime at the stat taken before reading, and the byte offset just past the
last complete line read. The decision is pure (SURFACES-FACTS 1.5), with one
addition: before a tail is read, a hash of the bytes just before the offset
must still match (`parser.fingerprint`), so a file rewritten and grown past
its old size is re-read whole rather than misread from the middle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Action = Literal["skip", "tail", "rescan"]
# Why a file is read from its first byte.
NEW: Final = "new"
SHRANK: Final = "truncated"
REWRITTEN: Final = "rewritten"


@dataclass(frozen=True, slots=True)
class Watermark:
    """Where the last scan of a file stopped."""

    size: int
    mtime_ns: int
    byte_off: int
    tail_fp: str


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do with one file: the action, the byte to start at, and why."""

    action: Action
    start: int
    reason: str | None = None


def plan(previous: Watermark | None, size: int, mtime_ns: int) -> Plan:
    """The original's decision table, evaluated in order.

    | condition                               | action            |
    | no previous watermark                   | rescan (new)      |
    | size and mtime unchanged                | skip              |
    | size shrank                             | rescan (truncated)|
    | mtime went backwards                    | rescan (rewritten)|
    | offset past the current size            | rescan (truncated)|
    | same size, mtime moved                  | rescan (rewritten)|
    | grew, mtime not older                   | tail from offset  |
    """
    if previous is None:
        return Plan("rescan", 0, NEW)
    if size == previous.size and mtime_ns == previous.mtime_ns:
        return Plan("skip", previous.byte_off)
    if size < previous.size:
        return Plan("rescan", 0, SHRANK)
    if mtime_ns < previous.mtime_ns:
        return Plan("rescan", 0, REWRITTEN)
    if previous.byte_off > size:
        return Plan("rescan", 0, SHRANK)
    if size == previous.size:
        return Plan("rescan", 0, REWRITTEN)
    return Plan("tail", previous.byte_off)
