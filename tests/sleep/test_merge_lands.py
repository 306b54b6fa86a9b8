"""`sleep merge` lands in one step (issue 29, item 4): the merge commit is built with plumbing,
the working tree changes under a journal, main moves by one compare-and-swap; whatever stops
it midway leaves main unchanged or fully merged, the tree clean, and the next command settles
the rest."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memhtml.contracts.errors import StorageError
from memhtml.sleep import engine, runs
from memhtml.sleep.health import doctor
from memhtml.sleep.merge import _land, merge, result_commit
from memhtml.sleep.phase import PhaseOutcome, SleepContext
from memhtml.store import recovery
from memhtml.store.files import FileChange, apply_changes
from memhtml.store.land import tree_changes
from tests.index.test_indexer import fresh_rebuild_snapshot, snapshot

from .engine_helpers import DATE, archive, git, registry, seed, stamp, worktree_digest
from .test_engine_merge import passing_fixture_gate


@pytest.fixture
def seeded(corpus: Any) -> dict[str, str]:
    paths = seed(corpus)
    corpus.read(paths["c"])  # usage the night's archive must carry to main at merge
    return paths


def _night(corpus: Any, paths: dict[str, str]) -> dict[str, Any]:
    return engine.run(
        corpus,
        date=DATE,
        registry=registry(confidence_decay=stamp(paths["a"]), retention_triage=archive(paths["c"])),
        progress=False,
    )


def _clean(root: Path) -> None:
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(root, "diff", "--cached", "--name-only") == ""
    assert not (root / ".git" / "MERGE_HEAD").exists()
    assert not recovery.journal_path(root).exists()


def test_main_moved_meanwhile_merges_through_the_driver_in_one_step(
    corpus: Any, seeded: dict[str, str]
) -> None:
    data = _night(corpus, seeded)
    # Meanwhile, on main: a link on the very file the night stamped (a head edit both sides
    # made: the memhtml driver merges it), and a new memory.
    corpus.link(seeded["a"], "relates_to", seeded["d"])
    later = corpus.write(title="Later", type="semantic", claim="Main moved on while sleep ran.")
    head = git(corpus.root, "rev-parse", "HEAD")
    out = merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    root = corpus.root
    assert out["mode"] == "merge" and out["previous_head"] == head
    assert git(root, "rev-parse", "HEAD^1", "HEAD^2").split() == [head, data["head_sha"]]
    text = (root / seeded["a"]).read_text()
    assert "memhtml-confidence" in text and "memhtml-relates-to" in text
    assert (root / later["path"]).is_file() and (root / f"archive/2026/{seeded['c']}").is_file()
    _clean(root)
    assert git(root, "reflog", "-1", "--format=%gs") == f"memhtml(sleep): merge run {DATE}"
    assert corpus.conn.execute(
        "SELECT access_count FROM state.access WHERE path = ?", (f"archive/2026/{seeded['c']}",)
    ).fetchone() == (1,)
    assert snapshot(corpus.conn) == fresh_rebuild_snapshot(root)


def test_a_landing_that_fails_midway_puts_every_byte_back(
    corpus: Any, seeded: dict[str, str]
) -> None:
    data = _night(corpus, seeded)
    corpus.write(title="Later", type="semantic", claim="Main moved on while sleep ran.")
    root = corpus.root
    head, before = git(root, "rev-parse", "HEAD"), worktree_digest(root)
    # An empty folder where the merge must write a file: git does not see it, the write fails
    # after other files of the merge were written.
    blocker = root / f"archive/2026/{seeded['c']}"
    blocker.mkdir(parents=True)
    with pytest.raises(StorageError) as err:
        merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    assert "main unchanged" in err.value.message
    assert git(root, "rev-parse", "HEAD") == head
    assert worktree_digest(root) == before
    _clean(root)
    record = runs.load_record(root, DATE)
    assert record is not None and record.status == "review" and record.merge_commit is None
    blocker.rmdir()
    out = merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    assert out["mode"] == "merge" and git(root, "rev-parse", "HEAD^2") == data["head_sha"]
    _clean(root)


def _landing_changes(corpus: Any, head: str, target: str) -> list[FileChange]:
    diff = tree_changes(corpus.git, head, target)
    blobs = corpus.git.cat_blobs(c.blob for c in diff if c.blob)
    return [FileChange(c.path, blobs[c.blob] if c.blob else None) for c in diff]


def test_a_landing_killed_before_main_moved_is_rolled_back_by_the_next_door(
    corpus: Any, seeded: dict[str, str]
) -> None:
    _night(corpus, seeded)
    corpus.write(title="Later", type="semantic", claim="Main moved on while sleep ran.")
    root = corpus.root
    head, before = git(root, "rev-parse", "HEAD"), worktree_digest(root)
    record, tip = runs.find_run(corpus.git, root, DATE)
    target, mode = result_commit(corpus, record, tip, head)
    assert mode == "merge"
    # What a SIGKILL half way through the landing leaves: the journal, some files written,
    # the record saying `merging`, HEAD where it was.
    changes = _landing_changes(corpus, head, target)
    record.status, record.merge_commit, record.merge_from = "merging", target, head
    record.pid = 999_999_999
    runs.save_record(root, record)
    recovery.begin(root, head, changes)
    apply_changes(root, changes[: len(changes) // 2 + 1])
    assert git(root, "status", "--porcelain") != ""
    assert doctor(corpus)["sleep_runs"][0]["status"] == "merge-interrupted"
    # The next write door settles the tree; main is unchanged but for its own commit.
    written = corpus.write(title="Next", type="semantic", claim="The next writer came along.")
    assert git(root, "rev-parse", "HEAD^") == head
    after = worktree_digest(root)
    del after[written["path"]]
    assert after == before
    _clean(root)
    # The merge record is undone by the next sleep command (doctor --fix here), then it merges.
    report = doctor(corpus, fix=True)
    assert report["repairs"]["sleep"] == [{"run_id": DATE, "outcome": "undone", "marks_applied": 0}]
    assert report["sleep_runs"] == []
    assert merge(corpus, DATE, fixture_gate=passing_fixture_gate)["mode"] == "merge"
    _clean(root)


def test_a_merge_killed_after_main_moved_is_finished_by_doctor_fix(
    corpus: Any, seeded: dict[str, str]
) -> None:
    data = _night(corpus, seeded)
    corpus.write(title="Later", type="semantic", claim="Main moved on while sleep ran.")
    root = corpus.root
    head = git(root, "rev-parse", "HEAD")
    record, tip = runs.find_run(corpus.git, root, DATE)
    target, mode = result_commit(corpus, record, tip, head)
    _land(corpus, record, head, target, mode)  # landed; the process dies before the rest
    record.pid = 999_999_999
    runs.save_record(root, record)
    assert git(root, "rev-parse", "HEAD") == target
    _clean(root)
    assert corpus.conn.execute("SELECT count(*) FROM state.sleep_marks_applied").fetchone() == (0,)
    assert doctor(corpus)["healthy"] is False
    report = doctor(corpus, fix=True)
    assert report["repairs"]["sleep"] == [
        {"run_id": DATE, "outcome": "finished", "marks_applied": 1}
    ]
    assert report["sleep_runs"] == []
    assert corpus.conn.execute(
        "SELECT access_count FROM state.access WHERE path = ?", (f"archive/2026/{seeded['c']}",)
    ).fetchone() == (1,)
    again = merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    assert again["mode"] == "already-merged" and again["marks_applied"] == 0
    assert git(root, "rev-parse", "HEAD^2") == data["head_sha"]
    assert snapshot(corpus.conn) == fresh_rebuild_snapshot(root)


def test_a_fast_forward_keeps_executable_bits_as_the_commit_records_them(
    corpus: Any, seeded: dict[str, str]
) -> None:
    def make_tool(ctx: SleepContext) -> PhaseOutcome:
        ctx.view.write("tools/check.sh", b"#!/bin/sh\necho ok\n")
        return PhaseOutcome(counts={"written": 1})

    data = engine.run(corpus, date=DATE, registry=registry(integrity=make_tool), progress=False)
    # A person marks it executable on the branch by hand.
    where = corpus.root.parent / "hand"
    git(corpus.root, "worktree", "add", "-q", str(where), f"sleep/{DATE}")
    try:
        (where / "tools" / "check.sh").chmod(0o755)
        git(where, "commit", "-qam", "executable")
    finally:
        git(corpus.root, "worktree", "remove", "--force", str(where))
    out = merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    assert out["mode"] == "fast-forward"
    assert (corpus.root / "tools" / "check.sh").stat().st_mode & 0o111
    assert git(corpus.root, "rev-parse", "HEAD") != data["head_sha"]  # the hand commit landed
    _clean(corpus.root)


def test_a_symlink_on_the_branch_is_refused_before_anything_changes(
    corpus: Any, seeded: dict[str, str]
) -> None:
    from memhtml.contracts.errors import GitError

    _night(corpus, seeded)
    where = corpus.root.parent / "hand"
    git(corpus.root, "worktree", "add", "-q", str(where), f"sleep/{DATE}")
    try:
        (where / "link").symlink_to(".git/config")
        git(where, "add", "link")
        git(where, "commit", "-qm", "a link")
    finally:
        git(corpus.root, "worktree", "remove", "--force", str(where))
    before = (git(corpus.root, "rev-parse", "HEAD"), worktree_digest(corpus.root))
    with pytest.raises(GitError) as err:
        merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    assert "link" in err.value.message
    assert (git(corpus.root, "rev-parse", "HEAD"), worktree_digest(corpus.root)) == before
    _clean(corpus.root)
    assert not subprocess.run(
        ["git", "ls-files", "link"], cwd=corpus.root, capture_output=True, text=True, check=True
    ).stdout


def test_a_landing_killed_inside_git_is_settled_lock_and_all(
    corpus: Any, seeded: dict[str, str]
) -> None:
    """A group kill (a terminal, a service manager) stops git too: here after git's index took
    the merge's entries, with git's own index lock left behind."""
    _night(corpus, seeded)
    corpus.write(title="Later", type="semantic", claim="Main moved on while sleep ran.")
    root = corpus.root
    head, before = git(root, "rev-parse", "HEAD"), worktree_digest(root)
    record, tip = runs.find_run(corpus.git, root, DATE)
    target, _ = result_commit(corpus, record, tip, head)
    diff = tree_changes(corpus.git, head, target)
    recovery.begin(root, head, _landing_changes(corpus, head, target))
    apply_changes(root, _landing_changes(corpus, head, target))
    entries = b"".join(
        (f"{c.mode} {c.blob}\t" if c.blob else f"0 {'0' * 40}\t").encode() + c.path.encode() + b"\0"
        for c in diff
    )
    subprocess.run(
        ["git", "update-index", "-z", "--index-info"], cwd=root, input=entries, check=True
    )
    (root / ".git" / "index.lock").write_bytes(b"")
    written = corpus.write(title="Next", type="semantic", claim="The next writer came along.")
    assert git(root, "rev-parse", "HEAD^") == head
    after = worktree_digest(root)
    del after[written["path"]]
    assert after == before
    _clean(root)


def test_a_merged_file_neither_side_held_must_parse(corpus: Any, seeded: dict[str, str]) -> None:
    from memhtml.sleep.merge import validate_merged
    from memhtml.store.branch import BlobReader

    _night(corpus, seeded)
    corpus.link(seeded["a"], "relates_to", seeded["d"])  # both sides edit a's head
    root = corpus.root
    head = git(root, "rev-parse", "HEAD")
    record, tip = runs.find_run(corpus.git, root, DATE)
    good, _ = result_commit(corpus, record, tip, head)
    # What a misbehaving merge driver could leave: bytes neither side had, not a memory.
    index = root.parent / "bad-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=root,
            input=b"<p>two marks</p>",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    subprocess.run(["git", "read-tree", good], cwd=root, env=env, check=True)
    subprocess.run(
        ["git", "update-index", "--cacheinfo", f"100644,{blob},{seeded['a']}"],
        cwd=root,
        env=env,
        check=True,
    )
    tree = subprocess.run(
        ["git", "write-tree"], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    bad = git(root, "commit-tree", tree, "-p", head, "-p", tip, "-m", "bad merge")
    with BlobReader(corpus.git) as reader:
        assert validate_merged(corpus.git, reader, head, tip, good) == []
        problems = validate_merged(corpus.git, reader, head, tip, bad)
    assert [p["path"] for p in problems] == [seeded["a"]]


def test_git_steps_of_a_landing_finish_before_an_interrupt_is_raised(repo: Path) -> None:
    """`subprocess.run` kills its child when the wait is interrupted: a git killed inside
    `update-ref` or `update-index` leaves a lock that refuses every later write."""
    import random
    import signal
    from types import FrameType

    from memhtml.store.git import Git
    from memhtml.store.land import _through

    class Interrupted(BaseException):
        pass

    armed = [False]

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        if armed[0]:
            armed[0] = False
            raise Interrupted

    git = Git(repo)
    head = git.head()
    assert head is not None
    import gc

    gc.collect()  # no finalizer of the fixture's objects runs inside the loop
    gc.disable()
    previous = signal.signal(signal.SIGALRM, interrupt)
    rng = random.Random(4)
    interrupted = 0
    try:
        for n in range(150):
            try:
                armed[0] = True
                signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.0005, 0.006))
                _through(git, "update-ref", f"refs/heads/t{n}", head)
                armed[0] = False
            except Interrupted:
                interrupted += 1
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        gc.enable()
    assert interrupted > 0
    # Every git that started finished: no lock left (with subprocess.run, 13 in 183
    # interrupted runs of this loop), so the next ref update goes through.
    locks = [p for p in (repo / ".git").rglob("*.lock") if p.name != "memhtml.lock"]
    assert locks == []
    _through(git, "update-ref", "refs/heads/after", head)


def test_ref_locks_a_killed_git_left_are_cleared_by_the_next_command(
    corpus: Any, seeded: dict[str, str]
) -> None:
    """A SIGKILL of the process group inside `update-ref` leaves HEAD's or the branch's lock
    file; on 7a6261e every later write was refused ("HEAD moved while committing") forever."""
    data = _night(corpus, seeded)
    root = corpus.root
    for lock in (root / ".git" / "refs" / "heads" / "main.lock", root / ".git" / "HEAD.lock"):
        lock.write_text("0" * 40 + "\n")
    written = corpus.write(title="Next", type="semantic", claim="The next writer came along.")
    assert git(root, "rev-parse", "HEAD") == written["commit_sha"]
    (root / ".git" / "refs" / "heads" / "main.lock").write_text("")
    out = merge(corpus, DATE, fixture_gate=passing_fixture_gate)
    assert out["mode"] == "merge" and git(root, "rev-parse", "HEAD^2") == data["head_sha"]
    _clean(root)
