"""Fixtures for the trace plane: synthetic transcripts in a real folder, a real SQLite plane."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memhtml.trace.scan import ScanReport, scan
from memhtml.trace.store import TraceStore
from memhtml.trace.synth import SynthSession, write_corpus

NOW = "2026-03-01T00:00:00Z"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """A folder shaped like ~/.claude/projects (empty)."""
    root = tmp_path / "claude" / "projects"
    root.mkdir(parents=True)
    return root


@pytest.fixture
def sessions(projects: Path) -> list[SynthSession]:
    """Six synthetic sessions, two with subagent sidecars or inline sidechains."""
    return write_corpus(projects, sessions=6, seed=7, session_bytes=12_000)


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[TraceStore]:
    """A trace plane in a memory root's side folder."""
    store = TraceStore.open(tmp_path / "memory" / ".memhtml" / "traces" / "traces.db")
    yield store
    store.close()


@pytest.fixture
def rescan(plane: TraceStore, projects: Path) -> Callable[..., ScanReport]:
    """Run one pass over `projects` into `plane`."""

    def run(**options: Any) -> ScanReport:
        return scan(plane, projects, now=NOW, **options)

    return run


def rows(store: TraceStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every projected row, keyed by table, without surrogate ids and scan clocks."""
    c = store.conn
    turn_cols = [r[1] for r in c.execute("PRAGMA table_info(turns)") if r[1] != "id"]
    file_cols = [r[1] for r in c.execute("PRAGMA table_info(traces)") if r[1] != "scanned_at"]
    return {
        "traces": c.execute(f"SELECT {', '.join(file_cols)} FROM traces ORDER BY 1").fetchall(),
        "turns": c.execute(
            f"SELECT {', '.join(turn_cols)} FROM turns ORDER BY file_path, line_no"
        ).fetchall(),
        "sessions": c.execute("SELECT * FROM sessions ORDER BY session_id").fetchall(),
        "problems": c.execute("SELECT * FROM trace_problems ORDER BY 1, 2").fetchall(),
        "fts": c.execute(
            "SELECT t.file_path, t.line_no FROM turns_fts f JOIN turns t ON t.id = f.rowid"
            " WHERE turns_fts MATCH 'the' ORDER BY 1, 2"
        ).fetchall(),
    }
