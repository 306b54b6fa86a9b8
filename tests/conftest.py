"""Shared fixtures. Fakes enter only through the seams (embedder, LLM)."""

from __future__ import annotations

import os

# Tests never reach a network model: the deterministic fake is the default
# embedder under test unless a test asks for another one explicitly.
os.environ.setdefault("MEMHTML_EMBED", "fake")
os.environ.setdefault("MEMHTML_LLM", "off")
os.environ.setdefault("GIT_AUTHOR_NAME", "memhtml tests")
os.environ.setdefault("GIT_AUTHOR_EMAIL", "tests@memhtml.invalid")
os.environ.setdefault("GIT_COMMITTER_NAME", "memhtml tests")
os.environ.setdefault("GIT_COMMITTER_EMAIL", "tests@memhtml.invalid")

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A freshly initialized memory root (real git, real layout)."""
    from memhtml.store.layout import init_repo

    root = tmp_path / "memory"
    init_repo(root)
    return root


@pytest.fixture
def corpus(repo: Path) -> Iterator[object]:
    """A Corpus over `repo` with the deterministic fake embedder."""
    import memhtml

    c = memhtml.open(repo, embedder="fake")
    yield c
    c.close()
