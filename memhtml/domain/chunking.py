"""Split a memory body into embedding chunks, and name each chunk.

The format is one fact per file, so nearly every body is shorter than
``CHUNK_MAX_CHARS`` and becomes a single chunk: the vector is then a function
of the whole memory, not of an arbitrary window. A longer body is cut at
sentence ends and line breaks, and the sentences are packed greedily into
chunks of at most ``max_chars`` characters.

The chunks are an exact partition of the text: ``"".join(chunk_text(t)) == t``
for every ``t``. The whitespace after a sentence end, or a run of line breaks,
stays at the end of the chunk before the cut, so no character is dropped or
invented and each chunk is a slice ``text[start:end]`` (see
:func:`chunk_spans`). A sentence longer than ``max_chars`` is cut every
``max_chars`` characters, never dropped. A sentence that fits but for its
trailing whitespace ends its own chunk and the whitespace opens the next; if
the following sentence cannot join it, that whitespace is a chunk of its own
(rare: a sentence of exactly ``max_chars`` characters). The partition is kept
as it is because a chunk id names (content hash, ordinal): changing where cuts
fall would leave stored vectors under ids whose text moved. The empty body has
one chunk, the empty string, so every memory owns at least one chunk row.
"""

from __future__ import annotations

import hashlib
import re

CHUNK_MAX_CHARS = 1800

# A cut goes after sentence-final punctuation (with any closing quotes or
# brackets) followed by whitespace, or after a line break; the cut point is
# the end of that whitespace run.
_BOUNDARY = re.compile(r"[.!?]+[\"'’”)\]]*\s+|\n\s*")


def _segment_ends(text: str) -> list[int]:
    ends = [m.end() for m in _BOUNDARY.finditer(text)]
    if not ends or ends[-1] != len(text):
        ends.append(len(text))
    return ends


def chunk_spans(text: str, max_chars: int = CHUNK_MAX_CHARS) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of each chunk of ``text``; contiguous, covering it all.

    Each span is non-empty and at most ``max_chars`` long, except that the
    empty text yields the single span ``(0, 0)``.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    if len(text) <= max_chars:
        return [(0, len(text))]
    spans: list[tuple[int, int]] = []
    start = 0  # start of the open chunk
    end = 0  # end of the open chunk (start == end: nothing open)
    for seg_end in _segment_ends(text):
        if seg_end - start <= max_chars:
            end = seg_end
            continue
        if end > start:
            spans.append((start, end))
            start = end
        core_end = seg_end
        while core_end > start and text[core_end - 1].isspace():
            core_end -= 1
        if seg_end - start > max_chars >= core_end - start > 0:
            # The sentence fits but for its trailing whitespace: it ends its own
            # chunk, and the whitespace opens the next one.
            spans.append((start, core_end))
            start = core_end
        # The segment alone may still be too long: cut it every max_chars.
        while seg_end - start > max_chars:
            spans.append((start, start + max_chars))
            start += max_chars
        end = seg_end
    if end > start:
        spans.append((start, end))
    return spans


def chunk_text(text: str, max_chars: int = CHUNK_MAX_CHARS) -> list[str]:
    """The chunks of ``text``: ``[text]`` when it fits, else sentence-packed slices."""
    return [text[s:e] for s, e in chunk_spans(text, max_chars)]


def chunk_id(content_hash: str, ordinal: int) -> str:
    """The chunk's key: sha256 hex of ``"<content_hash>:<ordinal>"``.

    Keyed by content rather than path, an identical body anywhere in the
    tree shares its chunks and vectors, and a rename costs no embedding.
    """
    if ordinal < 0:
        raise ValueError("a chunk ordinal is never negative")
    return hashlib.sha256(f"{content_hash}:{ordinal}".encode()).hexdigest()
