"""Fixtures shared by the phase tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memhtml
from tests.sleep.phase_harness import WRITTEN


@pytest.fixture
def fixed(repo: Path) -> Iterator[Any]:
    """A corpus whose write doors stamp WRITTEN, 2026-03-01 (the run is the night after)."""
    c = memhtml.open(repo, embedder="fake", now=WRITTEN)
    yield c
    c.close()
