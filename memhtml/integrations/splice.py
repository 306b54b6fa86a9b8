"""A splice: the one edit an install made to a file, kept so an uninstall can reverse it exactly.

An install records, per fragment, the text it replaced (`old`, empty for an
insertion) and the text it wrote (`new`, which always holds our own command
lines or markers, so it occurs once). While `new` is still in the file exactly
once, reversing the splices in reverse order gives back the file's bytes as
they were before the install, whatever else changed around them. When a host
rewrote the file (Claude Code reformats `~/.claude.json`, Codex rewrites its
MCP tables), `undo` says so and the caller removes its fragment by structure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class Splice(NamedTuple):
    """One edit: `old` was replaced by `new` (an insertion has `old` empty)."""

    old: str
    new: str


def undo(text: str, splices: Sequence[Splice]) -> str | None:
    """`text` with `splices` reversed, last first; None when an inserted text is not there
    exactly once any more (the file was rewritten around it)."""
    for s in reversed(splices):
        if not s.new:
            continue
        if text.count(s.new) != 1:
            return None
        text = text.replace(s.new, s.old, 1)
    return text
