"""Recovering from a write door that was killed midway, and from stale git locks.

A write door writes its files first and commits them second. A process killed
between the two (SIGKILL, a closed terminal, an OOM kill) never acknowledged
the write, so the right outcome is the tree as it was: the leftovers must not
stay behind as untracked files that a later index pass would index and a later
dedup would mistake for committed memories.

Before touching the tree the door records a *journal* (`.git/memhtml-batch.json`):
the parent commit and, for every path it will touch, the blob id of the bytes
it intends to leave there (null for a removal). The journal is removed once the
commit landed or the tree was restored. Whoever takes the repository lock next
and finds a journal settles it path by path:

* the working tree matches HEAD: the commit landed (or nothing was written) —
  nothing to do;
* the working tree holds exactly what the batch meant to write, and HEAD does
  not: an uncommitted leftover — put HEAD's bytes back (or remove the file);
* anything else: someone edited the file since — left alone and reported.

The write doors require every pre-existing path they touch to be clean, so
"put HEAD's bytes back" never discards anyone's work.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from memhtml.store.files import FileChange, prune_empty_dirs, write_atomic
from memhtml.store.git import Git, blob_sha

JOURNAL_NAME: Final = "memhtml-batch.json"
TEMP_GLOB: Final = ".memhtml-*.tmp"
# Without /proc, a git index lock older than this is taken to be stale.
STALE_LOCK_AGE_S: Final = 600.0


def journal_path(root: Path) -> Path:
    """Where the in-flight batch journal lives (inside .git: never part of the tree)."""
    return root / ".git" / JOURNAL_NAME


def begin(root: Path, parent: str | None, changes: Sequence[FileChange]) -> None:
    """Record the batch about to touch the tree (atomically, before any file is written)."""
    paths: dict[str, str | None] = {}
    for change in changes:
        if change.moved_from is not None:
            paths[change.moved_from] = None
        paths[change.path] = None if change.content is None else blob_sha(change.content)
    record = {"parent": parent, "pid": os.getpid(), "started": time.time(), "paths": paths}
    write_atomic(journal_path(root), json.dumps(record, sort_keys=True).encode())


def end(root: Path) -> None:
    """The batch settled (committed, or the tree restored): forget it."""
    journal_path(root).unlink(missing_ok=True)


def interrupted_batch(root: Path) -> dict[str, Any] | None:
    """The journal of a batch whose writer is gone (a live writer's is not reported)."""
    try:
        record = json.loads(journal_path(root).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"pid": None, "paths": [], "torn": True}
    pid = record.get("pid")
    if isinstance(pid, int) and pid != os.getpid():
        try:
            os.kill(pid, 0)
            return None  # still running: its batch is in flight, not interrupted
        except ProcessLookupError:
            pass
        except PermissionError:
            return None
    return {"pid": pid, "paths": sorted(record.get("paths", {})), "torn": False}


@dataclass
class Recovery:
    """What settling an interrupted batch did."""

    found: bool = False
    rolled_back: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    unsettled: bool = False  # git's index could not be reset: the journal stays

    def to_data(self) -> dict[str, Any]:
        """The report payload."""
        return {
            "interrupted_batch": self.found,
            "rolled_back": self.rolled_back,
            "settled": self.settled,
            "left_alone": self.left,
            "temp_files_removed": self.temp_files,
        }


def recover(git: Git, root: Path, *, keep_journal: bool = False) -> Recovery:
    """Settle an interrupted batch, if any (the caller holds the repository lock).

    With `keep_journal`, a journal whose paths landed is left for the caller to
    `end` once it has indexed and embedded them (a failure meanwhile, a full
    disk, leaves it for the next writer)."""
    report = Recovery()
    journal = journal_path(root)
    try:
        record = json.loads(journal.read_text(encoding="utf-8"))
        paths: dict[str, str | None] = dict(record.get("paths", {}))
    except FileNotFoundError:
        return report
    except (OSError, ValueError, AttributeError):
        paths = {}  # a torn journal: the temp-file sweep below is all that is left to do
    report.found = True
    head = git.head()
    at_head = git.cat_objects(f"{head}:{p}" for p in paths) if head else {}
    for path, intended in sorted(paths.items()):
        target = root / path
        current = blob_sha(target.read_bytes()) if target.is_file() else None
        held = at_head.get(f"{head}:{path}")
        if current == (held[0] if held else None):
            report.settled.append(path)
        elif current == intended:
            if held is None:
                target.unlink(missing_ok=True)
                prune_empty_dirs(root, target.parent)
            else:
                write_atomic(target, held[1])
            report.rolled_back.append(path)
        else:
            report.left.append(path)
    report.temp_files = sweep_temp_files(root, {str(Path(p).parent) for p in paths})
    if paths and head and not git.reset_paths(sorted(paths)):
        # git could not rewrite its index (a full disk): the journal stays, and the
        # next writer resets the paths again.
        report.unsettled = True
        return report
    if not (keep_journal and report.settled):
        journal.unlink(missing_ok=True)
    return report


def sweep_temp_files(root: Path, directories: set[str] | None = None) -> list[str]:
    """Remove `.memhtml-*.tmp` files a killed atomic write left (in `directories`, or all PARA)."""
    from memhtml.contracts.vocab import PARA_BUCKETS

    bases = (
        [root / d for d in sorted(directories)]
        if directories is not None
        else [root / b for b in PARA_BUCKETS]
    )
    removed: list[str] = []
    for base in bases:
        if not base.is_dir():
            continue
        pattern = base.glob(TEMP_GLOB) if directories is not None else base.rglob(TEMP_GLOB)
        for tmp in pattern:
            tmp.unlink(missing_ok=True)
            removed.append(tmp.relative_to(root).as_posix())
    return sorted(removed)


def git_index_lock(root: Path) -> Path:
    """Git's own index lock file."""
    return root / ".git" / "index.lock"


def _live_git_in(root: Path) -> bool:
    """True when a git process is running with its working directory in `root`."""
    proc = Path("/proc")
    real = os.path.realpath(root)
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text().strip()
            if not name.startswith("git"):
                continue
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == real or cwd.startswith(real + os.sep):
            return True
    return False


def stale_git_lock(root: Path) -> Path | None:
    """`.git/index.lock` when it is stale: no git process of this repository is alive.

    Called with memhtml's repository lock held, so no memhtml writer is mid-commit;
    a git index lock with no live git process was left by a killed one.
    """
    lock = git_index_lock(root)
    if not lock.exists():
        return None
    if Path("/proc/self").exists():
        return None if _live_git_in(root) else lock
    try:
        age = time.time() - lock.stat().st_mtime
    except OSError:
        return None
    return lock if age > STALE_LOCK_AGE_S else None


def _ref_locks(root: Path) -> list[Path]:
    """Lock files git leaves beside HEAD and branch refs when it is killed inside
    `update-ref` (a SIGKILL of its process group): present ones only."""
    git_dir = root / ".git"
    found = [p for p in (git_dir / "HEAD.lock", git_dir / "packed-refs.lock") if p.exists()]
    heads = git_dir / "refs" / "heads"
    if heads.is_dir():
        found += sorted(heads.rglob("*.lock"))
    return found


def stale_ref_locks(root: Path) -> list[Path]:
    """Ref lock files no live git process holds (the caller holds the repository lock, as
    for `stale_git_lock`). Left, each one refuses every later commit to its ref."""
    locks = _ref_locks(root)
    if not locks:
        return []
    if Path("/proc/self").exists():
        return [] if _live_git_in(root) else locks
    now = time.time()
    return [p for p in locks if now - p.stat().st_mtime > STALE_LOCK_AGE_S]


def clear_stale_git_lock(root: Path) -> bool:
    """Remove a stale git index lock and stale ref locks; True when one was removed."""
    locks = [lock for lock in (stale_git_lock(root),) if lock is not None]
    locks += stale_ref_locks(root)
    for lock in locks:
        lock.unlink(missing_ok=True)
    return bool(locks)
