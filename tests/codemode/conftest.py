"""Real git repositories for code mode: the fixture corpus and small hand-built roots."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from memhtml.codemode import ExecLimits, run_exec
from memhtml.codemode.report import ExecReport
from memhtml.store.git import Git

Run = Callable[..., ExecReport]


def memory_html(
    claim: str,
    *,
    title: str | None = None,
    type_: str = "semantic",
    status: str = "active",
    links: tuple[tuple[str, str], ...] = (),
    head: str = "",
    article: str = "",
) -> str:
    """A memory in the shape the format guarantees: the claim is a <p> descendant of <article>."""
    link_lines = "".join(f'<link rel="{rel}" href="{href}">\n' for rel, href in links)
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title if title is not None else claim}</title>\n"
        f'<meta name="memhtml-type" content="{type_}">\n'
        f'<meta name="memhtml-status" content="{status}">\n'
        f"{head}{link_lines}</head>\n<body>\n<article>\n<p><mark>{claim}</mark></p>\n"
        f"{article}</article>\n</body>\n</html>\n"
    )


def commit(root: Path, files: Mapping[str, str], message: str = "test") -> str:
    """Write `files` (path -> text) under `root`, commit them, and return the commit's sha."""
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
    quiet = ["git", "commit", "-q", "--no-verify", "-m", message]
    subprocess.run(quiet, cwd=root, check=True, capture_output=True)
    return Git(root).text("rev-parse", "HEAD")


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed fixture corpus (seed 7, 300 memories), written once per session."""
    from memhtml.eval.fixture import generate_fixture, write_fixture

    root = tmp_path_factory.mktemp("codemode") / "fixture"
    write_fixture(generate_fixture(), root)
    return root


@pytest.fixture
def run() -> Run:
    """run(root, script, sha=None, **limits) -> ExecReport."""

    def _run(root: Path, script: str, sha: str | None = None, **limits: Any) -> ExecReport:
        return run_exec(Git(root), script, sha=sha, limits=ExecLimits(**limits))

    return _run


def answer(report: ExecReport) -> Any:
    """The JSON a script printed, failing loudly on a non-zero exit."""
    import json

    assert report.exit_code == 0, report.stderr
    return json.loads(report.stdout)
