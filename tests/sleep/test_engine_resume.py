"""Resume and kill safety: a night stopped anywhere leaves main as it was; resume finishes it.

The kill test runs `memhtml sleep run` in a subprocess over a synthetic store
with the real phases, SIGKILLs it at a seeded random moment, checks main,
then runs `memhtml sleep resume` and compares the branch with an uninterrupted
night's. The default makes a few rounds; set MEMHTML_SLEEP_KILL_ROUNDS (e.g.
30) for the heavy variant.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memhtml.sleep import engine, runs
from memhtml.sleep.phase import PHASE_ORDER, PhaseOutcome, SleepContext
from memhtml.store.branch import log_range

from .engine_helpers import DATE, StandIn, archive, git, registry, seed, stamp, worktree_digest

ROUNDS = int(os.environ.get("MEMHTML_SLEEP_KILL_ROUNDS", "3"))
KILL_STORE = int(os.environ.get("MEMHTML_SLEEP_KILL_STORE", "120"))
ENV = {
    **os.environ,
    "MEMHTML_EMBED": "fake",
    "MEMHTML_LLM": "off",
    "MEMHTML_NOW": f"{DATE}T10:00:00Z",
    "MEMHTML_LOCK_TIMEOUT": "5",
}


@pytest.fixture
def seeded(corpus: Any) -> dict[str, str]:
    return seed(corpus)


def test_resume_runs_only_the_phases_whose_commits_are_missing(
    corpus: Any, seeded: dict[str, str]
) -> None:
    first = {
        "dedup_merge": StandIn("dedup-merge", stamp(seeded["a"])),
        "retention_triage": StandIn("retention-triage", archive(seeded["c"])),
        "integrity": StandIn("integrity", stamp(seeded["b"], value="0.8")),
    }
    data = engine.run(corpus, date=DATE, registry=registry(**first), progress=False)
    root = corpus.root
    # Simulate a kill right after the dedup-merge commit: the branch stops there.
    dedup_commit = next(p["commit_sha"] for p in data["phases"] if p["phase"] == "dedup-merge")
    git(root, "update-ref", f"refs/heads/sleep/{DATE}", dedup_commit)
    record = runs.load_record(root, DATE)
    assert record is not None
    record.status, record.pid = "running", 999_999_999
    runs.save_record(root, record)
    (runs.scratch_dir(root, DATE) / "index.db").unlink()  # and the run index is lost too
    again = {k: StandIn(v.name, v.body) for k, v in first.items()}
    resumed = engine.resume(corpus, DATE, registry=registry(**again), progress=False)
    assert again["dedup_merge"].calls == []  # its commit is there: not run again
    assert len(again["retention_triage"].calls) == 1 and len(again["integrity"].calls) == 1
    assert resumed["status"] == "review"
    tip = resumed["head_sha"]
    phases = [
        e.trailers["Memhtml-Phase"][0] for e in log_range(corpus.git, f"{data['base_sha']}..{tip}")
    ]
    assert phases == ["dedup-merge", "retention-triage", "integrity", "report"]
    assert git(root, "diff", "--stat", data["head_sha"], tip, "--", "areas", "archive") == ""
    by_phase = {p["phase"]: p for p in resumed["phases"]}
    assert by_phase["dedup-merge"]["commit_sha"] == dedup_commit
    assert [p["phase"] for p in resumed["phases"]] == list(PHASE_ORDER)


def test_resume_of_a_finished_run_commits_nothing_new(corpus: Any, seeded: dict[str, str]) -> None:
    reg = registry(dedup_merge=stamp(seeded["a"]))
    data = engine.run(corpus, date=DATE, registry=reg, progress=False)
    again = engine.resume(corpus, DATE, registry=reg, progress=False)
    assert again["head_sha"] == data["head_sha"]


def test_resume_and_review_work_without_the_run_record(corpus: Any, seeded: dict[str, str]) -> None:
    from memhtml.sleep.review import review

    data = engine.run(
        corpus, date=DATE, registry=registry(dedup_merge=stamp(seeded["a"])), progress=False
    )
    shutil.rmtree(runs.scratch_dir(corpus.root, DATE))
    record = runs.reconstruct(corpus.git, DATE)
    assert record.base == data["base_sha"]
    got = review(corpus, DATE)
    assert got["base_sha"] == data["base_sha"] and got["by_kind"] == {"rewritten": 1, "created": 1}


def test_a_resume_of_an_unknown_run_is_refused(corpus: Any) -> None:
    from memhtml.contracts.errors import PathNotFoundError

    with pytest.raises(PathNotFoundError):
        engine.resume(corpus, "2026-01-01", registry=registry(), progress=False)


def test_a_phase_failing_after_its_commit_keeps_the_index_on_the_tip(
    corpus: Any, seeded: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memhtml.sleep.runindex import RunIndex

    real = RunIndex.embed
    calls = {"n": 0}

    def flaky(self: RunIndex, *args: Any, **kwargs: Any) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("embedding blew up after the commit")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RunIndex, "embed", flaky)
    seen: dict[str, Any] = {}

    def looks(ctx: SleepContext) -> PhaseOutcome:
        seen["watermark"] = ctx.conn.execute("SELECT head_sha FROM index_state").fetchone()[0]
        seen["tip"] = ctx.view.base.commit if ctx.view.base else None
        return PhaseOutcome()

    data = engine.run(
        corpus,
        date=DATE,
        registry=registry(dedup_merge=stamp(seeded["a"]), integrity=looks),
        progress=False,
    )
    dedup = {p["phase"]: p for p in data["phases"]}["dedup-merge"]
    assert dedup["status"] == "failed" and dedup["commit_sha"] is not None
    assert seen["watermark"] == seen["tip"] == dedup["commit_sha"]


# -- SIGKILL at random moments ----------------------------------------------------------------


def _cli(root: Path, *argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memhtml.cli", *argv, "--repo", str(root), "--dense"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )


def _finish(root: Path, *argv: str) -> dict[str, Any]:
    proc = _cli(root, *argv)
    out, err = proc.communicate(timeout=600)
    envelope = json.loads(out)
    assert proc.returncode == 0, (out + err).decode()[-3000:]
    return dict(envelope["data"])


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed, indexed synthetic store (copied for every round)."""
    from bench.synth import build_store

    root = build_store(tmp_path_factory.mktemp("kill") / "store", KILL_STORE, seed=5)
    proc = _cli(root, "index", "rebuild")
    proc.communicate(timeout=600)
    assert proc.returncode == 0
    return root


def _listing(root: Path, ref: str) -> dict[str, str]:
    """path -> blob sha of a commit's tree (comparable across clones)."""
    out = git(root, "ls-tree", "-r", ref)
    return {line.split("\t", 1)[1]: line.split()[2] for line in out.splitlines()}


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


def test_sigkill_anywhere_leaves_main_untouched_and_resume_completes(
    pristine: Path, tmp_path: Path
) -> None:
    reference = _copy(pristine, tmp_path / "reference")
    started = time.monotonic()
    full = _finish(reference, "sleep", "run")
    duration = time.monotonic() - started
    want = _listing(reference, f"sleep/{full['run_id']}")
    rng = random.Random(20260302)
    for round_no in range(ROUNDS):
        root = _copy(pristine, tmp_path / f"round-{round_no}")
        head, tree = git(root, "rev-parse", "HEAD"), worktree_digest(root)
        proc = _cli(root, "sleep", "run")
        time.sleep(rng.uniform(0.05, duration))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        # Main, the user's tree and index are exactly as they were.
        assert git(root, "rev-parse", "HEAD") == head
        assert git(root, "symbolic-ref", "HEAD") == "refs/heads/main"
        assert worktree_digest(root) == tree
        assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
        fsck = subprocess.run(
            ["git", "fsck", "--no-progress"], cwd=root, capture_output=True, check=False
        )
        assert fsck.returncode == 0, fsck.stderr.decode()
        if git(root, "branch", "--list", f"sleep/{DATE}"):
            done = _finish(root, "sleep", "resume", DATE)
        else:  # killed before the branch existed: nothing to resume, a new night starts clean
            done = _finish(root, "sleep", "run")
        assert done["status"] == "review"
        got = _listing(root, f"sleep/{done['run_id']}")
        differ = sorted(p for p in set(want) | set(got) if want.get(p) != got.get(p))
        assert differ in ([], [f".memhtml/sleep/{DATE}.html"]), (round_no, differ[:10])
        assert git(root, "rev-parse", "HEAD") == head
