"""Resource readings of a process from /proc (Linux): RSS, its peak, children, command line.

The bounds tests assert on what a process held, never on how long it took:
the peak RSS (VmHWM) is reset through /proc/<pid>/clear_refs before the run
and read after it, so it measures that run alone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest


def status_mb(pid: int, field: str) -> float:
    """A /proc/<pid>/status size field (VmRSS, VmHWM, ...) in MiB."""
    text = Path(f"/proc/{pid}/status").read_text()
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    assert found is not None, f"no {field} in /proc/{pid}/status"
    return int(found.group(1)) / 1024


def reset_peak(pid: int) -> None:
    """Reset the process's peak RSS to its current RSS (skips where the kernel will not)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError as exc:
        pytest.skip(f"cannot reset the peak RSS of {pid}: {exc}")


def children(pid: int) -> list[int]:
    """The process's children (every thread's)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Children, grandchildren, ..."""
    out: list[int] = []
    todo = children(pid)
    while todo:
        child = todo.pop()
        out.append(child)
        try:
            todo += children(child)
        except OSError:
            continue
    return out


def cmdline(pid: int) -> str:
    """The command line, arguments joined by spaces ("" once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\x00", b" ").decode()
    except OSError:
        return ""


def find_descendant(needle: str, pid: int | None = None) -> int | None:
    """The first descendant of `pid` (default this process) whose command line holds `needle`."""
    for child in descendants(os.getpid() if pid is None else pid):
        if needle in cmdline(child):
            return child
    return None
