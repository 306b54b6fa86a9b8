"""Clones of one memory around a bare remote on the local filesystem (real git)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import memhtml


def git(root: Path, *args: str) -> str:
    """Run git in `root`; stdout text."""
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare remote holding one memory root's initial commit."""
    seed = tmp_path / "seed"
    memhtml.init(seed)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    git(seed, "remote", "add", "origin", str(bare))
    git(seed, "push", "-q", "origin", "HEAD:refs/heads/main")
    return bare


@pytest.fixture
def clones(tmp_path: Path, remote: Path) -> Iterator[Callable[[str], Any]]:
    """`clones(name)`: a corpus over a fresh `init --clone` of the remote (fake embedder)."""
    from memhtml.ops.sync import clone

    opened: list[Any] = []

    def make(name: str, now: str = "2026-03-01T10:00:00Z") -> Any:
        root = tmp_path / name
        clone(str(remote), root)
        corpus = memhtml.open(root, embedder="fake", now=now)
        opened.append(corpus)
        return corpus

    yield make
    for corpus in opened:
        corpus.close()
