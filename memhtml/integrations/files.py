"""Disk primitives for editing a host's files: read, atomic write, snapshot, restore, refuse links.

Every write goes to a temporary sibling and lands with `rename` (a host
reading its config mid-install sees the old file or the new one, never half
of one), keeps the file's permission bits, and creates only the folders it
records (so an uninstall can take exactly those away again). A failure names
the path in plain words as `ERR_STORAGE`; "absent" and "unreadable" are
never confused.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from memhtml.contracts.errors import StorageError

MODE_BITS = 0o7777


def sha256(text: str) -> str:
    """Hex SHA-256 of `text` as UTF-8: every claim a receipt makes is this."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _storage(path: Path, exc: OSError, doing: str) -> StorageError:
    reason = exc.strerror or type(exc).__name__
    return StorageError(
        f"could not {doing} {path}: {reason}",
        suggestions=[f"check the permissions of {path.parent}", "memhtml integrations list"],
        details={"path": str(path), "errno": exc.errno},
    )


def read_text(path: Path) -> str | None:
    """The file's text, or None when nothing is there (a missing parent counts as missing)."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except UnicodeDecodeError as exc:
        raise StorageError(
            f"{path} is not UTF-8 text; memhtml edits only text files",
            details={"path": str(path)},
        ) from exc
    except OSError as exc:
        raise _storage(path, exc, "read") from exc


def mode_of(path: Path) -> int | None:
    """The permission bits of an existing file, or None."""
    try:
        return stat.S_IMODE(path.stat().st_mode) & MODE_BITS
    except OSError:
        return None


def missing_dirs(path: Path) -> list[Path]:
    """The ancestors of `path` that do not exist yet, outermost first."""
    out: list[Path] = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        parent = parent.parent
    return list(reversed(out))


def write_atomic(path: Path, text: str, mode: int | None = None) -> None:
    """Write `text` to `path` through a temporary sibling and a rename; parents are created.

    With `mode` None an existing file keeps its bits; a new one gets 0644 less the umask.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        keep = mode if mode is not None else mode_of(path)
        tmp = path.with_name(f".{path.name}.memhtml-{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if keep is None else keep)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(text.encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            if keep is None:
                umask = os.umask(0)
                os.umask(umask)
                keep = 0o644 & ~umask
            os.chmod(tmp, keep)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise _storage(path, exc, "write") from exc


def remove_file(path: Path) -> None:
    """Delete `path`; absent is fine."""
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise _storage(path, exc, "remove") from exc


def remove_empty_dirs(dirs: list[Path]) -> None:
    """Remove each folder that is empty now, deepest first; anything else stays."""
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                raise _storage(d, exc, "remove the folder") from exc


class Snapshot(NamedTuple):
    """A file's bytes and bits before a change, or the fact that it did not exist."""

    path: Path
    text: str | None
    mode: int | None


def snapshot(path: Path) -> Snapshot:
    """What `restore` needs to put `path` back."""
    return Snapshot(path, read_text(path), mode_of(path))


def restore(snap: Snapshot) -> None:
    """Put a file back as `snapshot` found it (absent: removed). Never raises."""
    try:
        if snap.text is None:
            snap.path.unlink(missing_ok=True)
        else:
            write_atomic(snap.path, snap.text, snap.mode)
    except Exception:  # the rollback runs while something already failed: report that one
        pass


def refuse_links(path: Path, root: Path) -> None:
    """Refuse to write through a symbolic link anywhere below `root` on the way to `path`.

    An installer that follows a link writes somewhere the user never named (a
    `~/.claude` linked into a dotfiles checkout). `root` itself may be a link.
    """
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = None
    if rel is None:
        return
    current = root
    for part in rel.parts:
        current = current / part
        try:
            st = current.lstat()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _storage(current, exc, "inspect") from exc
        if stat.S_ISLNK(st.st_mode):
            raise StorageError(
                f"{current} is a symbolic link; memhtml does not write through links"
                f" (it would edit {os.path.realpath(current)})",
                suggestions=[
                    "replace the link with the file it points to, or edit that file by hand",
                    "install at the other scope (--project, or without it)",
                ],
                details={"path": str(current), "target": os.path.realpath(current)},
            )
