"""Where transcripts are: the directory layout read under the transcript root.

    <projects>/<slug>/<session-id>.jsonl                              a session
    <projects>/<slug>/<session-id>/subagents/agent-<agent-id>.jsonl   a subagent's sidechain

`<projects>` is `<root>/projects` when the root has that folder (the original
memhtml's root is `~/.claude`), else the root itself (`~/.claude/projects`),
so either spelling of MEMHTML_TRACE_ROOT finds the same files. Each child
folder of `<projects>` is a slug (the agent's working directory, path
separators turned into dashes); files elsewhere are not transcripts. A folder
that cannot be listed is reported, never fatal; a file that vanishes between
the listing and its stat is simply not there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

PROJECTS_DIR: Final = "projects"
SUBAGENTS_DIR: Final = "subagents"
SUFFIX: Final = ".jsonl"
AGENT_PREFIX: Final = "agent-"


@dataclass(frozen=True, slots=True)
class TraceFile:
    """One transcript file and its stat at discovery."""

    path: Path
    session_id: str
    kind: str  # "session" or "subagent"
    agent_id: str | None
    slug: str
    size: int
    mtime_ns: int


def projects_dir(root: Path) -> Path:
    """The folder whose children are slugs (see the module docstring)."""
    nested = root / PROJECTS_DIR
    return nested if nested.is_dir() else root


def _entries(folder: Path, problems: list[tuple[str, str]]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        problems.append((str(folder), f"unreadable: {exc.strerror or exc}"))
        return []


def _stat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        if not entry.is_file():
            return None
        return entry.stat()
    except OSError:  # vanished between the listing and the stat, or unreadable
        return None


def discover(root: Path) -> tuple[list[TraceFile], list[tuple[str, str]]]:
    """Every transcript under `root` in path order, and the folders that could not be listed."""
    problems: list[tuple[str, str]] = []
    files: list[TraceFile] = []
    for slug_entry in _entries(projects_dir(root), problems):
        if not _is_dir(slug_entry):
            continue
        slug = slug_entry.name
        for entry in _entries(Path(slug_entry.path), problems):
            if entry.name.endswith(SUFFIX) and len(entry.name) > len(SUFFIX):
                st = _stat(entry)
                if st is not None:
                    session_id = entry.name[: -len(SUFFIX)]
                    files.append(
                        TraceFile(Path(entry.path), session_id, "session", None, slug, *_size(st))
                    )
            elif _is_dir(entry):
                files += _sidecars(Path(entry.path), entry.name, slug, problems)
    files.sort(key=lambda f: str(f.path))
    return files, problems


def _sidecars(
    folder: Path, session_id: str, slug: str, problems: list[tuple[str, str]]
) -> list[TraceFile]:
    sub = folder / SUBAGENTS_DIR
    if not sub.is_dir():
        return []
    out = []
    for entry in _entries(sub, problems):
        name = entry.name
        if not (name.startswith(AGENT_PREFIX) and name.endswith(SUFFIX)):
            continue
        agent_id = name[len(AGENT_PREFIX) : -len(SUFFIX)]
        st = _stat(entry) if agent_id else None
        if st is not None:
            out.append(
                TraceFile(Path(entry.path), session_id, "subagent", agent_id, slug, *_size(st))
            )
    return out


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _size(st: os.stat_result) -> tuple[int, int]:
    return st.st_size, st.st_mtime_ns
