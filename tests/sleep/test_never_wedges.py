"""A night never wedges (issue 29, items 1 and 4a): usage follows the night's moves through the
ledger, a fault in the run index fails phases instead of the run, a half copy is copied again,
and doctor reports a run that is stuck."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.sleep import engine, runs
from memhtml.sleep.health import doctor
from memhtml.sleep.merge import merge
from memhtml.sleep.phase import PhaseOutcome, SleepContext

from .engine_helpers import DATE, git, registry, seed, stamp, state_rows
from .test_engine_merge import passing_fixture_gate

FLAKY = "areas/inbox/flaky-test-in-checkout.html"


def _cli(root: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *argv, "--repo", str(root), "--dense"],
        capture_output=True,
        text=True,
        # One instant for every write, as two writes in one second have: the survivor of a
        # fold is the older copy, then the first path (so the read one folds, as in the issue).
        env={
            **os.environ,
            "MEMHTML_EMBED": "fake",
            "MEMHTML_LLM": "off",
            "MEMHTML_NOW": "2026-03-01T10:00:00Z",
        },
        check=False,
    )
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _access(conn: sqlite3.Connection) -> dict[str, int]:
    return {str(p): int(n) for p, n in conn.execute("SELECT path, access_count FROM state.access")}


def _state_file_rows(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(str(path))
    try:
        return {str(p): int(n) for p, n in conn.execute("SELECT path, access_count FROM access")}
    finally:
        conn.close()


def test_the_issue_repro_a_read_memory_folded_by_dedup_merge(repo: Path) -> None:
    """The lead's repro on 7a6261e: `sleep run` was ERR_STORAGE ("attempt to write a readonly
    database") in dedup-merge, forever, while doctor said healthy."""
    for argv in (
        (
            "write",
            *("--type", "semantic", "--title", "Flaky test in checkout"),
            *("--claim", "test_checkout_total fails when the clock crosses midnight UTC."),
            *("--body", "Pin the clock with freezegun."),
        ),
        (
            "write",
            *("--type", "semantic", "--title", "Checkout test flaky at midnight"),
            "--claim",
            "test_checkout_total fails when the clock crosses midnight UTC;"
            " pin the clock with freezegun.",
        ),
        ("read", FLAKY),
    ):
        code, _ = _cli(repo, *argv)
        assert code == 0
    before = _state_file_rows(repo / ".memhtml" / "state.db")
    assert before == {FLAKY: 1}
    code, night = _cli(repo, "sleep", "run")
    assert code == 0, night
    data = night["data"]
    assert data["failed_phases"] == [] and data["status"] == "review"
    dedup = next(p for p in data["phases"] if p["phase"] == "dedup-merge")
    assert dedup["counts"]["merged"] == 1
    # Nothing of the run reached main's state plane; the run's own copy followed the fold.
    assert _state_file_rows(repo / ".memhtml" / "state.db") == before
    copy = _state_file_rows(runs.scratch_dir(repo, data["run_id"]) / "state.db")
    moved = [p for p in copy if p.startswith("archive/")]
    assert len(moved) == 1 and FLAKY not in copy
    ledger = git(repo, "show", f"{data['head_sha']}:.memhtml/sleep/{data['run_id']}.pending.jsonl")
    assert json.loads(ledger.splitlines()[0]) | {} == {
        "kind": "usage-move",
        "src": FLAKY,
        "dst": moved[0],
        "phase": "dedup-merge",
        "run": data["run_id"],
    }
    code, merged = _cli(repo, "sleep", "merge", data["run_id"], "--skip-gate")
    assert code == 0, merged
    assert merged["data"]["marks_applied"] == 1
    assert _state_file_rows(repo / ".memhtml" / "state.db") == {moved[0]: 1}
    code, health = _cli(repo, "doctor")
    assert health["data"]["orphan_access_rows"] == [] and health["data"]["sleep_runs"] == []


def _seeded_with_usage(corpus: Any) -> dict[str, str]:
    paths = seed(corpus)
    corpus.read(paths["c"])
    corpus.reinforce([paths["d"]], "positive")
    return paths


def test_a_move_git_cannot_see_as_a_rename_still_carries_its_usage(corpus: Any) -> None:
    """The indexer moves usage on the renames git detects; the mark covers the rest."""
    paths = _seeded_with_usage(corpus)
    new_path = "resources/caching/retention-window.html"

    def rewrite_and_move(ctx: SleepContext) -> PhaseOutcome:
        from memhtml.html import NewMemory, render_document

        text, _ = render_document(
            NewMemory(
                title="Retention window",
                memory_type="semantic",
                created=ctx.at,
                updated=ctx.at,
                claim="Cached rows expire after twenty-four hours unless pinned by an operator.",
            )
        )
        ctx.view.move(paths["d"], new_path, text.encode())
        return PhaseOutcome(counts={"moved": 1})

    main_before = state_rows(corpus.root)
    data = engine.run(
        corpus,
        date=DATE,
        registry=registry(placement_triage=rewrite_and_move),
        deep=True,
        progress=False,
    )
    assert data["failed_phases"] == []
    assert state_rows(corpus.root) == main_before
    diff = git(corpus.root, "diff", "--name-status", "-M", data["base_sha"], data["head_sha"])
    assert f"D\t{paths['d']}" in diff  # git sees a removal and an addition, not a rename
    merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    rows = _access(corpus.conn)
    assert paths["d"] not in rows and rows[new_path] == 1
    assert corpus.conn.execute(
        "SELECT reinforcement_count FROM state.access WHERE path = ?", (new_path,)
    ).fetchone() == (1,)


def test_later_phases_see_usage_where_the_night_moved_it(corpus: Any) -> None:
    paths = _seeded_with_usage(corpus)
    seen: dict[str, Any] = {}

    def look(ctx: SleepContext) -> PhaseOutcome:
        seen.update(_access(ctx.conn))
        return PhaseOutcome()

    from .engine_helpers import archive

    engine.run(
        corpus,
        date=DATE,
        registry=registry(dedup_merge=archive(paths["c"]), integrity=look),
        progress=False,
    )
    assert seen.get(f"archive/2026/{paths['c']}") == 1 and paths["c"] not in seen


def test_a_phase_that_breaks_the_run_index_fails_alone(corpus: Any) -> None:
    paths = seed(corpus)
    seen: dict[str, Any] = {}

    def vandal(ctx: SleepContext) -> PhaseOutcome:
        ctx.conn.execute("DROP TABLE index_state")  # reprojecting its commit must fail
        return stamp(paths["a"])(ctx)

    def look(ctx: SleepContext) -> PhaseOutcome:
        seen["watermark"] = ctx.conn.execute("SELECT head_sha FROM index_state").fetchone()[0]
        seen["tip"] = ctx.view.base.commit if ctx.view.base else None
        return stamp(paths["b"])(ctx)

    data = engine.run(
        corpus,
        date=DATE,
        registry=registry(entity_resolution=vandal, integrity=look),
        progress=False,
    )
    by = {p["phase"]: p for p in data["phases"]}
    assert by["entity-resolution"]["status"] == "failed"
    assert by["entity-resolution"]["commit_sha"] is not None  # its commit landed
    assert by["integrity"]["status"] == "ok" and by["report"]["status"] == "ok"
    assert seen["watermark"] == seen["tip"]  # a fresh copy caught up to the tip
    assert data["failed_phases"] == ["entity-resolution"]


def _hold_repository_lock(root: Path) -> subprocess.Popen[str]:
    code = (
        "import fcntl, sys, time\n"
        f"f = open({str(root / '.git' / 'memhtml.lock')!r}, 'a+')\n"
        "fcntl.flock(f, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_when_no_index_can_follow_the_phases_left_fail_and_resume_finishes(
    corpus: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = seed(corpus)
    monkeypatch.setenv("MEMHTML_LOCK_TIMEOUT", "0.5")
    holder: list[subprocess.Popen[str]] = []

    def vandal(ctx: SleepContext) -> PhaseOutcome:
        ctx.conn.execute("DROP TABLE index_state")
        holder.append(_hold_repository_lock(corpus.root))  # and no fresh copy can be taken
        return stamp(paths["a"])(ctx)

    try:
        data = engine.run(
            corpus,
            date=DATE,
            registry=registry(entity_resolution=vandal, integrity=stamp(paths["b"])),
            progress=False,
        )
    finally:
        for proc in holder:
            proc.communicate("")
    by = {p["phase"]: p for p in data["phases"]}
    assert by["integrity"]["status"] == "failed"
    assert "cannot follow the branch" in by["integrity"]["detail"]
    assert by["report"]["status"] == "ok" and by["report"]["commit_sha"]
    assert data["status"] == "failed"
    # Not wedged: a resume copies the index again and runs what did not run.
    again = engine.resume(
        corpus,
        DATE,
        registry=registry(entity_resolution=vandal, integrity=stamp(paths["b"])),
        progress=False,
    )
    assert {p["phase"]: p["status"] for p in again["phases"]}["integrity"] == "ok"
    stamped = git(corpus.root, "show", f"{again['head_sha']}:{paths['b']}")
    assert "memhtml-confidence" in stamped


def _interrupted(root: Path, run_id: str = DATE) -> None:
    record = runs.load_record(root, run_id)
    assert record is not None
    record.status, record.pid = "running", 999_999_999
    runs.save_record(root, record)


def test_resume_after_a_kill_mid_copy_copies_the_index_again(corpus: Any) -> None:
    """On 7a6261e a kill during the copy left an empty index.db that resume took for the run's
    index and then failed on forever ("no such table: index_state")."""
    paths = seed(corpus)
    data = engine.run(
        corpus, date=DATE, registry=registry(dedup_merge=stamp(paths["a"])), progress=False
    )
    folder = runs.scratch_dir(corpus.root, DATE)
    # What the copy leaves when it is killed before SQLite wrote a page: an empty database.
    for name in ("index.db", "index.db-wal", "index.db-shm", "state.db"):
        (folder / name).unlink(missing_ok=True)
    sqlite3.connect(str(folder / "index.db")).close()
    (folder / "index.db.copying").write_bytes(b"SQLite format 3\x00torn")
    _interrupted(corpus.root)
    resumed = engine.resume(
        corpus, DATE, registry=registry(dedup_merge=stamp(paths["a"])), progress=False
    )
    assert resumed["status"] == "review" and resumed["failed_phases"] == []
    assert resumed["head_sha"] != data["base_sha"]
    conn = sqlite3.connect(str(folder / "index.db"))
    try:
        assert (
            conn.execute("SELECT head_sha FROM index_state").fetchone()[0] == (resumed["head_sha"])
        )
    finally:
        conn.close()
    assert not (folder / "index.db.copying").exists()


def test_doctor_is_not_healthy_while_a_run_is_stuck(corpus: Any) -> None:
    paths = seed(corpus)
    assert doctor(corpus)["sleep_runs"] == []
    engine.run(corpus, date=DATE, registry=registry(dedup_merge=stamp(paths["a"])), progress=False)
    assert doctor(corpus)["sleep_runs"] == []  # waiting for review is not stuck
    _interrupted(corpus.root)
    report = doctor(corpus)
    assert report["healthy"] is False
    stuck = report["sleep_runs"]
    assert [(s["run_id"], s["status"]) for s in stuck] == [(DATE, "interrupted")]
    assert f"memhtml sleep resume {DATE}" in report["suggestions"]

    def boom(_ctx: SleepContext) -> PhaseOutcome:
        raise RuntimeError("the phase fell over")

    engine.resume(corpus, DATE, registry=registry(integrity=boom), progress=False)
    stuck = doctor(corpus)["sleep_runs"]
    assert [(s["status"], s["why"]) for s in stuck] == [("failed", "1 phase(s) failed: integrity")]
    merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    assert doctor(corpus)["sleep_runs"] == []


def test_the_cli_doctor_reports_a_stuck_run(repo: Path) -> None:
    with memhtml.open(repo, embedder="fake") as corpus:
        paths = seed(corpus)
        engine.run(
            corpus, date=DATE, registry=registry(dedup_merge=stamp(paths["a"])), progress=False
        )
    _interrupted(repo)
    code, envelope = _cli(repo, "doctor")
    assert code == 0
    assert envelope["data"]["healthy"] is False
    assert envelope["data"]["sleep_runs"][0]["status"] == "interrupted"
