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


def run_on_pty(argv: list[str]) -> tuple[int, str]:
    """Run one command line in-process with a real pseudo-terminal for stdout.

    `isatty()` is the kernel's answer here, not a stub's: what a person at a
    terminal sees. Returns (exit code, the text printed, line ends as `\\n`).
    """
    import os
    import pty
    import threading

    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last writer closed
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stdout = os.fdopen(slave, "w", encoding="utf-8")
    try:
        code = run(argv, stdout=stdout)
    finally:
        stdout.close()
        reader.join(timeout=30)
        os.close(master)
    return code, b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.fixture
def pty_terminal() -> Callable[..., tuple[int, str]]:
    """Run one command line with a real pseudo-terminal for stdout: (exit code, text)."""
    return lambda *argv: run_on_pty(list(argv))
