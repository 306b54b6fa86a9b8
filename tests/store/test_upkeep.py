"""Object store upkeep after a commit, against real git repositories in tmp_path."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from memhtml.store.git import Git, blob_sha, fast_import_stream
from memhtml.store.upkeep import (
    LOOSE_LIMIT,
    PACK_LIMIT,
    Limits,
    Shape,
    index_in_shape,
    keep_in_shape,
    needs_upkeep,
    read_limits,
    shape,
)


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, input=stdin, capture_output=True, check=True
    ).stdout.decode()


def add_packs(repo: Path, count: int, per_pack: int = 110) -> list[str]:
    """`count` packs of unreachable blobs (fast-import keeps more than 100 objects as a pack)."""
    shas: list[str] = []
    for p in range(count):
        blobs = [f"pack {p} blob {b}\n".encode() * 3 for b in range(per_pack)]
        git(repo, "fast-import", "--quiet", "--done", stdin=fast_import_stream(blobs))
        shas.extend(blob_sha(b) for b in blobs)
    return shas


def loose_in_17(repo: Path, count: int) -> list[str]:
    """`count` loose blobs whose ids start with 17 (the directory git samples)."""
    contents: list[bytes] = []
    i = 0
    while len(contents) < count:
        data = f"sampled loose object {i}\n".encode()
        if blob_sha(data).startswith("17"):
            contents.append(data)
        i += 1
    for data in contents:
        git(repo, "hash-object", "-w", "--stdin", stdin=data)
    return [blob_sha(d) for d in contents]


def all_objects(repo: Path) -> set[str]:
    out = git(repo, "cat-file", "--batch-check=%(objectname)", "--batch-all-objects")
    return set(out.split())


def readable(repo: Path, shas: set[str]) -> bool:
    out = git(repo, "cat-file", "--batch-check", stdin=("\n".join(sorted(shas)) + "\n").encode())
    return "missing" not in out and len(out.splitlines()) == len(shas)


def fsck_clean(repo: Path) -> bool:
    proc = subprocess.run(
        ["git", "fsck", "--no-dangling", "--strict"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode == 0 and "error" not in proc.stderr.lower()


# -- the check ----------------------------------------------------------------


def test_needs_upkeep_follows_gc_auto() -> None:
    assert not needs_upkeep(Shape(PACK_LIMIT, 0), Limits())
    assert needs_upkeep(Shape(PACK_LIMIT + 1, 0), Limits())
    # gc.auto 6700: more than ceil(6700 / 256) = 27 objects in objects/17.
    assert not needs_upkeep(Shape(1, 27 * 256), Limits())
    assert needs_upkeep(Shape(1, 28 * 256), Limits())
    assert not needs_upkeep(Shape(500, 100 * 256), Limits(loose=0))  # gc.auto 0: off
    assert not needs_upkeep(Shape(500, 0), Limits(packs=0))  # autoPackLimit 0: packs unchecked
    assert needs_upkeep(Shape(500, 28 * 256), Limits(packs=0))


def test_read_limits_from_the_repository_config(tmp_path: Path) -> None:
    (tmp_path / "config").write_text(
        '[core]\n\tbare = false\n[gc "refs/remotes/*"]\n\tauto = 3\n'
        "[GC]\n\tautoPackLimit = 10 ; fewer packs\n\tauto = 1k\n[user]\n\tauto = 7\n"
    )
    assert read_limits(tmp_path) == Limits(packs=10, loose=1024)
    (tmp_path / "config").write_text("[core]\n\tbare = false\n")
    assert read_limits(tmp_path) == Limits(PACK_LIMIT, LOOSE_LIMIT)
    assert read_limits(tmp_path / "absent") == Limits(PACK_LIMIT, LOOSE_LIMIT)


def test_shape_counts_packs_without_keep_and_samples_loose(repo: Path) -> None:
    add_packs(repo, 3)
    kept = sorted((repo / ".git/objects/pack").glob("pack-*.idx"))[0]
    kept.with_suffix(".keep").write_text("")
    loose_in_17(repo, 2)
    now = shape(repo / ".git/objects")
    assert now.packs == 2
    assert now.loose >= 2 * 256


# -- after a commit -------------------------------------------------------------


def test_many_packs_are_rolled_up_by_the_next_write(corpus: Any, repo: Path) -> None:
    corpus.write(title="First", type="semantic", claim="The store starts small.")
    unreachable = add_packs(repo, PACK_LIMIT + 10)
    before = all_objects(repo)
    assert shape(repo / ".git/objects").packs > PACK_LIMIT
    out = corpus.write(title="Second", type="semantic", claim="The next write repacks.")
    after = shape(repo / ".git/objects")
    assert after.packs < PACK_LIMIT and after.loose == 0
    assert readable(repo, before | {out["commit_sha"]})
    assert set(unreachable) <= all_objects(repo)  # nothing pruned, unreachable or not
    assert fsck_clean(repo)


def test_loose_objects_past_gc_auto_are_packed(corpus: Any, repo: Path) -> None:
    corpus.write(title="First", type="semantic", claim="The store starts small.")
    sampled = loose_in_17(repo, 28)
    before = all_objects(repo)
    corpus.write(title="Second", type="semantic", claim="The next write packs them.")
    assert not list((repo / ".git/objects/17").glob("*"))
    assert readable(repo, before) and set(sampled) <= all_objects(repo)
    assert fsck_clean(repo)


def test_in_shape_no_repack_process_runs(
    corpus: Any, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_packs(repo, PACK_LIMIT - 1)
    trace = tmp_path / "git-trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    corpus.write(title="One", type="semantic", claim="A write in a store in shape.")
    lines = trace.read_text().splitlines()
    assert any("commit-tree" in line for line in lines)  # the trace saw the write's git
    assert not any("repack" in line or "pack-objects" in line for line in lines)
    assert shape(repo / ".git/objects").packs == PACK_LIMIT - 1


def test_gc_auto_zero_turns_upkeep_off(corpus: Any, repo: Path) -> None:
    git(repo, "config", "gc.auto", "0")
    add_packs(repo, PACK_LIMIT + 5)
    corpus.write(title="One", type="semantic", claim="Upkeep is off here.")
    assert shape(repo / ".git/objects").packs == PACK_LIMIT + 5


def test_a_lowered_pack_limit_is_honoured(repo: Path) -> None:
    git(repo, "config", "gc.autoPackLimit", "4")
    add_packs(repo, 6)
    done = keep_in_shape(Git(repo))
    assert done is not None and done.ok and done.before.packs == 6
    assert done.after.packs <= 4
    assert keep_in_shape(Git(repo)) is None


# -- a killed repack -------------------------------------------------------------


def _pack_objects_running(session: int) -> bool:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getsid(int(entry.name)) != session:
                continue
            if b"pack-objects" in (entry / "cmdline").read_bytes():
                return True
        except (OSError, ProcessLookupError):
            continue
    return False


def _killed_repack(repo: Path, when: str, delay: float = 0.0) -> None:
    """Start git's repack in its own session and SIGKILL the whole session at `when`:
    "pack-objects" (while it writes the new pack), or after `delay` seconds."""
    proc = subprocess.Popen(
        ["git", "repack", "-d", "-q", "--geometric=2"],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    if when == "pack-objects":
        while proc.poll() is None and not _pack_objects_running(proc.pid):
            if time.monotonic() > deadline:
                break
    else:
        time.sleep(delay)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="finds git's child through /proc")
def test_a_killed_repack_loses_no_object_and_the_next_write_finishes_it(
    corpus: Any, repo: Path
) -> None:
    corpus.write(title="First", type="semantic", claim="The store starts small.")
    add_packs(repo, PACK_LIMIT + 10, per_pack=400)
    before = all_objects(repo)
    _killed_repack(repo, "pack-objects")
    # Killed before git deleted any old pack (it deletes only once the new one is in place).
    assert shape(repo / ".git/objects").packs == PACK_LIMIT + 10
    assert readable(repo, before) and fsck_clean(repo)
    for delay in (0.005, 0.02, 0.05, 0.1):  # later moments, wherever they land
        _killed_repack(repo, "delay", delay)
        assert readable(repo, before)
    assert fsck_clean(repo)
    corpus.write(title="Second", type="semantic", claim="The next write finishes the job.")
    assert shape(repo / ".git/objects").packs < PACK_LIMIT
    assert readable(repo, before) and fsck_clean(repo)


def test_a_failed_repack_never_fails_the_write(
    corpus: Any, repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    add_packs(repo, PACK_LIMIT + 2)
    git(repo, "config", "pack.window", "not-a-number")  # only pack-objects reads it
    out = corpus.write(title="One", type="semantic", claim="The write lands anyway.")
    assert out["commit_sha"] == git(repo, "rev-parse", "HEAD").strip()
    assert shape(repo / ".git/objects").packs == PACK_LIMIT + 2
    assert "object store upkeep" in caplog.text
    git(repo, "config", "--unset", "pack.window")
    done = keep_in_shape(Git(repo))
    assert done is not None and done.ok and done.after.packs < PACK_LIMIT


def test_a_large_git_index_is_split_once_and_git_still_agrees(corpus: Any, repo: Path) -> None:
    """Past the threshold the split index and the untracked cache go on (once); status,
    commits and the write door read the same tree through them."""
    for i in range(20):
        corpus.write(title=f"split {i}", claim=f"Split index fact number {i}.")
    git = Git(repo)
    config = repo / ".git" / "config"
    assert not index_in_shape(git, threshold=1 << 40)  # small: nothing changes
    assert b"splitindex" not in config.read_bytes().lower()
    assert index_in_shape(git, threshold=1)
    text = config.read_bytes().lower()
    assert b"splitindex = true" in text and b"untrackedcache = true" in text
    assert list((repo / ".git").glob("sharedindex.*"))
    assert not index_in_shape(git, threshold=1)  # once
    written = corpus.write(title="after the split", claim="Written through a split index.")
    head = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert written["path"] in head
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == ""


def test_an_owner_s_index_setting_is_left_alone(repo: Path) -> None:
    subprocess.run(["git", "-C", str(repo), "config", "core.splitIndex", "false"], check=True)
    assert not index_in_shape(Git(repo), threshold=1)
    assert b"untrackedcache" not in (repo / ".git" / "config").read_bytes().lower()
