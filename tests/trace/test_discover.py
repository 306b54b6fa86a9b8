"""The directory layout read under the transcript root."""

from __future__ import annotations

from pathlib import Path

from memhtml.trace.discover import discover, projects_dir
from tests.privileges import bound_by_file_modes


def _touch(path: Path, data: bytes = b"{}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_sessions_and_subagent_sidecars(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    main = _touch(root / "-home-a" / "s1.jsonl")
    side = _touch(root / "-home-a" / "s1" / "subagents" / "agent-x9.jsonl")
    _touch(root / "-home-a" / "s1" / "subagents" / "agent-x9.meta.json")
    _touch(root / "-home-a" / "notes.txt")
    _touch(root / "stray.jsonl")  # not inside a slug folder: not a transcript
    _touch(root / "-home-a" / ".jsonl")
    files, problems = discover(root)
    assert problems == []
    assert [(f.path, f.session_id, f.kind, f.agent_id, f.slug) for f in files] == [
        (main, "s1", "session", None, "-home-a"),
        (side, "s1", "subagent", "x9", "-home-a"),
    ]
    assert files[0].size == 3 and files[0].mtime_ns == main.stat().st_mtime_ns


def test_the_originals_root_and_its_projects_folder_read_the_same(tmp_path: Path) -> None:
    _touch(tmp_path / ".claude" / "projects" / "-p" / "s.jsonl")
    assert projects_dir(tmp_path / ".claude") == tmp_path / ".claude" / "projects"
    assert discover(tmp_path / ".claude")[0] == discover(tmp_path / ".claude" / "projects")[0]


def test_a_missing_root_is_empty(tmp_path: Path) -> None:
    assert discover(tmp_path / "nowhere") == ([], [])


def test_an_unreadable_folder_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    _touch(root / "-a" / "s.jsonl")
    locked = root / "-b"
    _touch(locked / "t.jsonl")
    locked.chmod(0)
    try:
        files, problems = bound_by_file_modes(lambda: discover(root))
    finally:
        locked.chmod(0o755)
    assert [f.session_id for f in files] == ["s"]
    assert problems and problems[0][0] == str(locked)
