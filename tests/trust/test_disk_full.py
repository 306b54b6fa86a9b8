"""A full disk at every step of a write door: a typed answer, and an acknowledgement is the
truth (issue 29, item 8).

The disk fills at one step of the door (`MEMHTML_FAULT_ENOSPC`, the seam in
memhtml.store.faults: the atomic file write, each git command that writes,
the index and vector transactions) and stays full for the rest of the
command. Every step of `write` and of `correct` (a new file, a move, a
rewritten inbound link) is failed in turn, before it runs and, for git,
after it did its work. Each time:

* the answer is ERR_DISK_FULL naming the file system (nothing committed), or
  success whose commit is HEAD (warnings allowed): acknowledged == in HEAD;
* a refused write left the tree as it was, or a journal the next command
  settles (when the full disk refused the restore itself);
* once space returns, the same command succeeds without a hand step, the
  tree is clean, `doctor` is healthy and the index equals a rebuild.

A real small tmpfs, filled by writes until it refuses them, closes the file
(skipped where mounting is not allowed).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memhtml.store.recovery import journal_path
from tests.index.test_indexer import fresh_rebuild_snapshot, snapshot

from .conftest import git

ENV = {**os.environ, "MEMHTML_EMBED": "fake", "MEMHTML_LOCK_TIMEOUT": "5"}
for _name in ("MEMHTML_FAULT_ENOSPC", "MEMHTML_FAULT_TRACE"):
    ENV.pop(_name, None)


def _cli(root: Path, *argv: str, **env: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *argv, "--repo", str(root), "--dense"],
        capture_output=True,
        text=True,
        env={**ENV, **env},
        check=False,
    )
    assert proc.stdout.strip(), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout)


def _ok(root: Path, *argv: str) -> dict[str, Any]:
    code, env = _cli(root, *argv)
    assert code == 0, env
    return dict(env["data"])


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with two memories, the second linking to the first."""
    root = tmp_path_factory.mktemp("diskfull") / "memory"
    _ok(root, "init")
    alpha = _ok(
        root,
        "write",
        "--type",
        "semantic",
        "--title",
        "Alpha cache",
        "--claim",
        "The alpha cache evicts least recently used entries.",
    )["path"]
    beta = _ok(
        root,
        "write",
        "--type",
        "semantic",
        "--title",
        "Beta cache",
        "--claim",
        "The beta cache warms from the alpha cache at start.",
    )["path"]
    _ok(root, "link", beta, "supports", alpha)
    return root


DOORS = {
    "write": (
        "write",
        "--type",
        "semantic",
        "--title",
        "Gamma cache",
        "--claim",
        "The gamma cache holds sessions for an hour.",
    ),
    "correct": (
        "correct",
        "areas/inbox/alpha-cache.html",
        "--claim",
        "The alpha cache evicts the least frequently used entries.",
    ),
}


def _copy(template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    shutil.copytree(template, root, symlinks=True)
    return root


def _steps(template: Path, tmp_path: Path, door: str) -> list[str]:
    """The labels of the door's space-needing steps, `label#k` for a repeated one."""
    root = _copy(template, tmp_path / "trace")
    trace = tmp_path / "steps.txt"
    code, env = _cli(root, *DOORS[door], MEMHTML_FAULT_TRACE=str(trace))
    assert code == 0, env
    seen: Counter[str] = Counter()
    out = []
    for label in trace.read_text().splitlines():
        seen[label] += 1
        out.append(label if seen[label] == 1 else f"{label}#{seen[label]}")
    return out


def _state(root: Path) -> tuple[str, str]:
    return git(root, "rev-parse", "HEAD").strip(), git(root, "ls-tree", "-r", "HEAD")


def _check_refused(root: Path, env: dict[str, Any], before: tuple[str, str]) -> bool:
    """A refusal: True when the tree was put back at once, False when it is left (with its
    journal) for the next command, because the full disk refused the restore too."""
    assert env["code"] == "ERR_DISK_FULL", env
    details = env["details"]
    assert details["committed"] is False and Path(details["mount"]).is_dir()
    assert "mounted at" in env["error"] and "nothing was committed" in env["error"]
    assert _state(root) == before  # nothing landed
    leftovers = git(root, "status", "--porcelain", "--untracked-files=all")
    if leftovers:  # only where the full disk refused the restore: the journal says so
        assert journal_path(root).exists(), leftovers
        assert "settles" in env["error"]
        return False
    return not journal_path(root).exists()


def _check_settled(root: Path, door: str, before: tuple[str, str], landed: bool) -> None:
    """Space has returned: the next command (the same door again) and doctor are healthy."""
    code, env = _cli(root, *DOORS[door])
    if door == "write":
        assert code == 0, env
        assert env["data"]["deduped"] is landed  # the first one landed: the retry dedupes
    elif landed:  # the original is archived already: a second correction has no target
        assert code != 0 and env["code"] in ("ERR_PATH_NOT_FOUND", "ERR_INVALID_PATH"), env
    else:
        assert code == 0, env
    head = git(root, "rev-parse", "HEAD").strip()
    assert head != before[0]
    assert git(root, "rev-list", "--count", f"{before[0]}..HEAD").strip() == "1"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not journal_path(root).exists()
    assert not list(root.rglob(".memhtml-*.tmp"))
    doctor = _ok(root, "doctor")
    assert doctor["healthy"] and doctor["index_fresh"] and doctor["vector_coverage"] == 1.0, doctor
    assert git(root, "fsck", "--no-dangling").strip() == ""
    import memhtml

    with memhtml.open(root, embedder="fake") as c:
        c.catch_up()
        rows = snapshot(c.conn)
    assert rows == fresh_rebuild_snapshot(root)


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_full_disk_at_every_step_of_a_door(template: Path, tmp_path: Path, door: str) -> None:
    steps = _steps(template, tmp_path, door)
    labels = {s.split("#")[0] for s in steps}
    assert {"write .git/memhtml-batch.json", "git update-ref", "git commit-tree"} <= labels
    assert {"sqlite index rows", "sqlite index commit", "sqlite vectors"} <= labels
    assert any(s.startswith("write inbox/") for s in steps), steps
    faults = [s for s in steps] + [f"{s}:after" for s in steps if s.startswith("git ")]
    outcomes: Counter[str] = Counter()
    for n, fault in enumerate(faults):
        root = _copy(template, tmp_path / f"case{n}")
        before = _state(root)
        code, env = _cli(root, *DOORS[door], MEMHTML_FAULT_ENOSPC=fault)
        if env["ok"]:  # acknowledged: it is HEAD, and what did not follow it is a warning
            assert code == 0
            data = env["data"]
            assert data["commit_sha"] == git(root, "rev-parse", "HEAD").strip() != before[0]
            assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
            for warning in data.get("warnings", []):
                assert warning["code"] in ("index-behind", "vectors-pending"), warning
                assert warning["error"] == "ERR_DISK_FULL" and "landed" in warning["message"]
            outcomes["landed, warned" if data.get("warnings") else "landed"] += 1
        else:
            assert code == 1, (fault, env)
            clean = _check_refused(root, env, before)
            outcomes["refused" if clean else "refused, settled next"] += 1
        _check_settled(root, door, before, landed=bool(env["ok"]))
    # The seam reached both sides of the commit: refusals before it, warnings after it.
    refused = outcomes["refused"] + outcomes["refused, settled next"]
    assert refused >= 5 and outcomes["landed, warned"] >= 2, outcomes
    if door == "correct":  # a rewritten file the full disk would not let be put back
        assert outcomes["refused, settled next"] >= 1, outcomes


def _padding() -> str:
    return base64.b64encode(os.urandom(600)).decode()


def _tmpfs(size_kib: int) -> Path | None:
    where = Path(tempfile.mkdtemp(prefix="memhtml-tmpfs-"))
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        where.rmdir()
        return None
    return where


def test_a_real_small_disk_filled_by_writes(tmp_path: Path) -> None:
    """Writes into a 3 MiB tmpfs until it is full: every acknowledgement is in HEAD, every
    refusal is ERR_DISK_FULL, and once the disk grows the store is healthy by itself."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    disk = _tmpfs(3072)
    if disk is None:
        pytest.skip("mounting a tmpfs is not allowed here")
    try:
        root = disk / "memory"
        _ok(root, "init")
        before = int(git(root, "rev-list", "--count", "HEAD"))
        acknowledged: list[str] = []
        answers: Counter[str] = Counter()
        for i in range(110):
            code, env = _cli(
                root,
                "write",
                "--type",
                "semantic",
                "--title",
                f"Fact {i}",
                "--claim",
                f"Cache {i} holds {_padding()}.",
            )
            assert code == (0 if env["ok"] else 1), env
            if env["ok"]:
                acknowledged.append(env["data"]["path"])
                answers["ok, warned" if env["data"].get("warnings") else "ok"] += 1
            else:
                assert env["code"] == "ERR_DISK_FULL", env
                assert str(disk) in env["details"]["mount"]
                answers["ERR_DISK_FULL"] += 1
        assert answers["ERR_DISK_FULL"] > 0, answers  # the disk did fill
        in_head = [
            p
            for p in git(root, "ls-tree", "-r", "--name-only", "HEAD").split()
            if p.startswith("areas/inbox/") and p.endswith(".html")
        ]
        commits = int(git(root, "rev-list", "--count", "HEAD")) - before
        print(
            f"real disk: {len(acknowledged)} acknowledged, {len(in_head)} in HEAD,"
            f" {commits} commits, answers {dict(answers)}"
        )
        assert sorted(acknowledged) == sorted(in_head) and commits == len(acknowledged)
        subprocess.run(["mount", "-o", "remount,size=12288k", str(disk)], check=True)
        _ok(
            root,
            "write",
            "--type",
            "semantic",
            "--title",
            "Space returned",
            "--claim",
            "The disk has room again.",
        )
        assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
        assert not journal_path(root).exists()
        doctor = _ok(root, "doctor")
        assert doctor["index_fresh"] and doctor["vector_coverage"] == 1.0, doctor
        assert not doctor.get("interrupted_batch") and not doctor["unparseable"]
        assert not doctor.get("stale_git_lock") and not doctor["dirty"]
        import memhtml

        with memhtml.open(root, embedder="fake") as c:
            c.catch_up()
            rows = snapshot(c.conn)
        assert rows == fresh_rebuild_snapshot(root)
    finally:
        subprocess.run(["umount", str(disk)], check=False)
        disk.rmdir()


def test_the_mcp_write_tool_answers_a_full_disk_the_same_way(
    corpus: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, as the server runs it: refused before the commit, acknowledged after it."""
    from memhtml.mcp.tools import call_tool
    from memhtml.store import faults

    def write(title: str) -> dict[str, Any]:
        faults.reset()
        args = {"title": title, "memory_type": "semantic", "body": f"{title} is a fact."}
        return call_tool(lambda: corpus, "memory_write", args)

    before = git(repo, "rev-parse", "HEAD").strip()
    monkeypatch.setenv("MEMHTML_FAULT_ENOSPC", "git commit-tree")
    refused = write("Refused note")
    assert refused["ok"] is False and refused["code"] == "ERR_DISK_FULL", refused
    assert refused["details"]["committed"] is False
    assert git(repo, "rev-parse", "HEAD").strip() == before
    monkeypatch.setenv("MEMHTML_FAULT_ENOSPC", "sqlite index commit")
    landed = write("Landed note")
    assert landed["ok"] is True, landed
    assert landed["data"]["commit_sha"] == git(repo, "rev-parse", "HEAD").strip() != before
    assert [w["code"] for w in landed["data"]["warnings"]] == ["index-behind"]
    monkeypatch.delenv("MEMHTML_FAULT_ENOSPC")
    faults.reset()
    after = write("After space returns")
    assert after["ok"] is True and "warnings" not in after["data"], after
    hits = {f["path"] for f in corpus.list(limit=50)["files"]}
    assert landed["data"]["path"] in hits and after["data"]["path"] in hits
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_every_form_of_a_full_disk_maps_to_one_code(tmp_path: Path) -> None:
    import errno

    from memhtml.contracts.errors import GitError, PartialFailureError, StorageError
    from memhtml.ops.errors import as_memhtml_error
    from memhtml.store import faults
    from memhtml.store.git import Git

    file = tmp_path / "areas" / "x.html"
    file.parent.mkdir(parents=True)
    enospc = as_memhtml_error(OSError(errno.ENOSPC, "No space left on device", str(file)))
    assert enospc.code == "ERR_DISK_FULL" and enospc.details["path"] == str(file)
    assert enospc.details["reason"] == "ENOSPC" and Path(enospc.details["mount"]).is_dir()
    quota = as_memhtml_error(OSError(errno.EDQUOT, "Disk quota exceeded"), root=tmp_path)
    assert quota.code == "ERR_DISK_FULL" and quota.details["reason"] == "EDQUOT"
    assert "quota" in quota.message and str(tmp_path) in quota.message
    sqlite_full = faults.sqlite_full()  # a real SQLITE_FULL
    assert as_memhtml_error(sqlite_full, root=tmp_path).code == "ERR_DISK_FULL"
    try:
        raise StorageError("the index failed") from sqlite_full
    except StorageError as wrapped:
        assert as_memhtml_error(wrapped, root=tmp_path).code == "ERR_DISK_FULL"
    stderr = b"error: unable to create temporary file: No space left on device\nfatal: failed\n"
    mapped = Git(tmp_path).failure(["hash-object", "-w"], stderr)
    assert mapped.code == "ERR_DISK_FULL" and "git hash-object" in mapped.message
    assert Git(tmp_path).failure(["mktree"], b"fatal: bad input").code == "ERR_GIT"
    # Other typed answers keep their code, whatever their text quotes.
    partial = PartialFailureError("1 of 2 ops failed (database or disk is full)")
    assert as_memhtml_error(partial) is partial
    assert as_memhtml_error(GitError("git push failed: rejected")).code == "ERR_GIT"
    assert as_memhtml_error(OSError(errno.EACCES, "Permission denied")).code == "ERR_UNKNOWN"
