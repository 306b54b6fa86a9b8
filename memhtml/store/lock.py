"""The repository lock: one writer at a time across processes, with a bounded wait.

An advisory `flock` on a file inside `.git/`, re-entrant within a process (a
thread lock plus a depth counter), so an operation that calls another write
operation does not deadlock itself. When the lock cannot be had in time the
writer gets ERR_WRITE_CONFLICT instead of waiting forever.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import WriteConflictError

DEFAULT_TIMEOUT_S: Final = 30.0


def lock_timeout() -> float:
    """The configured wait bound (MEMHTML_LOCK_TIMEOUT seconds)."""
    raw = os.environ.get("MEMHTML_LOCK_TIMEOUT")
    try:
        return float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        return DEFAULT_TIMEOUT_S


class RepoLock:
    """A cross-process, re-entrant writer lock for one repository."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the body; WriteConflictError after `timeout` seconds."""
        wait = lock_timeout() if timeout is None else timeout
        deadline = time.monotonic() + wait
        if not self._thread_lock.acquire(timeout=max(wait, 0.0)):
            raise WriteConflictError(
                "another writer in this process holds the store", suggestions=["retry"]
            )
        try:
            if self._depth == 0:
                self._acquire_file(deadline, wait)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release_file()
        finally:
            self._thread_lock.release()

    def _acquire_file(self, deadline: float, wait: float) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise WriteConflictError(
                        f"the store is locked by another writer (waited {wait:g} s)",
                        suggestions=["retry later", "raise MEMHTML_LOCK_TIMEOUT"],
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        self._fd = fd

    def _release_file(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
