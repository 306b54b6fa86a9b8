"""A full disk, recognised wherever it surfaces, and named so a person knows what to free.

A full file system (ENOSPC) or an exhausted quota (EDQUOT) reaches memhtml in
three forms: an OSError from our own file writes, a git command's stderr
("No space left on device", "Disk quota exceeded"), and SQLite's SQLITE_FULL
("database or disk is full", which SQLite answers for ENOSPC). Each becomes
one DiskFullError (ERR_DISK_FULL) naming the path, the file system it lives
on (its mount point) and the space left there.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, Final

from memhtml.contracts.errors import DiskFullError

DISK_FULL_ERRNOS: Final = (errno.ENOSPC, errno.EDQUOT)
# What git (strerror), and SQLite (sqlite3_errstr(SQLITE_FULL)) print for them.
DISK_FULL_TEXTS: Final = (
    "no space left on device",
    "disk quota exceeded",
    "database or disk is full",
)
SQLITE_FULL: Final = 13


def is_disk_full_text(text: str) -> bool:
    """True when an error text (git's stderr, SQLite's message) says the disk is full."""
    lowered = text.lower()
    return any(t in lowered for t in DISK_FULL_TEXTS)


def disk_full_cause(exc: BaseException | None) -> BaseException | None:
    """The exception in `exc`'s chain (itself, its cause or context) that is a full disk."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DiskFullError):
            return exc
        if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
            return exc
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF == SQLITE_FULL:
            return exc
        if not isinstance(exc, OSError) and is_disk_full_text(str(exc)):
            return exc  # git's stderr in a GitError, SQLite's text in a wrapped error
        exc = exc.__cause__ or exc.__context__
    return None


def mount_point(path: Path | str) -> Path:
    """The mount point of the file system holding `path` (its nearest existing ancestor)."""
    here = Path(os.path.realpath(path))
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        device = here.stat().st_dev
        while here != here.parent and here.parent.stat().st_dev == device:
            here = here.parent
    except OSError:
        pass
    return here


def free_bytes(path: Path | str) -> int | None:
    """Bytes an unprivileged writer may still use on `path`'s file system (None: unknown)."""
    try:
        st = os.statvfs(mount_point(path))
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _size(n: int | None) -> str:
    if n is None:
        return "unknown space"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"  # pragma: no cover


def _place(where: Path | str | None, cause: BaseException | None) -> Path:
    """The path to name: the file the failing call named when there is one, else `where`."""
    named = getattr(cause, "filename", None)
    if isinstance(named, str | os.PathLike) and str(named):
        return Path(named)
    return Path(where) if where is not None else Path.cwd()


def _said(cause: BaseException | None) -> str:
    """What the failing call said, in a few words (no repeat of a DiskFullError's own text)."""
    if cause is None or isinstance(cause, DiskFullError):
        return ""
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    text = " ".join(str(cause).split())
    return text if len(text) <= 160 else text[:157] + "..."


def disk_full_error(
    where: Path | str | None,
    cause: BaseException | None = None,
    *,
    consequence: str = "",
    doing: str = "",
) -> DiskFullError:
    """The DiskFullError for a full disk met while `doing` (under `where`, the memory root).

    `consequence` says what became of the command (a write door: nothing was
    committed). A DiskFullError `cause` keeps its own place, with the consequence added.
    """
    if isinstance(cause, DiskFullError) and "path" in cause.details:
        place = Path(str(cause.details["path"]))
    else:
        place = _place(where, cause)
    mount = mount_point(place)
    free = free_bytes(mount)
    quota = (isinstance(cause, OSError) and cause.errno == errno.EDQUOT) or (
        cause is not None and "quota" in str(cause).lower()
    )
    what = "the disk quota is used up" if quota else "no space is left"
    details: dict[str, Any] = {
        "path": str(place),
        "mount": str(mount),
        "free_bytes": free,
        "reason": "EDQUOT" if quota else "ENOSPC",
    }
    said = _said(cause)
    message = (
        f"{what} on the file system holding {place} (mounted at {mount}, {_size(free)} free)"
        + (f" while {doing}" if doing else f": {said}" if said else "")
        + (f"; {consequence}" if consequence else "")
    )
    return DiskFullError(
        message,
        suggestions=[
            f"free space on the file system mounted at {mount} (df -h {mount}), then retry",
            "nothing needs repair by hand: the next command settles the store",
        ],
        details=details,
    )
