"""Landing a set of file changes all together or not at all.

Every target file is snapshotted first; backups (under `--force`) go beside
their files; the files land one by one, each atomically; the receipts last.
Any exception (a read-only folder, a full disk, SIGTERM, Ctrl-C) puts every
snapshot back and takes away every backup and folder this transaction made,
so a failed install cannot be told from one that never ran.

A SIGKILL cannot be caught, so the receipt is written twice: first marked
`pending` (what is about to be written), last as final. A pending receipt
found later is reconciled against the disk (`settle`): a file whose
fragments are all there counts as written, one whose fragments are all
absent as never written, so uninstall and reinstall still know what is ours.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from memhtml.integrations import fragments
from memhtml.integrations.files import (
    Snapshot,
    missing_dirs,
    read_text,
    remove_empty_dirs,
    remove_file,
    restore,
    snapshot,
    write_atomic,
)
from memhtml.integrations.receipt import Receipt, write

PENDING_SUFFIX = ".pending"


class Change(NamedTuple):
    """The new text of a file (None: the file goes)."""

    path: Path
    text: str | None


def backup_path(path: Path, stamp: str) -> Path:
    """Where `--force` keeps a file's prior bytes: beside it, stamped."""
    return path.with_name(f"{path.name}.memhtml-backup-{stamp}")


def stamp_now() -> str:
    """A filename-safe UTC instant."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def dirs_to_create(changes: list[Change], root: Path) -> list[Path]:
    """The folders writing `changes` will create, all below `root`, outermost first."""
    out: list[Path] = []
    for c in changes:
        if c.text is None:
            continue
        for d in missing_dirs(c.path):
            if d not in out and root in d.parents:
                out.append(d)
    return out


def commit(
    changes: list[Change],
    receipts: list[tuple[Path, Receipt | None]],
    *,
    backups: dict[Path, str],
    stamp: str,
    remove_dirs: list[Path],
) -> list[str]:
    """Land `changes` and the receipts (None: remove); the backup paths written."""
    targets = [c.path for c in changes] + [p for p, _ in receipts]
    targets += [p.with_name(p.name + PENDING_SUFFIX) for p, _ in receipts]
    snaps: list[Snapshot] = [snapshot(p) for p in targets]
    written: list[Path] = []
    made: list[Path] = []
    try:
        for path, receipt in receipts:
            if receipt is not None:
                made += [d for d in missing_dirs(path) if d not in made]
                write(path.with_name(path.name + PENDING_SUFFIX), receipt)
        for path, text in sorted(backups.items()):
            target = backup_path(path, stamp)
            write_atomic(target, text)
            written.append(target)
        for c in changes:
            if c.text is None:
                remove_file(c.path)
            else:
                made += [d for d in missing_dirs(c.path) if d not in made]
                write_atomic(c.path, c.text)
        for path, receipt in receipts:
            if receipt is None:
                remove_file(path)
            else:
                write(path, receipt)
            remove_file(path.with_name(path.name + PENDING_SUFFIX))
        remove_empty_dirs(remove_dirs)
    except BaseException:
        for snap in reversed(snaps):
            restore(snap)
        for target in written:
            target.unlink(missing_ok=True)
        with contextlib.suppress(Exception):  # the first failure is the one to report
            remove_empty_dirs(made)
        raise
    return [str(p) for p in written]


def settle(path: Path, load: Callable[[Path], Receipt | None]) -> None:
    """Resolve a pending receipt left by a killed install (see the module docstring).

    `load` reads and validates a receipt file. Files whose new fragments all
    landed are recorded as the pending receipt says; for the others, what the
    earlier final receipt (if any) said about them still holds.
    """
    pending = path.with_name(path.name + PENDING_SUFFIX)
    if read_text(pending) is None:
        return
    new = load(pending)
    old = load(path)
    if new is None:
        remove_file(pending)
        return
    landed = []
    for record in new.files:
        text = read_text(Path(record.path))
        if all(
            fragments.claim(f.kind, text, f.locator, f.value) == f.claim for f in record.fragments
        ):
            landed.append(record)
    paths = {r.path for r in landed}
    earlier = [r for r in (old.files if old else []) if r.path not in paths]
    files = landed + earlier
    if files:
        base = new if landed else old
        assert base is not None
        write(path, base.model_copy(update={"files": files}))
    else:
        remove_file(path)
    remove_file(pending)
