"""Translating failures from the libraries underneath into typed errors.

The adapters (CLI, MCP) call :func:`as_memhtml_error` on anything that is not
already a MemhtmlError, so a locked database or a field a pydantic model
refused answers with a code an agent can branch on, not ERR_UNKNOWN.
"""

from __future__ import annotations

from memhtml.contracts.errors import (
    InvalidFlagError,
    MemhtmlError,
    StorageError,
    UnknownError,
    WriteConflictError,
)


def as_memhtml_error(exc: BaseException) -> MemhtmlError:
    """The typed error for `exc` (UnknownError when nothing more specific fits)."""
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
        errors: list[dict[str, object]] = list(getattr(exc, "errors", list)())
        parts = [
            f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg', 'invalid')}"  # type: ignore[attr-defined]
            for e in errors[:3]
        ]
        return InvalidFlagError("invalid input: " + "; ".join(parts or [str(exc)]))
    return UnknownError(f"{kind.__name__}: {exc}")
