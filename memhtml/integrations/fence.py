"""A fenced block inside a text file the user owns: an instruction file, a shell rc file.

Two marker lines delimit our text; everything outside them is the user's and
never moves. A new block is appended after one blank line; its splice (the
separator and the block) is what an uninstall takes away again. Markers that
are duplicated, unpaired or out of order mean the file was edited by hand or
by a failed run: every guess at where our block ends could delete the user's
lines, so they are refused (`FenceError`), never repaired.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from memhtml.integrations.splice import Splice


class Markers(NamedTuple):
    """The two marker lines of one comment syntax."""

    start: str
    end: str


MARKDOWN: Final = Markers("<!-- MEMHTML:START -->", "<!-- MEMHTML:END -->")
SHELL: Final = Markers("# MEMHTML:START", "# MEMHTML:END")


class FenceError(ValueError):
    """The markers in a file are malformed; the message says how."""


def _locate(text: str, m: Markers) -> tuple[int, int] | None:
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() == m.start]
    ends = [i for i, line in enumerate(lines) if line.strip() == m.end]
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1:
        raise FenceError(
            f"found {len(starts)} {m.start!r} and {len(ends)} {m.end!r} lines, expected one of each"
        )
    if ends[0] < starts[0]:
        raise FenceError(f"{m.end!r} comes before {m.start!r}")
    return starts[0], ends[0]


def block(m: Markers, body: str) -> str:
    """The block as written: the markers around `body`, ending with a newline."""
    inner = body.rstrip("\n")
    return f"{m.start}\n{inner}\n{m.end}\n" if inner else f"{m.start}\n{m.end}\n"


def body(text: str | None, m: Markers) -> str | None:
    """The text between the markers, or None when the file has no block."""
    if not text:
        return None
    found = _locate(text, m)
    if found is None:
        return None
    lines = text.split("\n")
    return "\n".join(lines[found[0] + 1 : found[1]])


def has_block(text: str | None, m: Markers) -> bool:
    """Whether the file holds a block (malformed markers raise)."""
    return bool(text) and _locate(text or "", m) is not None


def append(text: str | None, m: Markers, content: str) -> tuple[str, Splice]:
    """`text` with a new block appended after a blank line (the caller checked there is none)."""
    base = text or ""
    if not base or base.endswith("\n\n"):
        sep = ""
    elif base.endswith("\n"):
        sep = "\n"
    else:
        sep = "\n\n"
    new = sep + block(m, content)
    return base + new, Splice("", new)


def replace(text: str, m: Markers, content: str) -> tuple[str, Splice]:
    """`text` with the existing block's lines replaced by a block of `content`."""
    found = _locate(text, m)
    if found is None:
        return append(text, m, content)
    lines = text.split("\n")
    old = "\n".join(lines[found[0] : found[1] + 1]) + "\n"
    new = block(m, content)
    before = "\n".join(lines[: found[0]])
    before = before + "\n" if found[0] else ""
    after = "\n".join(lines[found[1] + 1 :])
    return before + new + after, Splice(old, new)


def remove(text: str, m: Markers) -> str:
    """`text` without its block and the blank lines that separated it (by structure)."""
    found = _locate(text, m)
    if found is None:
        return text
    lines = text.split("\n")
    head = lines[: found[0]]
    tail = lines[found[1] + 1 :]
    while head and not head[-1].strip():
        head.pop()
    while tail and not tail[0].strip():
        tail.pop(0)
    if not head:
        return "\n".join(tail)
    if not tail:
        return "\n".join(head) + "\n"
    return "\n".join([*head, "", *tail])
