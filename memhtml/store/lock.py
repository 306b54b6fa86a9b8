"""The repository lock: one writer at a time across processes, with a bounded wait.

An advisory `flock` on a file inside `.git/`, re-entrant within a process (a
thread lock plus a depth counter), so an operation that calls another write
operation does not deadlock itself. When the lock cannot be had in time the
writer gets ERR_WRITE_CONFLICT instead of waiting forever.

The kernel releases an flock when the last descriptor of its open file goes,
so a lock whose holder died is free again by itself. A forked child inherits
the descriptor, though, and with it the lock: a parse worker that outlived a
killed `index rebuild` once held the store locked for good. Every forked child
therefore closes the lock descriptors it inherited (`os.register_at_fork`);
the parent's lock is unaffected. The holder writes its pid into the lock file,
so a writer that times out can say who holds the store.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Final

from memhtml.contracts.errors import WriteConflictError

DEFAULT_TIMEOUT_S: Final = 30.0
_HELD: set[int] = set()  # lock descriptors this process holds


def _close_inherited_locks() -> None:
    """In a forked child: drop the parent's lock descriptors (the parent keeps its lock)."""
    for fd in list(_HELD):
        with suppress(OSError):
            os.close(fd)
    _HELD.clear()


os.register_at_fork(after_in_child=_close_inherited_locks)


def _holder(path: Path) -> str:
    """Who holds the lock, as far as the lock file says."""
    try:
        pid = int(path.read_text().strip() or "0")
    except (OSError, ValueError):
        return "another writer"
    if pid <= 0:
        return "another writer"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"pid {pid} (gone)"
    except PermissionError:
        pass
    return f"pid {pid}"


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
                        f"the store is locked by {_holder(self.path)} (waited {wait:g} s)",
                        suggestions=["retry later", "raise MEMHTML_LOCK_TIMEOUT"],
                        details={"lock": str(self.path)},
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        self._fd = fd
        _HELD.add(fd)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is a diagnostic only

    def _release_file(self) -> None:
        if self._fd is not None:
            _HELD.discard(self._fd)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
