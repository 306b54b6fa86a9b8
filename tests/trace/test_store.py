"""The plane's file: migrations, a foreign file replaced, never committed; the read API."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from memhtml.trace.records import TEXT_LIMIT
from memhtml.trace.scan import ScanReport
from memhtml.trace.store import TraceStore, plane_path
from memhtml.trace.synth import SynthSession


def test_a_new_plane_is_migrated_and_ignored_by_git(tmp_path: Path) -> None:
    path = plane_path(tmp_path)
    with TraceStore.open(path) as store:
        tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
        assert {"traces", "turns", "turns_fts", "sessions", "trace_problems"} <= tables
        ledger = [r[0] for r in store.conn.execute("SELECT name FROM schema_migrations")]
        assert ledger == ["T0001_traces.sql", "T0002_redacted.sql"]
        assert store.reset is None
    assert (path.parent / ".gitignore").read_text().splitlines()[-1] == "*"
    with TraceStore.open(path) as again:  # re-opening applies nothing twice
        assert again.conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == 2


def test_a_foreign_or_newer_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "traces.db"
    path.write_bytes(b"not a database at all" * 100)
    with TraceStore.open(path) as store:
        assert store.reset and "SQLite" in store.reset
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO schema_migrations VALUES ('T9999_future.sql', 'x')")
    raw.commit()
    raw.close()
    with TraceStore.open(path) as store:
        assert store.reset and "not this build's" in store.reset
        assert store.counts()["sessions"] == 0
    assert TraceStore.open_existing(tmp_path / "none.db") is None


def test_sessions_turns_and_full_text(
    sessions: list[SynthSession], plane: TraceStore, rescan: Callable[..., ScanReport]
) -> None:
    rescan()
    listed = plane.sessions()
    assert [s["file_mtime"] for s in listed] == sorted(
        (s["file_mtime"] for s in listed), reverse=True
    )
    first = listed[0]
    assert {"file_path", "file_size", "file_mtime", "turn_count", "prompt_count"} <= set(first)
    assert plane.sessions(min_bytes=10**9) == []
    assert plane.sessions(modified_before="2000-01-01T00:00:00Z") == []
    side = next(s for s in sessions if s.sidecars)
    turns = plane.turns(side.session_id)
    paths = [t["file_path"] for t in turns]
    assert paths[0] == str(side.path) and paths[-1] == str(side.sidecars[0])
    assert [t["line_no"] for t in turns if t["file_path"] == paths[0]] == sorted(
        t["line_no"] for t in turns if t["file_path"] == paths[0]
    )
    assert all(not t["sidechain"] for t in plane.turns(side.session_id, sidechains=False))
    assert {t["role"] for t in plane.turns(side.session_id, roles=["user"])} == {"user"}
    files = plane.session_files(side.session_id)
    assert [f["kind"] for f in files] == ["session", "subagent"]


def test_full_text_re_reads_a_capped_turn(
    projects: Path, plane: TraceStore, rescan: Callable[..., ScanReport]
):
    long = "quotable " * (TEXT_LIMIT // 4)
    folder = projects / "-long"
    folder.mkdir()
    record = {
        "type": "assistant",
        "uuid": "u",
        "message": {"content": [{"type": "text", "text": long}]},
    }
    (folder / "s-long.jsonl").write_text(json.dumps(record) + "\n")
    rescan()
    (turn,) = plane.turns("s-long")
    assert len(turn["text"]) == TEXT_LIMIT and turn["text_chars"] == len(long)
    assert plane.full_text(turn) == long
    (folder / "s-long.jsonl").write_text(
        json.dumps({**record, "message": {"content": "other"}}) + "\n"
    )
    assert plane.full_text(turn) == turn["text"]  # the transcript moved on: the stored head
