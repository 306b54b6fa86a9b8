"""A test seam: the disk fills at a chosen step of this process (`MEMHTML_FAULT_ENOSPC`).

Tests need a full disk at every step of a write door, which a real file
system gives only by chance. The steps that need space call `step(label)`:
the one atomic file write (`memhtml.store.files.write_atomic`) and the
directories it makes, every git command that writes (`memhtml.store.git`),
and the write door's SQLite transactions (`memhtml.index`). With the
variable unset (always, outside tests) `step` is one dictionary lookup and
answers None.

* ``MEMHTML_FAULT_ENOSPC=LABEL``: the first step labelled LABEL finds the
  disk full, and so does every step after it in this process (a full disk
  stays full; what frees space, an unlink, is not a step). ``LABEL#K`` names
  the K-th step with that label. A step fails as it would on a real disk: a
  file write with OSError ENOSPC after its temp file was created, a git
  command with exit 128 and "No space left on device" on stderr (without
  running), a SQLite step with a genuine SQLITE_FULL error.
* ``LABEL:after`` (or ``LABEL#K:after``): that step does its work and then
  reports the failure (a git command whose effect landed although it
  failed); the steps after it fail before they run.
* ``MEMHTML_FAULT_TRACE=FILE``: each step's label is appended to FILE, one a
  line, so a test can enumerate the steps of a door before failing each one.

Labels: ``write <folder>/<file>``, ``mkdir <folder>``, ``git <subcommand>``,
``sqlite <what>``. Steps on a helper thread (the index rows a door prepares
while git runs) interleave with the others, so a label, not a position,
names a step.
"""

from __future__ import annotations

import errno
import os
import threading
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    import sqlite3

ENV: Final = "MEMHTML_FAULT_ENOSPC"
TRACE_ENV: Final = "MEMHTML_FAULT_TRACE"
# git commands that write to the repository (`hash-object` only with -w).
WRITING_GIT: Final = frozenset(
    {
        "add",
        "checkout",
        "cherry-pick",
        "commit",
        "commit-tree",
        "fast-import",
        "fetch",
        "gc",
        "hash-object",
        "merge",
        "mktree",
        "mv",
        "pack-refs",
        "read-tree",
        "repack",
        "reset",
        "rm",
        "update-index",
        "update-ref",
        "write-tree",
    }
)
GIT_FULL_STDERR: Final = b"fatal: unable to write: No space left on device\n"

_lock = threading.Lock()
_seen: dict[str, int] = {}  # steps of this process by label
_full: list[str] = []  # the step at which the disk filled, once it has

Verdict = Literal["before", "after"] | None


def active() -> bool:
    """True when a test set the seam (the caller may then pay for a check it skips otherwise)."""
    return ENV in os.environ or TRACE_ENV in os.environ


def step(label: str) -> Verdict:
    """Note one space-needing step; None to go ahead, "before" when it must fail without
    running, "after" when it must run and then fail (see the module's doc)."""
    spec = os.environ.get(ENV)
    trace = os.environ.get(TRACE_ENV)
    if spec is None and trace is None:
        return None
    with _lock:
        seen = _seen.get(label, 0) + 1
        _seen[label] = seen
        if trace:
            with open(trace, "a", encoding="utf-8") as out:
                out.write(f"{label}\n")
        if spec is None:
            return None
        if _full:
            return "before"
        target, _, when = spec.partition(":")
        name, _, nth = target.partition("#")
        if name != label or seen != int(nth or 1):
            return None
        _full.append(label)
        return "after" if when == "after" else "before"


def git_step(args: tuple[str, ...] | list[str]) -> Verdict:
    """`step` for a git command line (its subcommand first); reading commands are not steps."""
    if not args or args[0] not in WRITING_GIT:
        return None
    if args[0] == "hash-object" and "-w" not in args:
        return None
    return step(f"git {args[0]}")


def reset() -> None:
    """Forget the steps counted so far (a test running several doors in one process)."""
    with _lock:
        _seen.clear()
        _full.clear()


def enospc(path: str | None = None) -> OSError:
    """The OSError a write to a full file system raises."""
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def sqlite_full() -> sqlite3.OperationalError:
    """A genuine SQLITE_FULL error, made by SQLite itself (a page limit on a scratch
    database), so its code and text are what a full disk gives."""
    import sqlite3

    scratch = sqlite3.connect(":memory:")
    try:
        scratch.execute("PRAGMA max_page_count = 1")
        scratch.execute("CREATE TABLE a (x)")
        scratch.execute("CREATE TABLE b (x)")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        scratch.close()
    raise AssertionError("SQLite did not report a full database")  # pragma: no cover


def sqlite_step(label: str) -> None:
    """A SQLite step: raise SQLITE_FULL when the disk is (or becomes) full here."""
    if step(f"sqlite {label}") is not None:
        raise sqlite_full()
