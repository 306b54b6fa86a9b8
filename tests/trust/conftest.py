"""Helpers for the trust-hardening tests: the CLI as a user runs it, and git by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def run_cli(root: Path, *argv: str, stdin: str | None = None) -> tuple[int, dict[str, Any]]:
    """`memhtml ARGV --repo ROOT` in a subprocess: exit code and the one envelope."""
    proc = subprocess.run(
        [sys.executable, "-m", "memhtml.cli", *argv, "--repo", str(root)],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "MEMHTML_EMBED": "fake"},
        check=False,
    )
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def git(root: Path, *args: str) -> str:
    """Run git in the memory root; stdout text."""
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def cli(repo: Path) -> Any:
    """A bound runner: cli("search", "x") -> (code, envelope)."""
    return lambda *argv, stdin=None: run_cli(repo, *argv, stdin=stdin)
