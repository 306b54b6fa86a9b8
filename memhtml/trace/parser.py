"""The streaming reader: complete lines of a transcript from a byte offset, never the whole file.

A transcript is read in chunks and split on the byte 0x0A (not a text line
reader, so invalid UTF-8 in one line never disturbs the next, and `\\r` is
JSON whitespace). Only newline-terminated lines are yielded and counted in
`consumed`: a trailing fragment (the agent is mid-write, or a crash cut the
line) is left for the next scan, which re-reads it whole once it ends. A line
longer than `max_line` is never held in memory: its bytes are counted and
dropped until its newline, and it is yielded as `None` so the caller reports
it. Peak memory is one chunk plus one line of at most `max_line` bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Final

from memhtml.trace.records import Folded, Problem, fold_line

CHUNK_BYTES: Final = 1 << 20
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
FINGERPRINT_BYTES: Final = 256

# (line number, byte offset of the line's first byte, the line or None when too long, its length)
RawLine = tuple[int, int, bytes | None, int]


class LineReader:
    """Complete lines of a binary stream from `start` (see the module docstring).

    After (or during) iteration, `consumed` is the offset just past the last
    complete line, `lines` the number of lines consumed counting from the
    `line_no` given, and `pending` the length of an unterminated trailing
    fragment (0 when the stream ends on a newline). With `stop`, nothing at or
    past that offset is read (the size the scan stat'ed: bytes appended while
    it reads wait for the next scan).
    """

    def __init__(
        self,
        fh: BinaryIO,
        start: int = 0,
        line_no: int = 0,
        *,
        chunk: int = CHUNK_BYTES,
        max_line: int = MAX_LINE_BYTES,
        stop: int | None = None,
    ) -> None:
        self._fh = fh
        self._left = None if stop is None else max(0, stop - start)
        self._chunk = max(1, chunk)
        self._max = max_line
        self.consumed = start
        self.lines = line_no
        self.pending = 0
        self.bytes_read = 0

    def __iter__(self) -> Iterator[RawLine]:
        parts: list[bytes] = []  # pieces of the current unterminated line
        part_len = 0
        oversized = False
        while True:
            want = self._chunk if self._left is None else min(self._chunk, self._left)
            data = self._fh.read(want) if want else b""
            if not data:
                break
            self.bytes_read += len(data)
            if self._left is not None:
                self._left -= len(data)
            start = 0
            while True:
                nl = data.find(b"\n", start)
                if nl < 0:
                    rest = len(data) - start
                    if not oversized and part_len + rest > self._max:
                        oversized, parts = True, []
                    if not oversized and rest:
                        parts.append(data[start:])
                    part_len += rest
                    self.pending = part_len
                    break
                length = part_len + nl - start
                line: bytes | None = None
                if not oversized and length <= self._max:
                    line = b"".join((*parts, data[start:nl])) if parts else data[start:nl]
                at = self.consumed
                self.consumed += length + 1
                self.lines += 1
                self.pending = 0
                parts, part_len, oversized = [], 0, False
                start = nl + 1
                yield self.lines - 1, at, line, length


def read_folded(
    fh: BinaryIO,
    start: int = 0,
    line_no: int = 0,
    *,
    agent_id: str | None = None,
    chunk: int = CHUNK_BYTES,
    max_line: int = MAX_LINE_BYTES,
    stop: int | None = None,
) -> tuple[LineReader, Iterator[Folded]]:
    """The reader and what each of its complete lines folds to, lazily (a too-long line is a
    `line_too_long` problem)."""
    reader = LineReader(fh, start, line_no, chunk=chunk, max_line=max_line, stop=stop)

    def folded() -> Iterator[Folded]:
        for n, at, line, length in reader:
            if line is None:
                yield Problem(n, at, "line_too_long", f"{length:,} bytes; at most {max_line:,}")
            else:
                yield fold_line(line, n, at, agent_id=agent_id)

    return reader, folded()


def fingerprint(fh: BinaryIO, offset: int) -> str:
    """A hash of the first bytes of the file and of the bytes just before `offset`.

    A grown file whose consumed part was rewritten at its start or its end (a
    new session under the same name, a last line replaced) no longer matches
    and is re-read whole. An edit in the middle that keeps both ends and grows
    the file goes unseen: transcripts are append-only, and that is the case
    the watermark serves.
    """
    head = min(offset, FINGERPRINT_BYTES)
    fh.seek(0)
    first = fh.read(head)
    begin = max(head, offset - FINGERPRINT_BYTES)
    fh.seek(begin)
    last = fh.read(offset - begin)
    return hashlib.blake2b(first + b"|" + last, digest_size=12).hexdigest()


def read_line_at(path: Path, byte_at: int, *, max_line: int = MAX_LINE_BYTES) -> bytes | None:
    """The complete line starting at `byte_at`, or None (gone, too long, or unterminated)."""
    try:
        with path.open("rb") as fh:
            fh.seek(byte_at)
            for _, _, line, _ in LineReader(fh, byte_at, max_line=max_line):
                return line
    except OSError:
        return None
    return None
