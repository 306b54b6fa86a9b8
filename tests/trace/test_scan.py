"""Indexing passes: appended bytes only, whole re-reads, a projection, and bad input reported."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from memhtml.trace.scan import ScanReport, scan
from memhtml.trace.store import TraceStore
from memhtml.trace.synth import SynthSession, append_exchanges, append_partial_line, write_corpus
from tests.privileges import bound_by_file_modes
from tests.trace.conftest import NOW, rows

Rescan = Callable[..., ScanReport]


def test_first_pass_reads_everything(
    sessions: list[SynthSession], plane: TraceStore, rescan: Rescan
):
    report = rescan().to_data()
    sizes = [s.path.stat().st_size for s in sessions] + [
        p.stat().st_size for s in sessions for p in s.sidecars
    ]
    assert report["files_seen"] == len(sizes) and report["rescanned"] == len(sizes)
    assert report["rescan_reasons"] == {"new": len(sizes)}
    assert report["bytes_read"] == sum(sizes)
    assert report["problem_counts"] == {} and report["failed"] == 0
    assert report["lines"]["unknown_type"] >= 1 and report["lines"]["skipped_type"] >= 1
    counts = plane.counts()
    assert counts["sessions"] == len(sessions) and counts["pending_bytes"] == 0
    assert any(s.sidecars for s in sessions)  # the corpus has subagent sidecars
    with_sidecar = next(s for s in sessions if s.sidecars)
    row = plane.session(with_sidecar.session_id)
    assert row is not None and row["files"] == 2 and row["agent_count"] >= 1
    assert row["sidechain_turns"] > 0 and row["file_path"] == str(with_sidecar.path)


def test_an_unchanged_pass_reads_nothing(sessions: list[SynthSession], rescan: Rescan) -> None:
    rescan()
    again = rescan().to_data()
    assert again["skipped"] == again["files_seen"] and again["bytes_read"] == 0
    assert again["sessions_written"] == 0


def test_appending_turns_reads_only_the_new_bytes(
    sessions: list[SynthSession], plane: TraceStore, rescan: Rescan
) -> None:
    rescan()
    target = sessions[2]
    before = target.path.stat().st_size
    appended = append_exchanges(target, exchanges=2, seed=5, phrase="violet lighthouse")
    report = rescan().to_data()
    assert report["tailed"] == 1 and report["rescanned"] == 0
    assert report["bytes_read"] == report["appended_bytes"] == appended
    assert report["skipped"] == report["files_seen"] - 1
    assert target.path.stat().st_size == before + appended
    hits = [t for t in plane.turns(target.session_id) if "violet lighthouse" in t["text"]]
    assert len(hits) == 1 and hits[0]["byte_at"] >= before


def test_truncating_a_file_re_reads_it_whole(
    sessions: list[SynthSession], plane: TraceStore, rescan: Rescan
):
    rescan()
    target = sessions[1].path
    data = target.read_bytes()
    cut = data[: data.index(b"\n", len(data) // 2) + 1]
    target.write_bytes(cut)
    report = rescan().to_data()
    assert report["rescanned"] == 1 and report["rescan_reasons"] == {"truncated": 1}
    assert report["bytes_read"] == len(cut)
    assert plane.files()[str(target)].byte_off == len(cut)


def test_a_file_rewritten_and_grown_is_re_read_whole(
    sessions: list[SynthSession], plane: TraceStore, rescan: Rescan
) -> None:
    rescan()
    target = sessions[3].path
    data = target.read_bytes()
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[1]
    changed = data[: -len(last) - 1] + last.replace(b'"uuid":"', b'"uuid":"X') + b"\n" * 3
    st = target.stat()
    target.write_bytes(changed)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    report = rescan().to_data()
    assert report["rescan_reasons"] == {"rewritten": 1} and report["tailed"] == 0
    assert report["bytes_read"] == len(changed)


def test_deleting_the_plane_and_re_indexing_gives_the_same_rows(
    sessions: list[SynthSession], plane: TraceStore, projects: Path, tmp_path: Path
) -> None:
    """Grown in steps (tails, a cut line finished later) equals one fresh pass."""
    scan(plane, projects, now=NOW)
    for i, s in enumerate(sessions[:3]):
        append_exchanges(s, exchanges=1, seed=10 + i)
    rest = append_partial_line(sessions[4].path)
    scan(plane, projects, now=NOW)
    with sessions[4].path.open("ab") as fh:
        fh.write(rest)
    append_exchanges(sessions[0], exchanges=1, seed=99)
    last = scan(plane, projects, now=NOW).to_data()
    assert last["tailed"] == 2
    fresh_path = tmp_path / "fresh" / "traces.db"
    with TraceStore.open(fresh_path) as fresh:
        scan(fresh, projects, now="2030-01-01T00:00:00Z")
        assert rows(fresh) == rows(plane)
        assert fresh.counts() == plane.counts()


def test_an_unfinished_last_line_waits_and_is_reported(
    sessions: list[SynthSession], plane: TraceStore, rescan: Rescan
) -> None:
    rescan()
    target = sessions[0]
    turns_before = len(plane.turns(target.session_id))
    rest = append_partial_line(target.path)
    report = rescan().to_data()
    assert report["problem_counts"] == {"incomplete_last_line": 1}
    assert report["problems"][0]["file"] == str(target.path)
    assert len(plane.turns(target.session_id)) == turns_before
    assert plane.counts()["pending_bytes"] > 0
    assert rescan().to_data()["problem_counts"] == {"incomplete_last_line": 1}  # still waiting
    with target.path.open("ab") as fh:
        fh.write(rest)
    done = rescan().to_data()
    assert done["problem_counts"] == {} and done["tailed"] == 1
    texts = [
        t["text"] for t in plane.turns(target.session_id) if t["file_path"] == str(target.path)
    ]
    assert texts[-1] == "a line the writer had not finished"


def test_invalid_lines_are_skipped_with_their_reasons(
    projects: Path, plane: TraceStore, rescan: Rescan
):
    folder = projects / "-bad"
    folder.mkdir()
    good = (
        b'{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z",'
        b'"message":{"content":"kept line"}}\n'
    )
    (folder / "s-bad.jsonl").write_bytes(
        good
        + b"{this is not json\n"
        + b'{"type":"user","message":{"content":"caf\xe9"}}\n'
        + b"42\n"
        + b'{"type":"user","uuid":"u2","message":{"content":"also kept"}}\n'
    )
    report = rescan(max_line=1 << 20).to_data()
    assert report["problem_counts"] == {"invalid_json": 1, "invalid_utf8": 1, "not_an_object": 1}
    assert [p["line_no"] for p in report["problems"]] == [1, 2, 3]
    assert [t["text"] for t in plane.turns("s-bad")] == ["kept line", "also kept"]
    assert [p["reason"] for p in plane.problems()] == [
        "invalid_json",
        "invalid_utf8",
        "not_an_object",
    ]
    assert plane.files()[str(folder / "s-bad.jsonl")].dropped == 3


def test_an_oversized_line_is_skipped(projects: Path, plane: TraceStore, rescan: Rescan) -> None:
    folder = projects / "-big"
    folder.mkdir()
    line = b'{"type":"user","message":{"content":"' + b"y" * 5000 + b'"}}\n'
    (folder / "s-big.jsonl").write_bytes(line + b'{"type":"user","message":{"content":"small"}}\n')
    report = rescan(max_line=1000, chunk=512).to_data()
    assert report["problem_counts"] == {"line_too_long": 1}
    assert [t["text"] for t in plane.turns("s-big")] == ["small"]


def test_a_file_that_vanishes_mid_pass_is_reported_and_forgotten(
    sessions: list[SynthSession],
    plane: TraceStore,
    rescan: Rescan,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Listed, then gone before its read: reported, and its rows forgotten."""
    import memhtml.trace.scan as scan_module

    rescan()
    victim = next(s for s in sessions if not s.sidecars)
    append_exchanges(victim, exchanges=1)
    real = scan_module.discover

    def listing_then_delete(root: Path):  # type: ignore[no-untyped-def]
        listed = real(root)
        victim.path.unlink()
        return listed

    monkeypatch.setattr(scan_module, "discover", listing_then_delete)
    report = rescan().to_data()
    assert report["problem_counts"] == {"vanished": 1} and report["failed"] == 1
    assert report["problems"][0]["file"] == str(victim.path)
    assert plane.session(victim.session_id) is None
    assert str(victim.path) not in plane.files()
    assert report["removed"] == 0


def test_a_removed_file_is_forgotten(
    sessions: list[SynthSession], plane: TraceStore, rescan: Rescan
):
    rescan()
    gone = next(s for s in sessions if not s.sidecars)
    gone.path.unlink()
    report = rescan().to_data()
    assert report["removed"] == 1 and report["failed"] == 0
    assert plane.session(gone.session_id) is None and plane.turns(gone.session_id) == []


def test_a_missing_root_is_reported_and_forgets_nothing(
    sessions: list[SynthSession], plane: TraceStore, projects: Path, tmp_path: Path
) -> None:
    scan(plane, projects, now=NOW)
    before = plane.counts()
    report = scan(plane, tmp_path / "no-such-root", now=NOW).to_data()
    assert report["root_exists"] is False and report["problem_counts"] == {"root_missing": 1}
    assert plane.counts() == before


def test_an_unreadable_file_keeps_its_rows(
    sessions: list[SynthSession], plane: TraceStore, projects: Path, rescan: Rescan
):
    rescan()
    target = sessions[0].path
    append_exchanges(sessions[0], exchanges=1)
    target.chmod(0)

    def a_pass_on_its_own_connection() -> dict:
        with TraceStore.open(plane.path) as own:
            return scan(own, projects, now=NOW).to_data()

    try:
        report = bound_by_file_modes(a_pass_on_its_own_connection)
    finally:
        target.chmod(0o644)
    assert report["problem_counts"] == {"unreadable": 1}
    assert plane.session(sessions[0].session_id) is not None


def test_a_bigger_corpus_in_small_chunks(tmp_path: Path) -> None:
    projects = tmp_path / "p"
    made = write_corpus(projects, sessions=3, seed=3, session_bytes=30_000)
    with TraceStore.open(tmp_path / "t.db") as a, TraceStore.open(tmp_path / "u.db") as b:
        scan(a, projects, now=NOW, chunk=97)
        scan(b, projects, now=NOW)
        assert rows(a) == rows(b)
        assert {s.session_id for s in made} == {r["session_id"] for r in b.sessions()}


def test_a_pass_killed_mid_file_leaves_whole_files_and_the_next_pass_finishes(
    sessions: list[SynthSession],
    plane: TraceStore,
    projects: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = {"n": 0}
    real = TraceStore.add_turns

    def dies_on_the_third_batch(self: TraceStore, *args: object, **kw: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        real(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(TraceStore, "add_turns", dies_on_the_third_batch)
    with pytest.raises(KeyboardInterrupt):
        scan(plane, projects, now=NOW)
    assert not plane.conn.in_transaction
    done = plane.files()
    assert len(done) == 2  # two files landed whole, the third rolled back
    for path, row in done.items():
        assert row.byte_off == Path(path).stat().st_size
    monkeypatch.setattr(TraceStore, "add_turns", real)
    scan(plane, projects, now=NOW)
    with TraceStore.open(tmp_path / "fresh.db") as fresh:
        scan(fresh, projects, now=NOW)
        assert rows(fresh) == rows(plane)
