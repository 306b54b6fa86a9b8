"""A live progress line for long jobs (reindex, embed), drawn only on a terminal.

Progress goes to stderr and only when that stream is a TTY, so piped,
captured and ``--json`` output stays pure data: on anything else the
reporter writes nothing at all. Redraws are rate-limited, so a job that
advances a million times costs a few hundred writes.

    with Progress(total=len(chunks), label="embedding") as progress:
        for batch in batches:
            ...
            progress.advance(len(batch))

    for item in track(items, "indexing"):
        ...
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import TextIO, TypeVar

T = TypeVar("T")

MIN_INTERVAL = 0.1


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def format_duration(seconds: float) -> str:
    """``m:ss`` below an hour, ``h:mm:ss`` above."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Counts work done toward ``total`` and redraws one ``\\r`` line on a TTY."""

    def __init__(
        self,
        total: int | None,
        label: str,
        stream: TextIO | None = None,
        *,
        min_interval: float = MIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``total`` None (or 0) means unknown: the line then shows count and rate only."""
        self.total = total
        self.label = label
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        self.enabled = _is_tty(self.stream)
        self.min_interval = min_interval
        self._clock = clock
        self._started = clock()
        self._last_draw: float | None = None
        self._width = 0
        self._closed = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def line(self) -> str:
        """The current status line (without the carriage return)."""
        elapsed = max(self._clock() - self._started, 1e-9)
        rate = self.done / elapsed
        parts = [
            f"{self.label} {self.done}/{self.total}" if self.total else f"{self.label} {self.done}"
        ]
        parts.append(f"{rate:.1f}/s")
        if self.total and rate > 0:
            parts.append(f"ETA {format_duration(max(self.total - self.done, 0) / rate)}")
        return " · ".join(parts)

    def _draw(self) -> None:
        text = self.line()
        pad = " " * max(self._width - len(text), 0)  # erase the tail of a longer last line
        self._width = len(text)
        self.stream.write(f"\r{text}{pad}")
        self.stream.flush()

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more units done; redraw if the last draw is old enough or the job is done."""
        self.done += n
        if not self.enabled or self._closed:
            return
        now = self._clock()
        finished = bool(self.total) and self.done >= (self.total or 0)
        if finished or self._last_draw is None or now - self._last_draw >= self.min_interval:
            self._last_draw = now
            self._draw()

    def close(self) -> None:
        """Draw the final count and end the line (TTY only); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.enabled:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()

    def wrap(self, iterable: Iterable[T]) -> Iterator[T]:
        """Yield from ``iterable``, advancing by one per item, and close at the end."""
        try:
            for item in iterable:
                yield item
                self.advance()
        finally:
            self.close()


def track(
    iterable: Iterable[T],
    label: str,
    *,
    total: int | None = None,
    stream: TextIO | None = None,
) -> Iterator[T]:
    """Iterate with a progress line; ``total`` defaults to ``len(iterable)`` when it has one."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    return Progress(total, label, stream).wrap(iterable)
