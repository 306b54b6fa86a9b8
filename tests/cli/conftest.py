"""Fixtures for driving the CLI in-process, as a program (JSON) or as a person (a terminal)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhtml.cli.main import run


class Terminal(io.StringIO):
    """A stdout that says it is a TTY, as a person's terminal does."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def cli() -> Callable[..., tuple[int, dict[str, Any]]]:
    """Run one command line off a terminal: (exit code, the parsed envelope)."""

    def call(*argv: str) -> tuple[int, dict[str, Any]]:
        out = io.StringIO()
        code = run(list(argv), stdout=out)
        return code, json.loads(out.getvalue())

    return call


@pytest.fixture
def terminal() -> Callable[..., tuple[int, str]]:
    """Run one command line with a TTY for stdout: (exit code, the text printed)."""

    def call(*argv: str) -> tuple[int, str]:
        out = Terminal()
        code = run(list(argv), stdout=out)
        return code, out.getvalue()

    return call


@pytest.fixture
def store(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An initialized memory root with two memories, bound to $MEMHTML_ROOT."""
    import memhtml

    monkeypatch.setenv("MEMHTML_ROOT", str(repo))
    with memhtml.open(repo, embedder="fake") as c:
        c.write(title="Alpha", type="semantic", claim="Alpha drains the VIP.", path="areas/a.html")
        c.write(title="Beta", type="semantic", claim="Beta follows alpha.", path="areas/b.html")
    return repo
