"""Translating failures from the libraries underneath into typed errors.

The adapters (CLI, MCP) call :func:`as_memhtml_error` on every failure, so a
locked database, a full disk or a field a pydantic model refused answers
with a code an agent can branch on, not ERR_UNKNOWN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memhtml.contracts.errors import (
    GitError,
    InvalidFlagError,
    MemhtmlError,
    StorageError,
    UnknownError,
    WriteConflictError,
)

# Typed errors generic enough that a full disk underneath is the better answer.
_GENERIC: tuple[type[MemhtmlError], ...] = (StorageError, GitError, UnknownError)


def as_memhtml_error(exc: BaseException, root: Path | None = None) -> MemhtmlError:
    """The typed error for `exc` (UnknownError when nothing more specific fits).

    A full disk anywhere in `exc`'s chain (ENOSPC or EDQUOT, git saying so,
    SQLite's SQLITE_FULL) is DiskFullError, naming the file system that holds
    the failing file or, failing that, `root` (the memory root).
    """
    from memhtml.contracts.errors import DiskFullError

    if isinstance(exc, MemhtmlError) and (
        isinstance(exc, DiskFullError) or not isinstance(exc, _GENERIC)
    ):
        return exc
    from memhtml.store.space import disk_full_cause

    cause = disk_full_cause(exc)
    if cause is not None:
        from memhtml.store.space import disk_full_error

        return disk_full_error(root, cause)
    if isinstance(exc, MemhtmlError):
        return exc
    kind = type(exc)
    module = kind.__module__
    if module == "sqlite3" or kind.__name__ in ("OperationalError", "DatabaseError"):
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            return WriteConflictError(
                f"the index is busy ({exc}); another writer held it past the wait bound",
                suggestions=["retry the operation"],
            )
        return StorageError(f"the index failed: {exc}", suggestions=["memhtml doctor"])
    if module.startswith("pydantic") and kind.__name__ == "ValidationError":
        from memhtml.contracts.plain import problems, sentence

        errors: list[dict[str, Any]] = list(exc.errors(include_url=False))  # type: ignore[attr-defined]
        return InvalidFlagError(
            "invalid input: " + sentence(errors), details={"errors": problems(errors)}
        )
    return UnknownError(f"{kind.__name__}: {exc}")
