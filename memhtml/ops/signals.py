"""Termination as an exception, so a command asked to stop rolls back like a failure.

Python ends a process on SIGTERM without unwinding: no `finally`, no
`except BaseException`, so a write door stopped between writing its files and
committing them would leave them behind. SIGINT already raises
KeyboardInterrupt; the entry points (CLI, MCP server) make SIGTERM raise
`Terminated` too, and the write doors' undo runs for both. (SIGKILL cannot be
caught: the next writer settles that case from the batch journal.)
"""

from __future__ import annotations

import signal
import threading
from types import FrameType


class Terminated(BaseException):
    """SIGTERM arrived; unwinds like KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


def terminate_as_exception() -> None:
    """Install the SIGTERM handler (main thread only; a no-op elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)
