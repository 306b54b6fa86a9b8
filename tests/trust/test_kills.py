"""Killed, and retried: a command stopped at any moment never loses or wedges anything (§5, §6).

Each round starts a command, kills it (SIGKILL or SIGTERM) at a seeded random
moment, then runs the same command again to completion. After every round:
every memory the retry reports is in HEAD, nothing untracked is left, no lock
outlives its holder (the store takes a write at once), no process of the
killed command lives on, `git fsck` is clean, and the index a read sees equals
a fresh rebuild. The default run makes a few rounds per command; set
MEMHTML_KILL_ROUNDS (e.g. 50) for the heavy variant.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import memhtml
from memhtml.store.lock import RepoLock
from tests.index.test_indexer import fresh_rebuild_snapshot, snapshot

from .conftest import git

ROUNDS = int(os.environ.get("MEMHTML_KILL_ROUNDS", "3"))
APPLY_OPS = int(os.environ.get("MEMHTML_KILL_APPLY_OPS", "200"))
REBUILD_FILES = int(os.environ.get("MEMHTML_KILL_REBUILD_FILES", "2100"))
ENV = {**os.environ, "MEMHTML_EMBED": "fake", "MEMHTML_LOCK_TIMEOUT": "5"}


def _start(root: Path, *argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memhtml.cli", *argv, "--repo", str(root), "--dense"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )


def _run(root: Path, *argv: str) -> dict[str, Any]:
    proc = _start(root, *argv)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, (out + err).decode()[-2000:]
    return dict(json.loads(out))


def _processes_of(root: Path) -> list[int]:
    """Live processes whose command line names this root (workers of a killed rebuild)."""
    found = []
    needle = str(root).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split(") ", 1)[1][:1]
        except OSError:
            continue
        if needle in cmdline and b"memhtml.cli" in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _check_store(root: Path, reported: list[str]) -> None:
    head_paths = set(git(root, "ls-tree", "-r", "--name-only", "HEAD").split("\n"))
    missing = [p for p in reported if p not in head_paths]
    assert not missing, f"{len(missing)} reported memories are not in HEAD: {missing[:5]}"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not list(root.rglob(".memhtml-*.tmp"))
    deadline = time.monotonic() + 10
    while _processes_of(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_of(root) == []
    with RepoLock(root / ".git" / "memhtml.lock").hold(timeout=0):
        pass
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress"], cwd=root, capture_output=True, check=False
    )
    assert fsck.returncode == 0, fsck.stderr.decode()
    with memhtml.open(root, embedder="fake") as corpus:
        assert corpus.search("fact").index_fresh
        incremental = snapshot(corpus.conn)
    assert incremental == fresh_rebuild_snapshot(root)


def _kill(proc: subprocess.Popen[bytes], rng: random.Random, within: float) -> str:
    sig = rng.choice([signal.SIGKILL, signal.SIGTERM])
    time.sleep(rng.uniform(0.0, within))
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    return sig.name


def _ops(round_no: int, folder: Path) -> str:
    lines = [
        json.dumps(
            {
                "op": "write",
                "title": f"batch {round_no} fact {i}",
                "type": "semantic",
                "claim": f"Fact {i} of batch {round_no} is recorded, token r{round_no}x{i}.",
            }
        )
        for i in range(APPLY_OPS)
    ]
    target = folder / f"ops-{round_no}.jsonl"
    target.write_text("\n".join(lines) + "\n")
    return str(target)


def _reported(envelope: dict[str, Any]) -> list[str]:
    return [
        r.get("existing_path") or r["path"]
        for r in envelope["data"]["results"]
        if r["ok"] and r.get("path")
    ]


def test_killed_apply_then_retry(repo: Path, tmp_path: Path) -> None:
    rng = random.Random(12)
    started = time.monotonic()
    _run(repo, "apply", "--file", _ops(0, tmp_path))
    within = max(0.3, time.monotonic() - started)
    signals = []
    for n in range(1, ROUNDS + 1):
        ops = _ops(n, tmp_path)
        signals.append(_kill(_start(repo, "apply", "--file", ops), rng, within))
        envelope = _run(repo, "apply", "--file", ops)
        assert envelope["data"]["summary"]["failed"] == 0
        reported = _reported(envelope)
        assert len(reported) == APPLY_OPS
        _check_store(repo, reported)
        # Nothing was written twice: one file per fact.
        assert len(list((repo / "areas" / "inbox").glob(f"batch-{n}-fact-*.html"))) == APPLY_OPS
    assert signals


def test_killed_write_then_retry(repo: Path) -> None:
    rng = random.Random(7)
    for n in range(ROUNDS * 2):
        argv = ("write", "--type", "semantic", "--title", f"w{n}", "--claim", f"Write fact {n}.")
        _kill(_start(repo, *argv), rng, 0.6)
        envelope = _run(repo, *argv)
        _check_store(repo, [envelope["data"].get("existing_path") or envelope["data"]["path"]])


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.synth import build_store

    return build_store(tmp_path_factory.mktemp("big") / "memory", REBUILD_FILES, seed=3)


def test_killed_rebuild_then_retry(big_store: Path, tmp_path: Path) -> None:
    root = tmp_path / "memory"
    # A clone, not a copy: git may be packing the source's loose objects meanwhile.
    subprocess.run(["git", "clone", "-q", str(big_store), str(root)], check=True)
    rng = random.Random(5)
    started = time.monotonic()
    _run(root, "index", "rebuild")
    within = time.monotonic() - started
    for _ in range(ROUNDS):
        _kill(_start(root, "index", "rebuild"), rng, within)
        # The store takes a write straight away: no worker holds the lock.
        envelope = _run(
            root, "write", "--type", "semantic", "--title", "after", "--claim", "Written after."
        )
        _run(root, "index", "rebuild")
        _check_store(root, [envelope["data"].get("existing_path") or envelope["data"]["path"]])
